package clock

import (
	"math/rand/v2"
	"time"
)

// Clock is the source of time for everything in the actor core. Production code uses Real; tests use
// a *Fake and drive time by hand.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc arranges for f to run once d has elapsed and returns a Timer that can cancel it.
	// With Real, f runs on its own goroutine; with a *Fake, f runs synchronously inside Advance.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call from running. It reports whether the call was still pending: false means
	// it has already run, is running, or was stopped before.
	Stop() bool
}

// AfterFuncAt arranges for f to run on c at t (at once, or at a Fake's next Advance, when t has
// passed) and returns a Timer that can cancel it. Prefer it to AfterFunc(t.Sub(c.Now()), f) for a
// deadline: AfterFunc counts d from its own call, so a delay computed from an earlier reading fires
// late by whatever time passed in between. With the real clock that is the time between two
// statements; with a *Fake that another goroutine is advancing, it is however far Advance moved
// meanwhile (the whole of a 30 s Advance, for a goroutine descheduled between the two), so with a
// Fake the deadline is set under the Fake's own lock.
func AfterFuncAt(c Clock, t time.Time, f func()) Timer {
	if fk, ok := c.(*Fake); ok {
		return fk.afterFuncAt(t, f)
	}
	return c.AfterFunc(t.Sub(c.Now()), f)
}

// resetter is implemented by the timers of Real (*time.Timer) and Fake; the Scheduler uses it to
// re-arm its single timer without allocating a new one.
type resetter interface {
	Reset(d time.Duration) bool
}

// Real returns the wall clock backed by package time.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Rand returns a pseudo-random number in [0, 1). It is the injection point for jitter: production
// code passes DefaultRand, tests pass a constant or a scripted sequence.
type Rand func() float64

// DefaultRand returns a Rand backed by math/rand/v2's global, goroutine-safe source.
func DefaultRand() Rand { return rand.Float64 }

// Jitter returns r()*d: kubelet's restart jitter for a worker whose period is d
// (time.Duration(rand.Float64() * float64(period))). It returns 0 for d <= 0 or a nil r.
func Jitter(d time.Duration, r Rand) time.Duration {
	if d <= 0 || r == nil {
		return 0
	}
	return time.Duration(r() * float64(d))
}
