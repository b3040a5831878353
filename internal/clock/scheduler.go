package clock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultResolution is the deadline grid a Scheduler uses with any clock other than a *Fake: its
// timer is armed for multiples of it (counted from the scheduler's creation), so entries due within
// the same millisecond fire together from one timer wake-up; a wake-up between two grid points (the
// real clock's ticker has a phase of its own) also fires the entries whose deadlines have passed.
// Entries therefore fire up to DefaultResolution late, never early.
const DefaultResolution = time.Millisecond

// Handle identifies one scheduled entry for Cancel. The zero Handle is never valid. Handles are small
// values (8 bytes); a stale Handle (its entry fired or was cancelled) is safely rejected by Cancel.
type Handle struct {
	idx int32
	gen uint32
}

// Callback is what a scheduler entry runs when it fires.
type Callback interface{ Fire() }

// Func is a function as a Callback.
type Func func()

// Fire calls f.
func (f Func) Fire() { f() }

// SchedulerOption configures a Scheduler.
type SchedulerOption func(*Scheduler)

// WithDispatch makes the scheduler hand each due callback to d, on its firing goroutine and
// outside its lock, instead of calling its Fire: the owner of many callbacks can run them
// elsewhere (another goroutine) without the firing goroutine reading them. d must be cheap and
// must not block; it may call Fire itself.
func WithDispatch(d func(Callback)) SchedulerOption {
	return func(s *Scheduler) { s.dispatch = d }
}

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

// Scheduler runs many deadlines from one Clock timer. Entries live in a slab (48 bytes each); no
// goroutine or timer exists per entry, and nothing is allocated once the slab has grown to its
// peak size. With a resolution (the real clock's default) the entries due within the wheel's span
// (16.4 s at 1 ms) wait in a timing wheel, one list per grid point, where scheduling, rescheduling,
// cancelling and firing are O(1); the ones due later, and every entry without a resolution (a
// Fake's exact deadlines), wait in a 4-ary min-heap of (deadline, sequence, slab index) items,
// O(log n), and move into the wheel when its span reaches them (wheel.go).
//
// When the timer fires, the entries that are due are removed under the lock, a chunk at a time, and
// the callbacks run one after another, outside the lock, on the timer's goroutine (inside Advance
// with a *Fake).
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
	heap    []item // min-heap on (when, seq): every entry without a wheel, the far ones with one
	wheel   *wheel // the near entries when the scheduler has a resolution (nil: exact deadlines)
	n       int    // pending entries, wheel and heap
	seq     uint32
	timer   Timer
	armed   bool
	armedAt int64
	firing  bool
	stopped bool
	batch   []Callback
	changed chan struct{} // made by WaitLen, closed (and dropped) when an entry is added

	loop *loop // with the real clock: the goroutine that fires, and its runtime timers

	wheelSlots int            // the wheel's size (wheelSlots; tests make it small, 0 = no wheel)
	pace       func() bool    // WithPace
	dispatch   func(Callback) // WithDispatch
}

// loop is how a Scheduler on the real clock waits: one long-lived goroutine (started with the first
// entry, ended by Stop) receives from a channel timer armed for the next deadline, or, while the
// schedule is dense (the next deadline is within denseSpan of the last batch), from a runtime
// ticker at the resolution. A ticker is re-armed inside the runtime; re-arming a timer for a nearer
// deadline from a goroutine wakes the network poller (a write and a read system call) and, with
// AfterFunc, starts a goroutine: per batch, that is most of the Scheduler's cost when thousands of
// entries fall due every second.
type loop struct {
	timer   *time.Timer
	ticker  *time.Ticker // made once; runs while dense
	dense   bool
	empty   int // wake-ups in a row that found nothing due
	started bool
	stop    chan struct{}
	done    chan struct{}
}

// The loop turns dense when the next deadline is within denseSpan resolution steps of a batch, and
// sparse again after sparseAfter wake-ups in a row found nothing due (or the next deadline is more
// than sparseSpan steps away): between the two it keeps its mode, so a schedule with a deadline
// every millisecond or two does not flip between ticker and timer on every batch.
const (
	denseSpan   = 2
	sparseSpan  = 50
	sparseAfter = 4
)

