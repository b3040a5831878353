package actors

import (
	"runtime/debug"
	"sync"
	"time"

	"github.com/probeactor/probeactor/actors/internal/exec"
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
	ctx *exec.Context // replaced, never revived, once cancelled (see exec.Context)
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

// slotPool pools one tree's attempt slots (env.slots), not process-wide: a slot's context keeps its
// done channel from one attempt to the next, and a channel must not cross from one tree to another
// (two trees in two synctest bubbles, or one tree's slot alive in another's pool after Stop).
type slotPool struct{ p sync.Pool }

func newSlotPool() *slotPool {
	return &slotPool{p: sync.Pool{New: func() any { return &attemptSlot{ctx: new(exec.Context)} }}}
}

func (p *slotPool) get() *attemptSlot { return p.p.Get().(*attemptSlot) }

// attemptFinished tells a worker that its slot holds a report. One value serves every worker.
type attemptFinished struct{}

var attemptFinishedMsg = &attemptFinished{}

// startAttempt takes a slot, sets up the attempt described by a and has it run: by the goroutine
// carrying the worker's mailbox right now, once it has released the mailbox (exec.Mailbox.HandOff),
// or else on the shard's attempt pool.
func (w *workerActor) startAttempt(a worker.AttemptStart) {
	s := w.env.slots.get()
	w.att = s
	s.w = w
	s.num = a.Attempt
	s.start = a.At
	s.target = probes.Target{Container: w.m.Container(), ContainerID: string(a.ContainerID), PodIP: a.PodIP}
	s.wg.Add(1)
	if !w.mb.HandOff(s) {
		w.shard.Go(s)
	}
}

// Run is the attempt handed to the attempt pool: it runs, then the worker handles its report on
// this goroutine if its mailbox is free.
func (s *attemptSlot) Run() {
	if w, tell := s.exec(); tell {
		w.mb.Carry(attemptFinishedMsg)
	}
}

// RunCarried is the attempt run by the goroutine that carried the worker's mailbox (exec.Carried).
func (s *attemptSlot) RunCarried() any {
	if _, tell := s.exec(); tell {
		return attemptFinishedMsg
	}
	return nil
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
		rep.verdict = worker.RunProbe(s.ctx, e.cfg.prober, w.m.Type(), w.spec(), s.target)
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
		s.ctx.Cancel()
		s.wg.Wait()
		w.releaseSlot()
	}
}

// releaseSlot returns the worker's slot to the pool.
func (w *workerActor) releaseSlot() {
	s := w.att
	w.att = nil
	w.env.slots.release(s)
}

// release returns s to the tree's pool of slots.
func (p *slotPool) release(s *attemptSlot) {
	s.mu.Lock()
	s.finished, s.report = false, attemptReport{} // keep no verdict (an HTTP body) alive in the pool
	s.mu.Unlock()
	s.w, s.target = nil, probes.Target{}
	if s.ctx.Err() != nil {
		s.ctx = new(exec.Context) // the cancelled one stays cancelled for whoever still watches it
	}
	p.p.Put(s)
}
