package clock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultResolution is the deadline grid a Scheduler uses with any clock other than a *Fake: deadlines
// are rounded up to the next multiple of it (counted from the scheduler's creation), so entries due
// within the same millisecond fire together from one timer wake-up. Entries therefore fire up to
// DefaultResolution late, never early.
const DefaultResolution = time.Millisecond

// Handle identifies one scheduled entry for Cancel. The zero Handle is never valid. Handles are small
// values (8 bytes); a stale Handle (its entry fired or was cancelled) is safely rejected by Cancel.
type Handle struct {
	idx int32
	gen uint32
}

// SchedulerOption configures a Scheduler.
type SchedulerOption func(*Scheduler)

// WithResolution sets the deadline grid (see DefaultResolution). 0 means exact deadlines: one timer
// wake-up per distinct deadline. The default is DefaultResolution, or 0 when the clock is a *Fake so
// that tests see exact deadlines.
func WithResolution(d time.Duration) SchedulerOption {
	return func(s *Scheduler) {
		if d < 0 {
			d = 0
		}
		s.res = int64(d)
	}
}

// Scheduler runs many deadlines from one Clock timer. Entries live in a slab indexed by a binary
// min-heap (about 32 bytes per entry); no goroutine or timer exists per entry, and scheduling or
// cancelling is O(log n) with no allocation once the slab has grown to its peak size.
//
// When the timer fires, every entry that is due is removed under the lock and the callbacks run
// one after another, outside the lock, on the timer's goroutine (inside Advance with a *Fake).
// Callbacks must therefore be cheap and non-blocking (typically root.Send(pid, tick)); they may call
// At, After, Cancel and Stop.
//
// A Scheduler is safe for concurrent use.
type Scheduler struct {
	clock Clock
	base  time.Time // deadlines are stored as nanoseconds since base (monotonic with Real)
	res   int64

	stoppedFlag atomic.Bool // read per callback in a batch without the lock

	mu      sync.Mutex
	entries []entry
	free    []int32
	heap    []int32 // entry indices, min-heap on (when, seq)
	seq     uint32
	timer   Timer
	armed   bool
	armedAt int64
	firing  bool
	stopped bool
	batch   []func()
	changed chan struct{} // made by WaitLen, closed (and dropped) when an entry is added
}

type entry struct {
	when int64
	f    func()
	seq  uint32
	pos  int32 // index in heap, -1 when not pending
	gen  uint32
}

// NewScheduler returns a Scheduler driven by c.
func NewScheduler(c Clock, opts ...SchedulerOption) *Scheduler {
	s := &Scheduler{clock: c, base: c.Now(), res: int64(DefaultResolution)}
	if _, ok := c.(*Fake); ok {
		s.res = 0
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// After schedules f to run once d has elapsed on the scheduler's clock.
func (s *Scheduler) After(d time.Duration, f func()) Handle {
	return s.At(s.clock.Now().Add(d), f)
}

// At schedules f to run at t (or as soon as possible if t has passed). f must be cheap and
// non-blocking. After Stop, At does nothing and returns the zero Handle.
func (s *Scheduler) At(t time.Time, f func()) Handle {
	when := int64(t.Sub(s.base))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return Handle{}
	}
	idx := s.alloc()
	e := &s.entries[idx]
	e.when = when
	e.f = f
	s.seq++
	e.seq = s.seq
	s.push(idx)
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	if !s.firing {
		if at := s.grid(when); !s.armed || at < s.armedAt {
			s.arm(at)
		}
	}
	return Handle{idx: idx, gen: e.gen}
}

// Cancel removes a pending entry. It reports true only if the entry was pending; then its callback
// will never run. False means it already ran, is part of the batch running right now, was cancelled
// before, or h is the zero Handle.
func (s *Scheduler) Cancel(h Handle) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.gen == 0 || int(h.idx) >= len(s.entries) || h.idx < 0 {
		return false
	}
	e := &s.entries[h.idx]
	if e.gen != h.gen || e.pos < 0 {
		return false
	}
	s.remove(int(e.pos))
	s.release(h.idx)
	if len(s.heap) == 0 && s.armed && !s.firing {
		s.timer.Stop()
		s.armed = false
	}
	return true
}

// Len returns the number of pending entries.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.heap)
}

