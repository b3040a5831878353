package clock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSchedulerFiresInDeadlineOrderFromOneTimer(t *testing.T) {
	f := NewFake(epoch)
	s := NewScheduler(f)
	var got []string
	at := func(name string, d time.Duration) {
		s.At(epoch.Add(d), func() { got = append(got, name+"@"+f.Now().Sub(epoch).String()) })
		assert.LessOrEqual(t, f.Pending(), 1, "the scheduler never holds more than one clock timer")
	}
	at("c", 3*time.Second)
	at("a1", time.Second)
	at("b", 2*time.Second)
	at("a2", time.Second)
	at("late", time.Minute)
	assert.Equal(t, 5, s.Len())

	f.Advance(999 * time.Millisecond)
	assert.Empty(t, got, "nothing fires early")
	f.Advance(2001 * time.Millisecond)
	assert.Equal(t, []string{"a1@1s", "a2@1s", "b@2s", "c@3s"}, got)
	assert.Equal(t, 1, s.Len())
	assert.Equal(t, 1, f.Pending())
}

func TestSchedulerCancel(t *testing.T) {
	f := NewFake(epoch)
	s := NewScheduler(f)
	var got []int
	h1 := s.After(time.Second, func() { got = append(got, 1) })
	h2 := s.After(2*time.Second, func() { got = append(got, 2) })
	h3 := s.After(3*time.Second, func() { got = append(got, 3) })

	assert.True(t, s.Cancel(h2))
	assert.False(t, s.Cancel(h2), "second cancel")
	assert.False(t, s.Cancel(Handle{}), "zero handle")
	assert.Equal(t, 2, s.Len())

	f.Advance(time.Second)
	assert.Equal(t, []int{1}, got)
	assert.False(t, s.Cancel(h1), "already fired")

	// The freed slot is reused; the old handle must not cancel the new entry.
	h4 := s.After(time.Second, func() { got = append(got, 4) })
	assert.False(t, s.Cancel(h1))
	assert.False(t, s.Cancel(h2))

	assert.True(t, s.Cancel(h3))
	f.Advance(5 * time.Second)
	assert.Equal(t, []int{1, 4}, got)
	assert.False(t, s.Cancel(h4))
	assert.Equal(t, 0, s.Len())
}

func TestSchedulerCancellingLastEntryStopsTheClockTimer(t *testing.T) {
	f := NewFake(epoch)
	s := NewScheduler(f)
	h := s.After(time.Second, func() { t.Error("cancelled entry fired") })
	require.Equal(t, 1, f.Pending())
	require.True(t, s.Cancel(h))
	assert.Equal(t, 0, f.Pending())
	f.Advance(time.Minute)
}

func TestSchedulerReentrantRescheduling(t *testing.T) {
	f := NewFake(epoch)
	s := NewScheduler(f)
	type tick struct {
		who string
		at  time.Duration
	}
	var got []tick
	var mu sync.Mutex
	periodic := func(who string, period time.Duration) {
		var fn func()
		fn = func() {
			mu.Lock()
			got = append(got, tick{who, f.Now().Sub(epoch)})
			mu.Unlock()
			s.After(period, fn)
		}
		s.After(period, fn)
	}
	periodic("fast", time.Second)
	periodic("slow", 3*time.Second)

	// One call that crosses several periods runs the entries scheduled by earlier callbacks.
	f.Advance(6 * time.Second)
	want := []tick{
		{"fast", 1 * time.Second}, {"fast", 2 * time.Second},
		{"slow", 3 * time.Second}, {"fast", 3 * time.Second}, // equal deadlines: scheduled first, fires first
		{"fast", 4 * time.Second}, {"fast", 5 * time.Second},
		{"slow", 6 * time.Second}, {"fast", 6 * time.Second},
	}
	assert.Equal(t, want, got)
	assert.Equal(t, 2, s.Len())
}

