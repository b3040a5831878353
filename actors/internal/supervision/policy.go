package supervision

import (
	"errors"
	"fmt"
	"time"
)

// Policy is an exponential back-off with give-up for restarting a failed child.
//
// The n-th consecutive restart (n = 0, 1, 2, …) waits min(Initial × Multiplierⁿ, Max), reduced by up to
// Jitter × that delay at random, so Max stays a hard cap and no delay is below (1-Jitter) × its base.
// A child that ran for ResetAfter without failing starts again from Initial. When a failure makes
// MaxFailures failures within the last Window, the child is given up on instead of restarted.
type Policy struct {
	// Initial is the delay before the first restart. Must be > 0.
	Initial time.Duration
	// Max caps every delay. Must be >= Initial.
	Max time.Duration
	// Multiplier grows the delay after each consecutive failure. Must be >= 1; 0 means 2.
	Multiplier float64
	// Jitter is the fraction (0..1) of a delay that may be removed at random to spread restarts.
	Jitter float64
	// ResetAfter is how long a restarted child must run without failing for the back-off to start
	// again from Initial. 0 means never reset.
	ResetAfter time.Duration
	// MaxFailures is how many failures within Window make the supervisor give up. 0 means never.
	MaxFailures int
	// Window is the sliding window MaxFailures is counted in. 0 means failures are never forgotten.
	Window time.Duration
}

// DefaultPolicy is the policy for probe workers: 0.5 s, 1 s, 2 s, … capped at 30 s, 20% jitter, reset
// after one stable minute, give up after 10 failures in 5 minutes.
func DefaultPolicy() Policy {
	return Policy{
		Initial:     500 * time.Millisecond,
		Max:         30 * time.Second,
		Multiplier:  2,
		Jitter:      0.2,
		ResetAfter:  time.Minute,
		MaxFailures: 10,
		Window:      5 * time.Minute,
	}
}

// Validate reports every invalid field, naming it.
func (p Policy) Validate() error {
	var errs []error
	if p.Initial <= 0 {
		errs = append(errs, fmt.Errorf("policy.Initial must be > 0, got %v", p.Initial))
	}
	if p.Max < p.Initial {
		errs = append(errs, fmt.Errorf("policy.Max (%v) must be >= policy.Initial (%v)", p.Max, p.Initial))
	}
	if p.Multiplier != 0 && p.Multiplier < 1 {
		errs = append(errs, fmt.Errorf("policy.Multiplier must be >= 1 (or 0 for 2), got %v", p.Multiplier))
	}
	if p.Jitter < 0 || p.Jitter > 1 {
		errs = append(errs, fmt.Errorf("policy.Jitter must be within [0, 1], got %v", p.Jitter))
	}
	if p.ResetAfter < 0 {
		errs = append(errs, fmt.Errorf("policy.ResetAfter must be >= 0, got %v", p.ResetAfter))
	}
	if p.MaxFailures < 0 {
		errs = append(errs, fmt.Errorf("policy.MaxFailures must be >= 0, got %d", p.MaxFailures))
	}
	if p.Window < 0 {
		errs = append(errs, fmt.Errorf("policy.Window must be >= 0, got %v", p.Window))
	}
	return errors.Join(errs...)
}

func (p Policy) multiplier() float64 {
	if p.Multiplier == 0 {
		return 2
	}
	return p.Multiplier
}

// Tracker is the back-off state of one child. It is a pure decision core: time and randomness come in
// as arguments. The zero Tracker is not usable; use NewTracker. Not safe for concurrent use.
type Tracker struct {
	policy      Policy
	attempt     int         // consecutive restarts since the last reset
	restartedAt time.Time   // when the last scheduled restart happens (failure + delay)
	failures    []time.Time // the most recent failures, at most MaxFailures of them, oldest first
}

// NewTracker returns a Tracker for p. p should have passed Validate.
func NewTracker(p Policy) *Tracker { return &Tracker{policy: p} }

// Attempt returns the number of consecutive restarts since the last reset.
func (t *Tracker) Attempt() int { return t.attempt }

// Failure records a failure at now and decides: restart after delay, or give up. rnd is a random
// number in [0, 1) used for jitter (0 means no jitter).
func (t *Tracker) Failure(now time.Time, rnd float64) (delay time.Duration, giveUp bool) {
	p := t.policy
	rnd = max(0, min(rnd, 1))
	if t.attempt > 0 && p.ResetAfter > 0 && now.Sub(t.restartedAt) >= p.ResetAfter {
		t.attempt = 0
	}

	if p.MaxFailures > 0 {
		drop := 0 // failures are oldest first: drop the prefix that left the window
		if p.Window > 0 {
			for drop < len(t.failures) && now.Sub(t.failures[drop]) >= p.Window {
				drop++
			}
		}
		if len(t.failures)-drop == p.MaxFailures {
			drop++
		}
		if drop > 0 {
			n := copy(t.failures, t.failures[drop:])
			t.failures = t.failures[:n]
		}
		t.failures = append(t.failures, now)
		if len(t.failures) >= p.MaxFailures {
			return 0, true
		}
	}

	base := float64(p.Initial)
	for i := 0; i < t.attempt && base < float64(p.Max); i++ {
		base *= p.multiplier()
	}
	base = min(base, float64(p.Max))
	delay = time.Duration(base * (1 - p.Jitter*rnd))
	t.attempt++
	t.restartedAt = now.Add(delay)
	return delay, false
}