// WaitLen blocks until at least n entries are pending or ctx is done. Tests use it to wait, without
// sleeping, until actors have scheduled their next deadline before advancing a Fake clock (with a
// Scheduler the Fake only ever sees one pending timer, so Fake.WaitPending cannot tell).
func (s *Scheduler) WaitLen(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		if len(s.heap) >= n {
			s.mu.Unlock()
			return nil
		}
		if s.stopped {
			s.mu.Unlock()
			return errStopped
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

var errStopped = errors.New("scheduler stopped")

// Stop cancels every pending entry and the underlying timer; afterwards At and After are no-ops.
// A batch already running finishes the callback in progress and starts no other one. Stop leaves no
// goroutine behind and may be called more than once, including from a callback.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	s.stoppedFlag.Store(true)
	if s.timer != nil {
		s.timer.Stop()
	}
	s.armed = false
	s.entries = nil
	s.free = nil
	s.heap = nil
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// fire is the single timer's callback: it takes every due entry out of the heap, runs the batch
// outside the lock and re-arms the timer for the earliest remaining entry. A spurious or overlapping
// call (the timer was reset while a callback was already starting) is harmless: it finds nothing due,
// or finds a batch already running and returns.
func (s *Scheduler) fire() {
	s.mu.Lock()
	if s.stopped || s.firing {
		s.mu.Unlock()
		return
	}
	s.armed = false
	now := int64(s.clock.Now().Sub(s.base))
	batch := s.batch[:0]
	for len(s.heap) > 0 {
		idx := s.heap[0]
		e := &s.entries[idx]
		if e.when > now {
			break
		}
		batch = append(batch, e.f)
		s.remove(0)
		s.release(idx)
	}
	if len(batch) == 0 {
		s.rearmLocked()
		s.mu.Unlock()
		return
	}
	s.firing = true
	s.mu.Unlock()

	defer s.finish(batch)
	for _, f := range batch {
		if s.stoppedFlag.Load() {
			return
		}
		f()
	}
}

func (s *Scheduler) finish(batch []func()) {
	clear(batch)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batch = batch[:0]
	s.firing = false
	if !s.stopped {
		s.rearmLocked()
	}
}

func (s *Scheduler) rearmLocked() {
	if len(s.heap) == 0 {
		return
	}
	s.arm(s.grid(s.entries[s.heap[0]].when))
}

// grid rounds a deadline up to the resolution grid.
func (s *Scheduler) grid(when int64) int64 {
	if s.res <= 1 {
		return when
	}
	r := when % s.res
	if r == 0 {
		return when
	}
	if r < 0 {
		return when - r
	}
	return when - r + s.res
}

func (s *Scheduler) arm(at int64) {
	d := time.Duration(at - int64(s.clock.Now().Sub(s.base)))
	switch {
	case s.timer == nil:
		s.timer = s.clock.AfterFunc(d, s.fire)
	default:
		if r, ok := s.timer.(resetter); ok {
			r.Reset(d)
		} else {
			s.timer.Stop()
			s.timer = s.clock.AfterFunc(d, s.fire)
		}
	}
	s.armed = true
	s.armedAt = at
}

func (s *Scheduler) alloc() int32 {
	if n := len(s.free); n > 0 {
		idx := s.free[n-1]
		s.free = s.free[:n-1]
		return idx
	}
	s.entries = append(s.entries, entry{gen: 1, pos: -1})
	return int32(len(s.entries) - 1)
}

func (s *Scheduler) release(idx int32) {
	e := &s.entries[idx]
	e.f = nil
	e.pos = -1
	e.gen++
	if e.gen == 0 {
		e.gen = 1
	}
	s.free = append(s.free, idx)
}

// less orders by deadline, then by scheduling order (wrap-safe) so equal deadlines fire FIFO.
func (s *Scheduler) less(a, b int32) bool {
	ea, eb := &s.entries[a], &s.entries[b]
	if ea.when != eb.when {
		return ea.when < eb.when
	}
	return int32(ea.seq-eb.seq) < 0
}

func (s *Scheduler) swap(i, j int) {
	h := s.heap
	h[i], h[j] = h[j], h[i]
	s.entries[h[i]].pos = int32(i)
	s.entries[h[j]].pos = int32(j)
}

func (s *Scheduler) push(idx int32) {
	s.heap = append(s.heap, idx)
	i := len(s.heap) - 1
	s.entries[idx].pos = int32(i)
	s.up(i)
}

// remove deletes the heap element at position i.
func (s *Scheduler) remove(i int) {
	n := len(s.heap) - 1
	if i != n {
		s.swap(i, n)
	}
	s.entries[s.heap[n]].pos = -1
	s.heap = s.heap[:n]
	if i != n {
		if !s.down(i) {
			s.up(i)
		}
	}
}

func (s *Scheduler) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(s.heap[i], s.heap[p]) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *Scheduler) down(i0 int) bool {
	i, n := i0, len(s.heap)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && s.less(s.heap[r], s.heap[l]) {
			j = r
		}
		if !s.less(s.heap[j], s.heap[i]) {
			break
		}
		s.swap(i, j)
		i = j
	}
	return i > i0
}
