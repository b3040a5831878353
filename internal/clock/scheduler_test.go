package clock

import (
	"context"
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

// TestSchedulerMatchesModel drives random At/Cancel/Advance operations and checks the scheduler
// against a trivially correct model: each live entry fires exactly once, at its deadline, in order.
func TestSchedulerMatchesModel(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed))
		f := NewFake(epoch)
		s := NewScheduler(f)
		type want struct {
			id   int
			when time.Time
		}
		live := map[int]want{}
		handles := map[int]Handle{}
		var fired []want
		next := 0
		for range 2000 {
			switch op := rng.IntN(12); {
			case op >= 10 && next > 0:
				// Reschedule any entry ever made: a pending one moves (with a new scheduling order),
				// a fired or cancelled one is scheduled anew. Either way it is a new id in the model.
				old := rng.IntN(next)
				id := next
				next++
				when := f.Now().Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
				_, pending := live[old]
				delete(live, old)
				live[id] = want{id, when}
				h := s.Reschedule(handles[old], when, func() {
					require.Equal(t, when, f.Now(), "seed %d: fired at its deadline", seed)
					fired = append(fired, want{id, when})
				})
				if pending {
					require.Equal(t, handles[old], h, "seed %d: a pending entry keeps its handle", seed)
				}
				delete(handles, old)
				handles[id] = h
			case op < 5:
				id := next
				next++
				when := f.Now().Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
				live[id] = want{id, when}
				handles[id] = s.At(when, func() {
					require.Equal(t, when, f.Now(), "seed %d: fired at its deadline", seed)
					fired = append(fired, want{id, when})
				})
			case op < 7 && len(live) > 0:
				ids := make([]int, 0, len(live))
				for id := range live {
					ids = append(ids, id)
				}
				slices.Sort(ids)
				id := ids[rng.IntN(len(ids))]
				require.True(t, s.Cancel(handles[id]), "seed %d: cancel live %d", seed, id)
				delete(live, id)
			default:
				target := f.Now().Add(time.Duration(rng.IntN(2000)) * time.Millisecond)
				expect := []want{}
				for _, w := range live {
					if !w.when.After(target) {
						expect = append(expect, w)
						delete(live, w.id)
					}
				}
				slices.SortFunc(expect, func(a, b want) int {
					if c := a.when.Compare(b.when); c != 0 {
						return c
					}
					return a.id - b.id
				})
				fired = []want{}
				f.Set(target)
				require.Equal(t, expect, fired, "seed %d", seed)
			}
			require.Equal(t, len(live), s.Len())
			require.LessOrEqual(t, f.Pending(), 1)
		}
		s.Stop()
	}
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