func TestSchedulerCallbackCancelsAndSchedulesEarlier(t *testing.T) {
	f := NewFake(epoch)
	s := NewScheduler(f)
	var got []string
	var h Handle
	s.After(time.Second, func() {
		got = append(got, "first")
		assert.True(t, s.Cancel(h), "cancel from a callback")
		s.After(500*time.Millisecond, func() { got = append(got, "inserted") })
	})
	h = s.After(2*time.Second, func() { got = append(got, "cancelled") })
	s.After(3*time.Second, func() { got = append(got, "last") })
	f.Advance(3 * time.Second)
	assert.Equal(t, []string{"first", "inserted", "last"}, got)
}

func TestSchedulerPastDeadlineFiresAtNextAdvance(t *testing.T) {
	f := NewFake(epoch)
	s := NewScheduler(f)
	ran := false
	s.At(epoch.Add(-time.Hour), func() { ran = true })
	f.Advance(0)
	assert.True(t, ran)
}

func TestSchedulerStop(t *testing.T) {
	f := NewFake(epoch)
	s := NewScheduler(f)
	ran := 0
	s.After(time.Second, func() { ran++ })
	s.After(2*time.Second, func() { ran++ })
	s.Stop()
	assert.Equal(t, 0, s.Len())
	assert.Equal(t, 0, f.Pending(), "clock timer stopped")
	assert.Equal(t, Handle{}, s.After(time.Second, func() { ran++ }), "At after Stop is a no-op")
	assert.Equal(t, 0, s.Len())
	f.Advance(time.Minute)
	assert.Equal(t, 0, ran)
	s.Stop() // idempotent
}

func TestSchedulerStopFromCallbackEndsTheBatch(t *testing.T) {
	f := NewFake(epoch)
	s := NewScheduler(f)
	var got []int
	s.After(time.Second, func() { got = append(got, 1); s.Stop() })
	s.After(time.Second, func() { got = append(got, 2) })
	s.After(2*time.Second, func() { got = append(got, 3) })
	f.Advance(time.Minute)
	assert.Equal(t, []int{1}, got)
	assert.Equal(t, 0, f.Pending())
}

func TestSchedulerResolutionBatchesWithoutFiringEarly(t *testing.T) {
	f := NewFake(epoch)
	s := NewScheduler(f, WithResolution(10*time.Millisecond))
	var firedAt []time.Duration
	for _, d := range []time.Duration{1, 3, 9, 10, 11} {
		s.After(d*time.Millisecond, func() { firedAt = append(firedAt, f.Now().Sub(epoch)) })
	}
	f.Advance(9 * time.Millisecond)
	assert.Empty(t, firedAt, "entries wait for the grid point")
	f.Advance(time.Millisecond)
	assert.Equal(t, []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}, firedAt)
	f.Advance(10 * time.Millisecond)
	assert.Len(t, firedAt, 5)
	assert.Equal(t, 20*time.Millisecond, firedAt[4])
}

// withWheelSlots sets the size of the scheduler's timing wheel (0: no wheel, the heap holds every
// entry), so that the model test can make the wheel small enough for entries to move in from the heap.
func withWheelSlots(n int) SchedulerOption { return func(s *Scheduler) { s.wheelSlots = n } }

