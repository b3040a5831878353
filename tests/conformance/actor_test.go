package conformance

func init() {
	factories["actor"] = NewActor
	// The same actor core with its workers spread over three executor shards (each a scheduler and
	// pools of its own): a 2-proc machine's default is one, and the scenarios must not depend on it.
	factories["actor-3-shards"] = func(env Env) (Driver, error) {
		env.Shards = 3
		return NewActor(env)
	}
}