type entry struct {
	f    Callback
	when int64 // the deadline, nanoseconds since base (not rounded to the grid)
	pos  int32 // index in heap, -1 when not there
	gen  uint32
	slot int32 // wheel slot index (overdue for the overdue list), -1 when not in the wheel
	next int32 // the slot's list: the next entry (-1 at the tail)
	prev int32 // the slot's list: the previous entry (the tail, for the head)
}

// pending reports whether e is scheduled (in the heap or in the wheel).
func (e *entry) pending() bool { return e.pos >= 0 || e.slot >= 0 }

// item is an entry's place in the heap: its deadline (on the grid, when the scheduler has one) and
// scheduling order inline, so that sifting does not chase slab indices.
type item struct {
	when int64
	seq  uint32
	idx  int32
}

// NewScheduler returns a Scheduler driven by c.
func NewScheduler(c Clock, opts ...SchedulerOption) *Scheduler {
	s := &Scheduler{clock: c, base: c.Now(), res: int64(DefaultResolution)}
	if _, ok := c.(*Fake); ok {
		s.res = 0
	}
	s.wheelSlots = wheelSlots
	for _, o := range opts {
		o(s)
	}
	if s.res > 0 && s.wheelSlots > 0 {
		s.wheel = newWheel(s.wheelSlots)
	}
	if _, ok := c.(realClock); ok && s.res > 0 {
		s.loop = &loop{stop: make(chan struct{}), done: make(chan struct{})}
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
	return s.atLocked(when, Func(f))
}

func (s *Scheduler) atLocked(when int64, f Callback) Handle {
	idx := s.alloc()
	e := &s.entries[idx]
	e.f = f
	s.insert(idx, when)
	s.n++
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return Handle{idx: idx, gen: e.gen}
}

// insert schedules entry idx (not pending) at when, nanoseconds since base, last among the entries
// due at the same grid point, and arms the timer for it: into the wheel when its grid point is
// within the wheel's span (the overdue list when that point has been fired already), else the heap.
func (s *Scheduler) insert(idx int32, when int64) {
	at := s.grid(when)
	s.entries[idx].when = when
	s.seq++
	if s.near(at) {
		s.wheel.add(s.entries, idx, at/s.res)
	} else {
		s.push(item{when: at, seq: s.seq, idx: idx})
	}
	s.armFor(at)
}

// near reports whether grid point at (nanoseconds since base) belongs in the wheel: there is one,
// and at is before the end of its span.
func (s *Scheduler) near(at int64) bool {
	return s.wheel != nil && at/s.res < s.wheel.end()
}

// unlink takes pending entry idx out of the heap or the wheel (it stays allocated).
func (s *Scheduler) unlink(idx int32) {
	if e := &s.entries[idx]; e.pos >= 0 {
		s.remove(int(e.pos))
	} else {
		s.wheel.unlink(s.entries, idx)
	}
}

// armFor makes sure the clock timer goes off by when (not while a batch runs: fire re-arms at its end).
func (s *Scheduler) armFor(when int64) {
	if !s.firing {
		if at := s.grid(when); !s.armed || at < s.armedAt {
			s.arm(at)
		}
	}
}

// WithPace makes the scheduler ask pace, before each chunk of a batch after the first, whether the
// consumer of its callbacks keeps up: when pace returns false the batch ends there, and the rest of
// what is due fires first, in order, at the next wake-up (one grid step later with the real clock).
// It is backpressure for overload: entries wait in the scheduler, late, rather than pile up
// downstream. pace runs under the scheduler's lock, so it must be cheap and must not call the
// Scheduler; it must return true again once its consumer has caught up.
func WithPace(pace func() bool) SchedulerOption {
	return func(s *Scheduler) { s.pace = pace }
}

// Reschedule moves h's entry to t with callback f when it is still pending, and otherwise schedules
// a new one, in one step (Cancel then At takes the lock twice). It returns the entry's handle.
// After Stop it does nothing and returns the zero Handle.
//
// f is a Callback rather than a func so that an object can be its own callback: a method value is
// a closure, a separate allocation that firing reads before it reaches the object, one more cache
// miss per callback when many objects fire in an order unrelated to where they are in memory.
func (s *Scheduler) Reschedule(h Handle, t time.Time, f Callback) Handle {
	when := int64(t.Sub(s.base))
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return Handle{}
	}
	if h.gen == 0 || int(h.idx) >= len(s.entries) || h.idx < 0 ||
		s.entries[h.idx].gen != h.gen || !s.entries[h.idx].pending() {
		h = s.atLocked(when, f) // the common case: a worker schedules its next tick from this one
		s.mu.Unlock()
		return h
	}
	e := &s.entries[h.idx]
	e.f = f
	if at := s.grid(when); e.pos >= 0 && !s.near(at) {
		// from the heap to the heap: sift in place
		s.seq++
		i := int(e.pos)
		e.when = when
		s.heap[i].when, s.heap[i].seq = at, s.seq
		if !s.down(i) {
			s.up(i)
		}
		s.armFor(at)
	} else {
		s.unlink(h.idx)
		s.insert(h.idx, when)
	}
	s.mu.Unlock()
	return h
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
	if e.gen != h.gen || !e.pending() {
		return false
	}
	s.unlink(h.idx)
	s.release(h.idx)
	s.n--
	if s.n == 0 && s.armed && !s.firing {
		if l := s.loop; l != nil {
			s.sparse(l)
			l.timer.Stop()
		} else {
			s.timer.Stop()
		}
		s.armed = false
	}
	return true
}