// TestSchedulerMatchesModel drives random At/Cancel/Reschedule/Advance operations and checks the
// scheduler against a trivially correct model: each live entry fires exactly once, at its deadline
// rounded up to the grid (exact without one), in the order of those points, ties in scheduling
// order. It runs every structure the scheduler has: the heap alone with exact deadlines (a Fake's
// default) and on a grid, and the timing wheel with its default span and with a span (64 steps) so
// short against the deadlines (up to 5 s) and the jumps that most entries start in the heap and move
// into the wheel, some only when the clock has jumped past them. It also wakes the scheduler
// between grid points, as the real clock's ticker does (its phase is its own): the wheel then fires,
// at once, the entries of the next grid point whose own deadlines have passed, in scheduling order.
func TestSchedulerMatchesModel(t *testing.T) {
	for _, m := range []struct {
		name string
		res  time.Duration
		opts []SchedulerOption
	}{
		{"heap, exact", 0, nil},
		{"heap, 1ms grid", time.Millisecond, []SchedulerOption{WithResolution(time.Millisecond), withWheelSlots(0)}},
		{"wheel, 1ms grid", time.Millisecond, []SchedulerOption{WithResolution(time.Millisecond)}},
		{"small wheel, 1ms grid", time.Millisecond, []SchedulerOption{WithResolution(time.Millisecond), withWheelSlots(64)}},
		{"small wheel, 7ms grid", 7 * time.Millisecond, []SchedulerOption{WithResolution(7 * time.Millisecond), withWheelSlots(64)}},
	} {
		t.Run(m.name, func(t *testing.T) {
			if m.res > 0 {
				s := NewScheduler(NewFake(epoch), m.opts...)
				require.Equal(t, s.wheelSlots > 0, s.wheel != nil, "the structure under test")
			}
			for seed := uint64(1); seed <= 20; seed++ {
				schedulerMatchesModel(t, seed, m.res, m.opts...)
			}
		})
	}
}

func schedulerMatchesModel(t *testing.T, seed uint64, res time.Duration, opts ...SchedulerOption) {
	rng := rand.New(rand.NewPCG(seed, seed))
	f := NewFake(epoch)
	s := NewScheduler(f, opts...)
	defer s.Stop()
	step, span := time.Millisecond, 64*time.Millisecond
	if res > 0 {
		step = res
		span = time.Duration(max(s.wheelSlots, 64)) * res
	}
	// point is when an entry due at when fires from the timer: when rounded up to the grid.
	point := func(when time.Time) time.Time {
		if res == 0 {
			return when
		}
		d := when.Sub(epoch)
		return epoch.Add((d + res - 1) / res * res)
	}
	// The deadlines and jumps aim at the edges: now and the next few grid points (entries that
	// share a slot, entries for a point just fired, deadlines between points), the wheel's edge,
	// and beyond the wheel.
	deadline := func() time.Time {
		var d time.Duration
		switch rng.IntN(5) {
		case 0:
			d = time.Duration(rng.IntN(4)) * step
		case 1:
			d = time.Duration(rng.Int64N(int64(4 * step)))
		case 2:
			d = span + time.Duration(rng.IntN(5)-2)*step
		case 3:
			d = time.Duration(rng.IntN(100)) * time.Millisecond
		default:
			d = time.Duration(rng.IntN(5000)) * time.Millisecond
		}
		return f.Now().Add(d)
	}
	jump := func() time.Time {
		var d time.Duration
		switch rng.IntN(5) {
		case 0:
		case 1:
			d = time.Duration(1+rng.IntN(3)) * step
		case 2:
			d = time.Duration(rng.Int64N(int64(3 * step)))
		case 3:
			d = time.Duration(rng.IntN(2000)) * time.Millisecond
		default:
			d = time.Duration(rng.Int64N(int64(2 * span)))
		}
		return f.Now().Add(d)
	}

	type fire struct {
		id int
		at time.Time
	}
	live := map[int]time.Time{} // id: deadline
	handles := map[int]Handle{}
	var fired []fire
	cb := func(id int) func() { return func() { fired = append(fired, fire{id, f.Now()}) } }
	// expect takes out of live the entries due by target (at their grid point, or, with partial,
	// at target itself when only their own deadline has come) in the order they must fire.
	expect := func(target time.Time, partial bool) []fire {
		out := []fire{}
		for id, when := range live {
			switch {
			case !point(when).After(target):
				out = append(out, fire{id, point(when)})
			case partial && !when.After(target):
				out = append(out, fire{id, target})
			default:
				continue
			}
			delete(live, id)
		}
		slices.SortFunc(out, func(a, b fire) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return a.id - b.id
		})
		return out
	}
	next := 0
	for range 2000 {
		switch op := rng.IntN(13); {
		case op >= 11 && next > 0:
			// Reschedule any entry ever made: a pending one moves (with a new scheduling order),
			// a fired or cancelled one is scheduled anew. Either way it is a new id in the model.
			old := rng.IntN(next)
			id := next
			next++
			when := deadline()
			_, pending := live[old]
			delete(live, old)
			live[id] = when
			h := s.Reschedule(handles[old], when, Func(cb(id)))
			if pending {
				require.Equal(t, handles[old], h, "seed %d: a pending entry keeps its handle", seed)
			}
			delete(handles, old)
			handles[id] = h
		case op < 5:
			id := next
			next++
			when := deadline()
			live[id] = when
			handles[id] = s.At(when, cb(id))
		case op < 7 && len(live) > 0:
			ids := make([]int, 0, len(live))
			for id := range live {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			id := ids[rng.IntN(len(ids))]
			require.True(t, s.Cancel(handles[id]), "seed %d: cancel live %d", seed, id)
			delete(live, id)
		case op == 10:
			// A wake-up at any time, as from the real clock's ticker.
			target := jump()
			want := expect(target, s.wheel != nil)
			fired = []fire{}
			f.Set(target)
			s.fire()
			require.Equal(t, want, fired, "seed %d: woken at %v", seed, target.Sub(epoch))
		default:
			target := jump()
			want := expect(target, false)
			fired = []fire{}
			f.Set(target)
			require.Equal(t, want, fired, "seed %d: advanced to %v", seed, target.Sub(epoch))
		}
		require.Equal(t, len(live), s.Len(), "seed %d", seed)
		require.LessOrEqual(t, f.Pending(), 1, "seed %d", seed)
	}
}

