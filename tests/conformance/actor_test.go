package conformance

func init() { factories["actor"] = NewActor }
