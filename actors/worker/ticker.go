package worker

import (
	"time"

	"github.com/probeactor/probeactor/actors/clock"
)

// Ticker is the timing of kubelet's worker run loop (spec §2.2) as a pure state machine:
//
//	sleep(jitter); ticker := NewTicker(period)
//	for doProbe() { select { stop | tick | manual trigger (ticker.Reset(period)) } }
//
// The shell arms one timer at the returned wake time, calls Fire when it goes off, Trigger for a
// manual readiness trigger, and Done when a run (doProbe: Begin, plus the attempt if one started)
// finished. A Step with Run asks the shell to run doProbe now.
//
// Rules: the first run happens at start+jitter and starts the period; a tick or trigger that
// arrives while a run is busy is remembered once (ticks coalesce, never a burst); a trigger runs
// now and restarts the period (PR #119089) and also absorbs a remembered tick.
type Ticker struct {
	period  time.Duration
	started bool
	next    time.Time // next periodic deadline (after the first run)
	busy    bool
	tick    bool // a tick arrived while busy
	trigger bool // a trigger arrived while busy or before the first run
}

// Step is a Ticker's answer. Wake is the time the shell's timer must go off next; the zero Wake
// means "keep the timer as it is".
type Step struct {
	Run  bool
	Wake time.Time
}

// NewTicker returns a Ticker with the given period (> 0).
func NewTicker(period time.Duration) *Ticker { return &Ticker{period: period} }

// Period returns the probe period.
func (t *Ticker) Period() time.Duration { return t.period }

// Busy reports whether a run is in progress.
func (t *Ticker) Busy() bool { return t.busy }

// Start returns the first wake: now+jitter.
func (t *Ticker) Start(now time.Time, jitter time.Duration) Step {
	if jitter < 0 {
		jitter = 0
	}
	return Step{Wake: now.Add(jitter)}
}

// Fire handles the shell's timer going off at now.
func (t *Ticker) Fire(now time.Time) Step {
	if !t.started {
		t.started = true
		t.next = now.Add(t.period)
		t.busy = true
		return Step{Run: true, Wake: t.next}
	}
	for !t.next.After(now) {
		t.next = t.next.Add(t.period)
	}
	if t.busy {
		t.tick = true
		return Step{Wake: t.next}
	}
	t.busy = true
	return Step{Run: true, Wake: t.next}
}

// Trigger handles a manual trigger at now.
func (t *Ticker) Trigger(now time.Time) Step {
	if !t.started || t.busy {
		t.trigger = true
		return Step{}
	}
	return t.runTriggered(now)
}

func (t *Ticker) runTriggered(now time.Time) Step {
	t.trigger, t.tick = false, false
	t.busy = true
	t.next = now.Add(t.period)
	return Step{Run: true, Wake: t.next}
}

// Done handles the end of a run at now.
func (t *Ticker) Done(now time.Time) Step {
	t.busy = false
	switch {
	case t.trigger:
		return t.runTriggered(now)
	case t.tick:
		t.tick = false
		t.busy = true
		return Step{Run: true}
	default:
		return Step{}
	}
}

// Jitter is kubelet's restart jitter rule: a worker created less than one period after the tree
// started waits rand*period before its first probe; later workers do not wait. rand returns a
// number in [0, 1); nil means no jitter.
func Jitter(now, treeStart time.Time, period time.Duration, rand func() float64) time.Duration {
	if now.Sub(treeStart) >= period {
		return 0
	}
	return clock.Jitter(period, rand)
}