// A wake-up between grid points (the real clock's ticker has a phase of its own) fires the entries
// of the next point whose own deadlines have passed, across chunks, even when a callback moves the
// entry where the scan of that slot stopped to the slot's tail.
func TestSchedulerWakeBetweenGridPointsFiresWhatHasPassed(t *testing.T) {
	f := NewFake(epoch)
	s := NewScheduler(f, WithResolution(10*time.Millisecond))
	defer s.Stop()
	var fired []string
	var x Handle
	xfn := func() { fired = append(fired, "x@"+f.Now().Sub(epoch).String()) }
	x = s.After(9*time.Millisecond, xfn) // first in the slot, not due at 5ms: the scan stops after it
	moved := false
	for i := range fireChunk + 6 {
		s.After(time.Millisecond, func() {
			fired = append(fired, fmt.Sprintf("%d@%v", i, f.Now().Sub(epoch)))
			if !moved { // runs between chunks: x goes to the slot's tail, after every due entry
				moved = true
				require.Equal(t, x, s.Reschedule(x, epoch.Add(8*time.Millisecond), Func(xfn)))
			}
		})
	}
	s.After(2*time.Millisecond, func() { fired = append(fired, "last@"+f.Now().Sub(epoch).String()) })

	f.Set(epoch.Add(5 * time.Millisecond))
	require.Empty(t, fired, "the grid point (10ms) has not come")
	s.fire()
	require.Len(t, fired, fireChunk+7, "every entry whose deadline passed fires at the wake-up")
	assert.Equal(t, "0@5ms", fired[0])
	assert.Equal(t, fmt.Sprintf("%d@5ms", fireChunk+5), fired[fireChunk+5])
	assert.Equal(t, "last@5ms", fired[fireChunk+6])
	f.Set(epoch.Add(10 * time.Millisecond))
	assert.Equal(t, "x@10ms", fired[len(fired)-1])
	assert.Equal(t, 0, s.Len())
}

