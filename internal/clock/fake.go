package clock

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Fake is a deterministic Clock for tests. Time moves only when Advance (or Set) is called; due
// callbacks run synchronously inside Advance, on the caller's goroutine, in deadline order (ties in
// the order they were scheduled). A Fake is safe for concurrent use: actors may call AfterFunc and
// Stop from their own goroutines while a test calls Advance.
type Fake struct {
	advanceMu sync.Mutex // serialises Advance/Set so callbacks never run concurrently

	mu      sync.Mutex
	now     time.Time
	timers  fakeHeap
	seq     uint64
	changed chan struct{} // made by WaitPending, closed (and dropped) when the pending timers change
}

var _ Clock = (*Fake)(nil)

// NewFake returns a Fake whose current time is start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start}
}

// Now returns the fake current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// AfterFunc schedules fn at Now()+d. A d <= 0 makes fn due immediately: it runs at the next Advance,
// including Advance(0).
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	t := &fakeTimer{clock: f, fn: fn, index: -1}
	t.reset(time.Time{}, d)
	return t
}

// afterFuncAt schedules fn at when (AfterFuncAt).
func (f *Fake) afterFuncAt(when time.Time, fn func()) *fakeTimer {
	t := &fakeTimer{clock: f, fn: fn, index: -1}
	t.resetAt(when)
	return t
}

// Pending returns the number of scheduled, not yet run, not stopped callbacks.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// Next returns the deadline of the earliest pending callback, and false if there is none.
func (f *Fake) Next() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.timers) == 0 {
		return time.Time{}, false
	}
	return f.timers[0].when, true
}

// Advance moves time forward by d, running every callback that falls due on the way, in deadline
// order; while a callback runs, Now() returns its deadline. Callbacks scheduled by callbacks during
// the advance run too if they fall due within it. Afterwards Now() is the old time plus d.
// A negative d is treated as 0.
func (f *Fake) Advance(d time.Duration) {
	if d < 0 {
		d = 0
	}
	f.advanceMu.Lock()
	defer f.advanceMu.Unlock()
	f.mu.Lock()
	target := f.now.Add(d)
	f.mu.Unlock()
	f.runUntil(target)
}

// Set moves time to t (never backwards: an earlier t is ignored, apart from running due callbacks),
// running due callbacks as Advance does.
func (f *Fake) Set(t time.Time) {
	f.advanceMu.Lock()
	defer f.advanceMu.Unlock()
	f.mu.Lock()
	if t.Before(f.now) {
		t = f.now
	}
	f.mu.Unlock()
	f.runUntil(t)
}

// AdvanceToNext moves time to the earliest pending deadline and runs the callbacks due then. It
// returns false, leaving time unchanged, when nothing is pending.
func (f *Fake) AdvanceToNext() bool {
	next, ok := f.Next()
	if !ok {
		return false
	}
	f.Set(next)
	return true
}

func (f *Fake) runUntil(target time.Time) {
	for {
		f.mu.Lock()
		if len(f.timers) == 0 || f.timers[0].when.After(target) {
			f.now = target
			f.mu.Unlock()
			return
		}
		t := heap.Pop(&f.timers).(*fakeTimer)
		if t.when.After(f.now) {
			f.now = t.when
		}
		f.notifyLocked()
		fn := t.fn
		f.mu.Unlock()
		fn()
	}
}

// WaitPending blocks until at least n callbacks are pending or ctx is done. Tests use it to wait,
// without sleeping, until an actor has armed its timers before advancing the clock.
func (f *Fake) WaitPending(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		if len(f.timers) >= n {
			f.mu.Unlock()
			return nil
		}
		if f.changed == nil {
			f.changed = make(chan struct{})
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *Fake) scheduleLocked(t *fakeTimer, d time.Duration) {
	if d < 0 {
		d = 0
	}
	t.when = f.now.Add(d)
	f.seq++
	t.seq = f.seq
	heap.Push(&f.timers, t)
	f.notifyLocked()
}

func (f *Fake) notifyLocked() {
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

type fakeTimer struct {
	clock *Fake
	fn    func()
	when  time.Time
	seq   uint64
	index int // position in the heap, -1 when not pending
}

// Stop cancels the callback; it reports whether it was pending.
func (t *fakeTimer) Stop() bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&f.timers, t.index)
	f.notifyLocked()
	return true
}

// Reset re-schedules the callback at Now()+d, whether or not it was pending, and reports whether it
// was pending (like (*time.Timer).Reset).
func (t *fakeTimer) Reset(d time.Duration) bool { return t.reset(time.Time{}, d) }

// resetAt re-schedules the callback at when (AfterFuncAt).
func (t *fakeTimer) resetAt(when time.Time) { t.reset(when, 0) }

// reset (re-)schedules the callback at when, or d after Now() when when is zero, and reports
// whether it was pending. The delay to when is taken under the lock that Advance moves time under,
// so a concurrent Advance cannot make it late.
func (t *fakeTimer) reset(when time.Time, d time.Duration) bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	was := t.index >= 0
	if was {
		heap.Remove(&f.timers, t.index)
	}
	if !when.IsZero() {
		d = when.Sub(f.now)
	}
	f.scheduleLocked(t, d)
	return was
}

type fakeHeap []*fakeTimer

func (h fakeHeap) Len() int { return len(h) }
func (h fakeHeap) Less(i, j int) bool {
	if !h[i].when.Equal(h[j].when) {
		return h[i].when.Before(h[j].when)
	}
	return h[i].seq < h[j].seq
}
func (h fakeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *fakeHeap) Push(x any) {
	t := x.(*fakeTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *fakeHeap) Pop() any {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	t.index = -1
	*h = old[:n-1]
	return t
}
