package actors

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"github.com/probeactor/probeactor/actors/worker"
	"github.com/probeactor/probeactor/probes"
)

// attemptSlot is a worker's reusable attempt: what one attempt needs (its number, target and
// cancellable context) and what it reports (verdict, duration or panic). A worker has at most one
// attempt in flight, so one slot per worker serves every attempt and a probe allocates nothing of
// its own.
//
// Hand-over: the worker fills the inputs and gives the slot to the attempt pool (a channel send:
// the attempt goroutine sees the inputs); the attempt goroutine records its report under mu, marks
// itself finished (wg) and posts attemptFinished to the worker's mailbox; the worker takes the report
// under mu (take) when it handles that message; its Machine ignores a report whose attempt is not
// the one in flight. A worker that abandons its attempt cancels ctx, waits (wg) and clears the
// report, so a stale report is never taken for a later attempt's.
type attemptSlot struct {
	w   *workerActor
	ctx attemptCtx
	wg  sync.WaitGroup

	// inputs, written by the worker before the hand-over
	num    uint32
	target probes.Target

	mu       sync.Mutex
	finished bool // a report is waiting to be taken
	report   attemptReport
}

type attemptReport struct {
	num      uint32
	verdict  worker.Verdict
	duration time.Duration
	panicked bool
	reason   any
	stack    []byte
}

// attemptFinished tells a worker that its slot holds a report. One value serves every worker.
type attemptFinished struct{}

var attemptFinishedMsg = &attemptFinished{}

// start sets up the attempt described by a and has it run: by the goroutine carrying the worker's
// mailbox right now, once it has released the mailbox (see workerMailbox.carry), or else on the
// attempt pool.
func (s *attemptSlot) start(a worker.AttemptStart) {
	w := s.w
	s.ctx.reset()
	s.num = a.Attempt
	s.target = probes.Target{Container: w.container, ContainerID: string(a.ContainerID), PodIP: a.PodIP}
	s.wg.Add(1)
	if w.mb.carrying {
		w.mb.carried = true
		return
	}
	w.env.cfg.exec.attempts.Go(s)
}

// run is the attempt handed to the attempt pool: it runs, then the worker handles its report on
// this goroutine if its mailbox is free.
func (s *attemptSlot) run() {
	if s.exec() {
		s.w.mb.carry(attemptFinishedMsg)
	}
}

// exec runs the attempt, records its report and reports whether the worker must be told (not when
// it abandoned the attempt: it may be gone).
func (s *attemptSlot) exec() bool {
	w := s.w
	e := w.env
	rep := attemptReport{num: s.num}
	func() {
		defer func() {
			if r := recover(); r != nil {
				rep.panicked, rep.reason, rep.stack = true, r, debug.Stack()
			}
		}()
		start := e.now()
		rep.verdict = worker.RunProbe(&s.ctx, e.cfg.prober, w.key.Type, w.spec, s.target)
		rep.duration = e.now().Sub(start)
	}()
	s.mu.Lock()
	s.finished, s.report = true, rep
	s.mu.Unlock()
	abandoned := s.ctx.Err() != nil // read before Done: after it the worker may reset ctx
	s.wg.Done()
	return !abandoned
}

// take returns the waiting report, if any, and clears the slot (so that an HTTP body is not kept
// alive at rest). The worker's Machine decides whether the report's attempt is still current.
func (s *attemptSlot) take() (attemptReport, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.finished {
		return attemptReport{}, false
	}
	rep := s.report
	s.finished, s.report = false, attemptReport{}
	return rep, true
}

// abandon cancels the attempt in flight, waits until its goroutine has finished and drops its
// report.
func (s *attemptSlot) abandon() {
	s.ctx.cancel()
	s.wg.Wait()
	s.mu.Lock()
	s.finished, s.report = false, attemptReport{}
	s.mu.Unlock()
}

// attemptCtx is the context.Context of a worker's attempts. It is reused from one attempt to the
// next (a context.WithCancel per attempt costs two allocations), cancelled only when the worker
// abandons its attempt, and made live again by reset before the next one. It has no deadline and
// no values. Children (the prober's context.WithTimeout) register through AfterFunc, so the
// context package starts no goroutine for them.
type attemptCtx struct {
	mu     sync.Mutex
	done   chan struct{} // made by the first Done; closed by cancel
	err    error
	afters []*afterFunc
}

type afterFunc struct{ f func() }

var _ context.Context = (*attemptCtx)(nil)

// Deadline implements context.Context: none (the prober applies the probe's timeout).
func (c *attemptCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done implements context.Context.
func (c *attemptCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

// Err implements context.Context.
func (c *attemptCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value implements context.Context: no values.
func (c *attemptCtx) Value(any) any { return nil }

// AfterFunc arranges for f to run in its own goroutine once c is cancelled (the context package's
// afterFuncer: context.WithCancel and friends use it for children of a foreign Context). stop
// reports whether it kept f from running.
func (c *attemptCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	c.afters = append(c.afters, a)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.afters {
			if x == a {
				last := len(c.afters) - 1
				c.afters[i] = c.afters[last]
				c.afters[last] = nil
				c.afters = c.afters[:last]
				return true
			}
		}
		return false
	}
}

func (c *attemptCtx) cancel() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.Canceled
	if c.done != nil {
		close(c.done)
	}
	fs := c.afters
	c.afters = nil
	c.mu.Unlock()
	for _, a := range fs {
		go a.f()
	}
}

// reset makes a cancelled context live again (a new done channel when one is asked for).
func (c *attemptCtx) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		c.err, c.done = nil, nil
	}
}
