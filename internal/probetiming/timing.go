package probetiming

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// Timing is a probe's timing fields as durations and counts (the API's defaults applied).
type Timing struct {
	Delay   time.Duration // initialDelaySeconds
	Period  time.Duration // periodSeconds
	Timeout time.Duration // timeoutSeconds
	Success int32         // successThreshold
	Failure int32         // failureThreshold
}

// Of returns p's timing. Values the API would refuse are read as the closest allowed one (a
// negative delay as 0, a period, timeout or threshold below 1 as 1), so nothing here divides by
// zero or counts backwards; validation reports them.
func Of(p *v1.Probe) Timing {
	sec := func(v, least int32) time.Duration { return time.Duration(max(v, least)) * time.Second }
	return Timing{
		Delay:   sec(p.InitialDelaySeconds, 0),
		Period:  sec(p.PeriodSeconds, 1),
		Timeout: sec(p.TimeoutSeconds, 1),
		Success: max(p.SuccessThreshold, 1),
		Failure: max(p.FailureThreshold, 1),
	}
}

// Interval is the longest time between the starts of two consecutive attempts: one period, or one
// timeout when an attempt can outlast the period (the missed tick then runs as soon as it ends).
func (t Timing) Interval() time.Duration { return max(t.Period, t.Timeout) }

// Window is when something can happen, measured from a stated moment: at the earliest and, as a
// supremum, at the latest.
type Window struct {
	Earliest time.Duration
	Latest   time.Duration
}

// attempts is when the n-th of n consecutive attempts ends, measured from the moment the first one
// may start: at the earliest a tick falls right there and every attempt answers at once, n-1
// periods later; at the latest the first tick comes a whole period later, the others follow at
// the longest interval, and the last takes its whole timeout.
func (t Timing) attempts(n int32) Window {
	n = max(n, 1)
	return Window{
		Earliest: time.Duration(n-1) * t.Period,
		Latest:   t.Period + time.Duration(n-1)*t.Interval() + t.Timeout,
	}
}

func (w Window) shift(d time.Duration) Window {
	return Window{Earliest: w.Earliest + d, Latest: w.Latest + d}
}

// FailureWindow is when the probe reaches its failure threshold after its target starts failing
// for good (every attempt from then on fails), the container running and started: a liveness
// probe kills it then, a readiness probe marks it not ready. Earliest (F-1)·P, latest
// P + (F-1)·max(P,T) + T.
func (t Timing) FailureWindow() Window { return t.attempts(t.Failure) }

// StartWindow is when a probe that fails from the start reaches its failure threshold, measured
// from the container's start: the time a startup probe (or a liveness probe without one) gives
// the application to start before the container is killed. Its Earliest is the budget an
// application can count on. The first attempt comes at the first tick once D has passed.
func (t Timing) StartWindow() Window { return t.attempts(t.Failure).shift(t.Delay) }

// StartedWindow is when a container whose application is healthy from the start has started,
// measured from its start: at once without a startup probe (nil), else when the startup probe
// first reaches its success threshold.
func StartedWindow(startup *Timing) Window {
	if startup == nil {
		return Window{}
	}
	return startup.attempts(startup.Success).shift(startup.Delay)
}

// ReadyWindow is when a container whose application is healthy from the start becomes Ready under
// the readiness probe r, measured from its start; startup is its startup probe (nil: none). jitter
// says whether the readiness worker may still be in kubelet's start-up jitter (the node started
// less than one period before the container).
//
// The earliest is the first tick at which both the delay has passed and the container has
// started, plus S-1 periods. The latest takes the worst of what can happen:
//   - it starts at s once the delay has passed: the status manager's manual trigger probes at
//     once and restarts the period, so Ready comes S-1 intervals and one timeout after s;
//   - it starts before the delay has passed: the first tick after the delay comes up to a period
//     later (a trigger meanwhile only restarts the period), then as above;
//   - jitter: a worker that has not had its first run yet only remembers the trigger, and that run
//     comes up to a period after the node started.
func ReadyWindow(startup *Timing, r Timing, jitter bool) Window {
	s := StartedWindow(startup)
	rest := time.Duration(r.Success-1)*r.Interval() + r.Timeout
	w := Window{Earliest: max(s.Earliest, r.Delay) + time.Duration(r.Success-1)*r.Period}
	if s.Latest >= r.Delay { // a start after the delay: probed at once
		w.Latest = max(w.Latest, s.Latest+rest)
	}
	if s.Earliest < r.Delay { // a start before the delay: the first tick after it
		w.Latest = max(w.Latest, r.Delay+r.Period+rest)
	}
	if jitter && s.Earliest < r.Period { // the worker's first run is up to a period away
		w.Latest = max(w.Latest, r.Period+rest)
	}
	return w
}
