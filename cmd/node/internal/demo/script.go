package demo

import "time"

// Script is what a demo container answers, as a function of the time since it started.
type Script struct {
	StartAfter time.Duration // /started answers 503 before this (the startup probe fails)
	UnreadyAt  time.Duration // /ready answers 503 from here ...
	UnreadyFor time.Duration // ... for this long (0: always ready once started)
	FailAt     time.Duration // /healthz 500 and gRPC NOT_SERVING from here on (0: never)
}

// State is the container's health at one instant.
type State struct {
	Started, Ready, Healthy bool
}

// At evaluates the script elapsed after start. failedBefore disables the liveness failure (the
// container already failed once in this demo run).
func (s Script) At(elapsed time.Duration, failedBefore bool) State {
	st := State{Started: elapsed >= s.StartAfter, Healthy: true}
	st.Ready = st.Started && !(s.UnreadyFor > 0 && elapsed >= s.UnreadyAt && elapsed < s.UnreadyAt+s.UnreadyFor)
	if s.FailAt > 0 && !failedBefore && elapsed >= s.FailAt {
		st.Healthy = false
		st.Ready = false
	}
	return st
}