// Len returns the number of pending entries.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// WaitLen blocks until at least n entries are pending or ctx is done. Tests use it to wait, without
// sleeping, until actors have scheduled their next deadline before advancing a Fake clock (with a
// Scheduler the Fake only ever sees one pending timer, so Fake.WaitPending cannot tell).
func (s *Scheduler) WaitLen(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		if s.n >= n {
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
// A batch already running finishes the callback in progress and starts no other one. Stop may be
// called more than once, including from a callback; with the real clock the scheduler's goroutine
// ends right after it (Wait waits for that).
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
	if l := s.loop; l != nil {
		if l.started {
			l.timer.Stop()
			close(l.stop)
		} else {
			close(l.done)
		}
	}
	s.armed = false
	s.entries = nil
	s.free = nil
	s.heap = nil
	s.wheel = nil
	s.n = 0
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// Wait returns once a stopped Scheduler's goroutine (real clock) has ended: after Stop and Wait, the
// Scheduler leaves no goroutine or timer behind. It must not be called from a callback.
func (s *Scheduler) Wait() {
	if s.loop != nil {
		s.mu.Lock()
		stopped := s.stopped
		s.mu.Unlock()
		if stopped {
			<-s.loop.done
		}
	}
}

// run is the real clock's goroutine: it fires whenever the timer or the ticker goes off, until Stop.
func (s *Scheduler) run(l *loop) {
	defer close(l.done)
	for {
		s.mu.Lock()
		var tick <-chan time.Time
		if l.dense {
			tick = l.ticker.C
		}
		s.mu.Unlock()
		select {
		case <-l.timer.C:
		case <-tick:
		case <-l.stop:
			s.mu.Lock()
			if l.ticker != nil {
				l.ticker.Stop()
			}
			s.mu.Unlock()
			return
		}
		s.fire()
	}
}

// fire is the single timer's callback: it takes the due entries out of the heap in chunks of at
// most fireChunk, runs each chunk outside the lock, and finally re-arms the timer for the earliest
// remaining entry. A spurious or overlapping call (the timer was reset while a callback was already
// starting) is harmless: it finds nothing due, or finds a batch already running and returns.
//
// Chunks keep the lock's hold time short whatever the batch: the workers whose callbacks ran
// reschedule themselves (on other goroutines) while the rest of the batch is still being fired, and
// with the whole batch taken at once they waited for it (sync.Mutex.lockSlow and futex were a
// quarter of the CPU at 1,000,000 workers on 16 cores, issue 22).
func (s *Scheduler) fire() {
	s.mu.Lock()
	if s.stopped || s.firing {
		s.mu.Unlock()
		return
	}
	s.armed = false
	s.firing = true
	now := int64(s.clock.Now().Sub(s.base))
	batch := s.batch[:0]
	fired := false
	locked := true
	defer func() { // also when a callback panics (a Fake's Advance in a test)
		clear(batch)
		if !locked {
			s.mu.Lock()
		}
		s.batch = batch[:0]
		if l := s.loop; l != nil {
			if fired {
				l.empty = 0
			} else {
				l.empty++
			}
		}
		if !s.stopped {
			s.rearmLocked() // decides between the loop's ticker and timer
		}
		s.firing = false
		s.mu.Unlock()
	}()
	for {
		if fired && s.pace != nil && !s.pace() {
			return
		}
		batch = s.take(now, batch[:0])
		if len(batch) == 0 {
			return
		}
		fired = true
		s.mu.Unlock()
		locked = false
		for _, f := range batch {
			if s.stoppedFlag.Load() {
				return
			}
			if s.dispatch != nil {
				s.dispatch(f)
			} else {
				f.Fire()
			}
		}
		clear(batch)
		s.mu.Lock()
		locked = true
		if s.stopped {
			return
		}
	}
}

// fireChunk is how many due entries fire takes out of the heap or the wheel under one hold of the
// lock.
const fireChunk = 64

// take appends to batch the callbacks of up to fireChunk entries due at now, in the order they
// fire, and removes those entries.
func (s *Scheduler) take(now int64, batch []Callback) []Callback {
	w := s.wheel
	if w == nil {
		for len(s.heap) > 0 && len(batch) < fireChunk {
			top := s.heap[0]
			if top.when > now {
				break
			}
			batch = append(batch, s.entries[top.idx].f)
			s.remove(0)
			s.release(top.idx)
			s.n--
		}
		return batch
	}
	due := floorDiv(now, s.res) // the last grid point that has come: slot k is due when k*res <= now
	for len(batch) < fireChunk {
		idx := w.head[w.overdue()]
		partial := false
		if idx < 0 {
			k, ok := w.next()
			switch {
			case ok && k <= due:
				if k > w.cursor {
					s.advance(k)
				}
				idx = w.head[k&w.mask]
			case w.cursor <= due:
				// Nothing in the wheel is due: move the cursor past now. Heap entries that are due
				// (the clock jumped further than the wheel's span) go to the overdue list, in order.
				s.advance(due + 1)
				continue
			case ok && k == w.cursor:
				// The next grid point has not come, but some of its entries' deadlines may have:
				// they fire now, as they would from a heap, so that a wake-up between grid points
				// (the ticker's phase is its own) does not make them wait for the next one.
				idx, partial = w.passed(s.entries, now), true
			}
			if idx < 0 {
				break
			}
		}
		w.unlink(s.entries, idx)
		if partial {
			w.scan.mods = w.mods // this unlink is the scan's own: it does not disturb where it resumes
		}
		batch = append(batch, s.entries[idx].f)
		s.release(idx)
		s.n--
	}
	return batch
}

// advance moves the wheel's cursor to grid point to (the slots before it are empty) and moves into
// the wheel the heap's entries that its span now covers, in (grid point, scheduling) order; those
// due before to go to the overdue list. The heap's entries were all scheduled before the span
// reached their point, so they go before any entry scheduled into the wheel directly: the order at
// a grid point stays the scheduling order.
func (s *Scheduler) advance(to int64) {
	w := s.wheel
	w.cursor = to
	end := w.end() * s.res
	for len(s.heap) > 0 && s.heap[0].when < end {
		top := s.heap[0]
		s.remove(0)
		w.add(s.entries, top.idx, top.when/s.res)
	}
}

// floorDiv is a/b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// rearmLocked arms the timer for the earliest entry after a batch (s.firing is still true).
func (s *Scheduler) rearmLocked() {
	if s.n == 0 {
		if s.loop != nil {
			s.sparse(s.loop) // nothing due: no idle ticking
		}
		return
	}
	if w := s.wheel; w != nil {
		if w.head[w.overdue()] >= 0 {
			s.arm((w.cursor - 1) * s.res)
			return
		}
		if k, ok := w.next(); ok {
			s.arm(k * s.res)
			return
		}
	}
	s.arm(s.grid(s.heap[0].when))
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

// arm arms the timer for grid point at (nanoseconds since base). The deadline is absolute: with a
// Fake that a test advances while workers reschedule from their own goroutines, a delay computed
// from an earlier reading of the clock would fire late by however far Advance moved meanwhile, and
// with armedAt believing the earlier deadline nothing would re-arm it: the shard's entries stalled
// until then (a test saw a shard's workers go 28 s of fake time unprobed).
func (s *Scheduler) arm(at int64) {
	if l := s.loop; l != nil {
		s.armLoop(l, at, time.Duration(at-int64(s.clock.Now().Sub(s.base))))
		return
	}
	deadline := s.base.Add(time.Duration(at))
	switch t := s.timer.(type) {
	case nil:
		s.timer = AfterFuncAt(s.clock, deadline, s.fire)
	case *fakeTimer:
		t.resetAt(deadline)
	case resetter:
		t.Reset(deadline.Sub(s.clock.Now()))
	default:
		s.timer.Stop()
		s.timer = AfterFuncAt(s.clock, deadline, s.fire)
	}
	s.armed = true
	s.armedAt = at
}

// armLoop arms the real clock's loop for at (d from now). While the loop runs on its ticker (at
// the resolution), the ticker reaches at within one step anyway. Only the loop's own re-arm after a
// batch (dense: the next deadline is close) switches between ticker and timer, so the goroutine
// always waits on what is armed.
func (s *Scheduler) armLoop(l *loop, at int64, d time.Duration) {
	s.armed, s.armedAt = true, at
	switch {
	case !l.started:
		l.started = true
		l.timer = time.NewTimer(d)
		go s.run(l)
	case !s.firing:
		if !l.dense {
			l.timer.Reset(d)
		}
	case !l.dense && d <= time.Duration(denseSpan*s.res):
		l.timer.Stop()
		l.dense, l.empty = true, 0
		if l.ticker == nil {
			l.ticker = time.NewTicker(time.Duration(s.res))
		} else {
			l.ticker.Reset(time.Duration(s.res))
		}
	case l.dense && l.empty < sparseAfter && d <= time.Duration(sparseSpan*s.res):
		// keep ticking
	default:
		s.sparse(l)
		l.timer.Reset(d)
	}
}

// sparse stops the loop's ticker (the loop then waits on its timer).
func (s *Scheduler) sparse(l *loop) {
	if l.dense {
		l.ticker.Stop()
		l.dense = false
	}
}

func (s *Scheduler) alloc() int32 {
	if n := len(s.free); n > 0 {
		idx := s.free[n-1]
		s.free = s.free[:n-1]
		return idx
	}
	s.entries = append(s.entries, entry{gen: 1, pos: -1, slot: -1, next: -1, prev: -1})
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
func less(a, b *item) bool {
	if a.when != b.when {
		return a.when < b.when
	}
	return int32(a.seq-b.seq) < 0
}

func (s *Scheduler) swap(i, j int) {
	h := s.heap
	h[i], h[j] = h[j], h[i]
	s.entries[h[i].idx].pos = int32(i)
	s.entries[h[j].idx].pos = int32(j)
}

func (s *Scheduler) push(it item) {
	s.heap = append(s.heap, it)
	i := len(s.heap) - 1
	s.entries[it.idx].pos = int32(i)
	s.up(i)
}

// remove deletes the heap element at position i.
func (s *Scheduler) remove(i int) {
	n := len(s.heap) - 1
	if i != n {
		s.swap(i, n)
	}
	s.entries[s.heap[n].idx].pos = -1
	s.heap = s.heap[:n]
	if i != n {
		if !s.down(i) {
			s.up(i)
		}
	}
}

// The heap is 4-ary: half the levels of a binary heap, and the four children of a node (16 bytes
// each) share a cache line, so popping the earliest of 100,000 entries touches ~9 lines, not ~17.
const arity = 4

func (s *Scheduler) up(i int) {
	for i > 0 {
		p := (i - 1) / arity
		if !less(&s.heap[i], &s.heap[p]) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *Scheduler) down(i0 int) bool {
	i, n := i0, len(s.heap)
	for {
		l := arity*i + 1
		if l >= n {
			break
		}
		j := l
		for c := l + 1; c < l+arity && c < n; c++ {
			if less(&s.heap[c], &s.heap[j]) {
				j = c
			}
		}
		if !less(&s.heap[j], &s.heap[i]) {
			break
		}
		s.swap(i, j)
		i = j
	}
	return i > i0
}