// WithPace ends a batch after a chunk when the consumer does not keep up; the rest of what is due
// fires first, in order, at the next wake-up (with a Fake, the next firing of the re-armed timer).
func TestSchedulerPaceEndsABatchBetweenChunks(t *testing.T) {
	f := NewFake(epoch)
	var fired []int
	var paused []int // len(fired) each time pace said no
	keepUp := false
	s := NewScheduler(f, WithResolution(time.Millisecond), WithPace(func() bool {
		if !keepUp {
			paused = append(paused, len(fired))
		}
		return keepUp
	}))
	defer s.Stop()
	n := 3*fireChunk + 10
	for i := range n {
		s.After(time.Millisecond, func() { fired = append(fired, i) })
	}
	late := s.After(5*time.Millisecond, func() { fired = append(fired, n) })
	f.Advance(time.Millisecond)
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, fired, "every due entry fires, in scheduling order, across the pauses")
	assert.Equal(t, []int{fireChunk, 2 * fireChunk, 3 * fireChunk, n}, paused, "one chunk per wake-up while pace says no")
	keepUp = true
	f.Advance(4 * time.Millisecond)
	assert.Equal(t, n, fired[len(fired)-1])
	assert.False(t, s.Cancel(late))
}

// cbFunc is a Callback that records whether it was fired (and not only dispatched).
type cbFunc struct {
	name  string
	fired *[]string
}

func (c cbFunc) Fire() { *c.fired = append(*c.fired, c.name) }

// With a dispatch, due callbacks go to it instead of firing: in the order they would have fired,
// outside the scheduler's lock (the dispatch may schedule, reschedule and cancel), and a callback
// fires only when the dispatch fires it.
func TestSchedulerDispatch(t *testing.T) {
	f := NewFake(epoch)
	var dispatched, fired []string
	var s *Scheduler
	var held Handle
	s = NewScheduler(f, WithDispatch(func(c Callback) {
		cb, ok := c.(cbFunc)
		if !ok { // At's func
			dispatched = append(dispatched, "func")
			c.Fire()
			return
		}
		dispatched = append(dispatched, cb.name)
		switch cb.name {
		case "b":
			c.Fire() // the dispatch may fire it itself
		case "c":
			held = s.Reschedule(Handle{}, f.Now().Add(time.Second), cbFunc{"again", &fired}) // no deadlock
			assert.True(t, s.Cancel(held))
		}
	}))
	defer s.Stop()
	s.Reschedule(Handle{}, epoch.Add(2*time.Second), cbFunc{"c", &fired})
	s.Reschedule(Handle{}, epoch.Add(time.Second), cbFunc{"a", &fired})
	s.Reschedule(Handle{}, epoch.Add(time.Second), cbFunc{"b", &fired})
	s.At(epoch.Add(3*time.Second), func() { fired = append(fired, "func") })
	f.Advance(5 * time.Second)
	assert.Equal(t, []string{"a", "b", "c", "func"}, dispatched, "every due callback, in deadline and scheduling order")
	assert.Equal(t, []string{"b", "func"}, fired, "only what the dispatch fired")
	assert.Zero(t, s.Len(), "the rescheduled entry was cancelled")
}

func TestSchedulerRealClockConcurrentAtAndCancel(t *testing.T) {
	s := NewScheduler(Real())
	defer s.Stop()
	const goroutines, perG = 8, 500
	var fired, cancelled atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range perG {
				d := time.Duration(rng.IntN(20)) * time.Millisecond
				h := s.After(d, func() { fired.Add(1) })
				if i%2 == 0 && s.Cancel(h) {
					cancelled.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		return fired.Load()+cancelled.Load() == goroutines*perG
	}, 10*time.Second, 5*time.Millisecond, "every entry fires or is cancelled, exactly once")
	assert.Greater(t, cancelled.Load(), int64(0))
	assert.Equal(t, 0, s.Len())
	// No double fire: the count must not move past the total.
	assert.Equal(t, int64(goroutines*perG), fired.Load()+cancelled.Load())
}

