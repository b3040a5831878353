package actors

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"github.com/probeactor/probeactor/actors/internal/worker"
	"github.com/probeactor/probeactor/probes"
)

// attemptSlot is what one attempt needs (its number, target and cancellable context) and what it
// reports (verdict and when it ended, or a panic). A worker holds a slot only while it has an attempt in
// flight; slots are pooled, so a probe allocates nothing and a worker at rest holds none.
//
// Hand-over: the worker fills the inputs and gives the slot to the goroutine that runs the attempt
// (a channel send, or the carrying goroutine itself: either way it sees the inputs); that goroutine
// records its report under mu, marks itself finished (wg) and notifies the worker, which takes the
// report under mu (take) and releases the slot. Its Machine ignores a report whose attempt is not
// the one in flight. A worker that abandons its attempt cancels ctx, waits (wg) and releases the
// slot without reading it. After wg.Done the attempt goroutine touches only its own copy of the
// worker pointer, never the slot, which may already serve another worker.
type attemptSlot struct {
	w   *workerActor
	ctx *attemptCtx // replaced, never revived, once cancelled (see attemptCtx)
	wg  sync.WaitGroup

	// inputs, written by the worker before the hand-over
	num    uint32
	target probes.Target
	start  time.Time // when the doProbe run that started the attempt began

	mu       sync.Mutex
	finished bool // a report is waiting to be taken
	report   attemptReport
}

type attemptReport struct {
	num      uint32
	verdict  worker.Verdict
	end      time.Time // the clock read when the attempt ended: the worker handles it as of then
	duration time.Duration
	panicked bool
	reason   any
	stack    []byte
}

// Slots are pooled per tree (executors.slots), not process-wide: a slot's context keeps its done
// channel from one attempt to the next, and a channel must not cross from one tree to another (two
// trees in two synctest bubbles, or one tree's slot alive in another's pool after Stop).

// attemptFinished tells a worker that its slot holds a report. One value serves every worker.
type attemptFinished struct{}

var attemptFinishedMsg = &attemptFinished{}

// startAttempt takes a slot, sets up the attempt described by a and has it run: by the goroutine
// carrying the worker's mailbox right now, once it has released the mailbox (see
// workerMailbox.carry), or else on the attempt pool.
func (w *workerActor) startAttempt(a worker.AttemptStart) {
	s := w.env.cfg.exec.slots.Get().(*attemptSlot)
	w.att = s
	s.w = w
	s.num = a.Attempt
	s.start = a.At
	s.target = probes.Target{Container: w.container, ContainerID: string(a.ContainerID), PodIP: a.PodIP}
	s.wg.Add(1)
	if w.mb.carrying {
		w.mb.carried = s
		return
	}
	w.env.cfg.exec.attempts.Go(s)
}

// run is the attempt handed to the attempt pool: it runs, then the worker handles its report on
// this goroutine if its mailbox is free.
func (s *attemptSlot) run() {
	if w, tell := s.exec(); tell {
		w.mb.carry(attemptFinishedMsg)
	}
}

// exec runs the attempt and records its report. It returns the worker and whether to tell it (not
// when it abandoned the attempt: it may be gone).
func (s *attemptSlot) exec() (*workerActor, bool) {
	w := s.w
	e := w.env
	rep := attemptReport{num: s.num}
	func() {
		defer func() {
			if r := recover(); r != nil {
				rep.panicked, rep.reason, rep.stack = true, r, debug.Stack()
			}
		}()
		rep.verdict = worker.RunProbe(s.ctx, e.cfg.prober, w.typ, w.spec(), s.target)
	}()
	// The one clock read of an attempt (its start is when the worker's run began): at 100,000
	// probes/s each time.Now cost ~3 % of the actor core's CPU.
	rep.end = e.now()
	rep.duration = rep.end.Sub(s.start)
	s.mu.Lock()
	s.finished, s.report = true, rep
	s.mu.Unlock()
	abandoned := s.ctx.Err() != nil // read before Done: after it the slot may serve another attempt
	s.wg.Done()
	return w, !abandoned
}

// finishedReport reports whether the attempt has finished and recorded its report (which the
// worker may then read in place); false while it is still running. After true, the attempt
// goroutine no longer touches the slot.
func (s *attemptSlot) finishedReport() bool {
	s.mu.Lock()
	ok := s.finished
	s.mu.Unlock()
	if ok {
		s.wg.Wait() // the attempt goroutine is between recording the report and Done
	}
	return ok
}

// abandonAttempt cancels the attempt in flight, waits until its goroutine has finished and
// releases the slot without reading the report.
func (w *workerActor) abandonAttempt() {
	if s := w.att; s != nil {
		s.ctx.cancel()
		s.wg.Wait()
		w.releaseSlot()
	}
}

// releaseSlot returns the worker's slot to the pool.
func (w *workerActor) releaseSlot() {
	s := w.att
	w.att = nil
	w.env.cfg.exec.releaseSlot(s)
}

// releaseSlot returns s to the tree's pool of slots.
func (x *executors) releaseSlot(s *attemptSlot) {
	s.mu.Lock()
	s.finished, s.report = false, attemptReport{} // keep no verdict (an HTTP body) alive in the pool
	s.mu.Unlock()
	s.w, s.target = nil, probes.Target{}
	if s.ctx.Err() != nil {
		s.ctx = new(attemptCtx) // the cancelled one stays cancelled for whoever still watches it
	}
	x.slots.Put(s)
}

// attemptCtx is the context.Context of an attempt. It lives in a pooled slot and is reused from one
// attempt to the next while it is live (a context.WithCancel per attempt costs two allocations); it
// is cancelled only when a worker abandons its attempt, and a cancelled one is never made live
// again: the slot gets a new one. Children derived through a wrapper (probes/exec.go's
// context.WithTimeout(context.WithValue(ctx, …))) are watched by a goroutine of the context package
// that selects on this context's done channel and then reads Err: a context made live again after
// a cancel handed it nil, and the context package panics on that ("missing cancel error": it
// crashed node in a soak under load). It has no deadline and no values. Children derived directly
// (the prober's context.WithTimeout) register through AfterFunc, so the context package starts no
// goroutine for them.
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

// AfterFunc arranges for f to run once c is cancelled (the context package's afterFuncer:
// context.WithCancel and friends register their child's cancel through it, and f reads c.Err()).
// stop reports whether it kept f from running. Registered callbacks run when cancel runs; for an
// already cancelled context f runs in a goroutine of its own (the context package calls AfterFunc
// holding the child's lock, which f takes); c stays cancelled, so f sees its error.
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
	for _, a := range fs { // the context package's child cancellations: quick, and they read c.Err()
		a.f()
	}
}