func TestSchedulerRealClockStopLeavesNothingRunning(t *testing.T) {
	s := NewScheduler(Real())
	var fired atomic.Int64
	for i := range 1000 {
		s.After(time.Duration(i%50)*time.Millisecond+time.Hour, func() { fired.Add(1) })
	}
	done := make(chan struct{})
	s.After(time.Millisecond, func() { close(done) })
	<-done
	s.Stop()
	s.Wait()
	assert.Equal(t, 0, s.Len())
	assert.Equal(t, int64(0), fired.Load())
	// goleak in TestMain checks that no goroutine outlives the test.
}

func TestSchedulerWaitLen(t *testing.T) {
	f := NewFake(epoch)
	s := NewScheduler(f)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- s.WaitLen(ctx, 3)
	}()
	for range 3 {
		s.After(time.Second, func() {})
	}
	require.NoError(t, <-done)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, s.WaitLen(ctx, 4), context.Canceled)

	go func() { done <- s.WaitLen(context.Background(), 10) }()
	s.Stop()
	assert.Error(t, <-done, "Stop releases waiters")
}

// With the real clock, a dense schedule (an entry every millisecond) is fired from the loop's
// ticker, and once nothing is due any more the ticker stops (no idle wake-ups) while a later entry
// still fires on time (virtual time in a synctest bubble).
func TestSchedulerRealClockLoopModes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(Real())
		defer func() { s.Stop(); s.Wait() }()
		dense := func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.loop.dense
		}
		start := time.Now()
		var fired atomic.Int32
		for i := 1; i <= 100; i++ {
			s.After(time.Duration(i)*time.Millisecond, func() { fired.Add(1) })
		}
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		assert.True(t, dense(), "an entry due every millisecond: the ticker")
		time.Sleep(60 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, int32(100), fired.Load())
		assert.False(t, dense(), "nothing due: no ticking")

		var at time.Time
		s.After(time.Second, func() { at = time.Now() })
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, start.Add(110*time.Millisecond+time.Second), at, "fired at its deadline from the timer")
	})
}

// Workers reschedule their entries from their own goroutines while a test advances the Fake in
// long jumps, with several schedulers on the one Fake (as a tree's shards are): an entry
// rescheduled before its deadline fires at its deadline, whatever Advance did meanwhile. The timer
// used to be armed for a delay measured from a reading of the clock taken before it was reset;
// Advance, firing the other schedulers' timers, could move time on in between, which set the timer
// late by as much, and armedAt, believing the earlier deadline, kept every later entry from
// re-arming it: the whole scheduler fired late (a tree test saw a shard's workers go 28 s of fake
// time unprobed).
func TestSchedulersOnAFakeAdvancedByAnotherGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := NewFake(epoch)
		const shards, workers, rounds = 3, 24, 200
		var scheds []*Scheduler
		for range shards {
			s := NewScheduler(f)
			defer s.Stop()
			scheds = append(scheds, s)
		}
		var late, checked atomic.Int32
		quit := make(chan struct{})
		var wg sync.WaitGroup
		for i := range workers {
			s := scheds[i%shards]
			fired := make(chan time.Time, 1)
			cb := Func(func() { fired <- f.Now() }) // runs inside Advance: Now is the timer's deadline
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			period := func() time.Duration { return time.Duration(1+rng.IntN(3000)) * time.Millisecond }
			due := f.Now().Add(period())
			h := s.Reschedule(Handle{}, due, cb)
			onTime := true
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case at := <-fired:
						if onTime {
							checked.Add(1)
							if !at.Equal(due) {
								late.Add(1)
							}
						}
						due = f.Now().Add(period())
						h = s.Reschedule(h, due, cb)
						onTime = f.Now().Before(due) // rescheduled before its deadline: must fire at it
					case <-quit:
						return
					}
				}
			}()
		}
		for r := range rounds {
			f.Advance(time.Duration(1+r%30) * time.Second)
			synctest.Wait()
		}
		close(quit)
		wg.Wait()
		assert.Greater(t, checked.Load(), int32(workers*rounds/4), "entries rescheduled before their deadline (the ones checked)")
		assert.Zero(t, late.Load(), "entries rescheduled before their deadline that fired late")
	})
}
