package clock

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// spread is how far ahead entries are scheduled in the fire benchmarks: 1,000 distinct deadlines
// 10 µs apart, so both contenders fire many entries per millisecond like 100k workers at a 1 s period.
func spread(i int) time.Duration { return time.Duration(i%1000) * 10 * time.Microsecond }

func waitFor(b *testing.B, n *atomic.Int64, want int64) {
	deadline := time.Now().Add(time.Minute)
	for n.Load() < want {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d entries fired", n.Load(), want)
		}
		time.Sleep(100 * time.Microsecond) // benchmark only: waiting for timers to drain
	}
}

// BenchmarkScheduleAndFire measures one entry's whole life (schedule + fire) under the real clock.
func BenchmarkScheduleAndFire(b *testing.B) {
	b.Run("scheduler", func(b *testing.B) {
		s := NewScheduler(Real())
		defer s.Stop()
		var fired atomic.Int64
		fn := func() { fired.Add(1) } // built once, like an actor's tick closure
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			s.After(spread(i), fn)
		}
		waitFor(b, &fired, int64(b.N))
	})
	b.Run("time.AfterFunc", func(b *testing.B) {
		var fired atomic.Int64
		fn := func() { fired.Add(1) }
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			time.AfterFunc(spread(i), fn)
		}
		waitFor(b, &fired, int64(b.N))
	})
}

// BenchmarkRescheduleAmong100k measures cancelling one entry and scheduling it again while 100,000
// others are pending: the cost a worker pays when its period or state changes.
func BenchmarkRescheduleAmong100k(b *testing.B) {
	const n = 100_000
	fn := func() {}
	b.Run("scheduler", func(b *testing.B) {
		s := NewScheduler(Real())
		defer s.Stop()
		hs := make([]Handle, n)
		for i := range hs {
			hs[i] = s.After(time.Hour+time.Duration(i)*time.Microsecond, fn)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			k := i % n
			s.Cancel(hs[k])
			hs[k] = s.After(time.Hour+time.Duration(i)*time.Microsecond, fn)
		}
	})
	b.Run("time.AfterFunc", func(b *testing.B) {
		ts := make([]*time.Timer, n)
		for i := range ts {
			ts[i] = time.AfterFunc(time.Hour+time.Duration(i)*time.Microsecond, fn)
		}
		defer func() {
			for _, t := range ts {
				t.Stop()
			}
		}()
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			k := i % n
			ts[k].Stop()
			ts[k] = time.AfterFunc(time.Hour+time.Duration(i)*time.Microsecond, fn)
		}
	})
}

// BenchmarkFakeAdvance measures the scheduler's own cost per fire, without the runtime's timers:
// 10,000 periodic entries at a 1 s period advanced in 10 ms steps on a Fake clock.
func BenchmarkFakeAdvance(b *testing.B) {
	f := NewFake(epoch)
	s := NewScheduler(f)
	const n = 10_000
	var fires int64
	for i := range n {
		var fn func()
		fn = func() { fires++; s.After(time.Second, fn) }
		s.After(time.Duration(i)*time.Second/n, fn)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for fires < int64(b.N) {
		f.Advance(10 * time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(fires), "ns/fire")
	s.Stop()
}

// BenchmarkWheelAgainstHeap measures the scheduler's own cost per fire with a 1 ms grid, the timing
// wheel against the heap alone (the structure before it), in one run: n periodic entries at a 1 s
// period, phases spread evenly, each callback rescheduling itself (as a probe worker does), on a
// Fake clock advanced a millisecond at a time, so that no runtime timer or goroutine is counted.
//
//	go test -run '^$' -bench WheelAgainstHeap ./internal/clock/
func BenchmarkWheelAgainstHeap(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		for _, st := range []struct {
			name string
			opts []SchedulerOption
		}{
			{"heap", []SchedulerOption{WithResolution(time.Millisecond), withWheelSlots(0)}},
			{"wheel", []SchedulerOption{WithResolution(time.Millisecond)}},
		} {
			b.Run(fmt.Sprintf("structure=%s/entries=%d", st.name, n), func(b *testing.B) {
				f := NewFake(epoch)
				s := NewScheduler(f, st.opts...)
				defer s.Stop()
				hs := make([]Handle, n)
				fns := make([]func(), n)
				var fires int64
				for i := range n {
					fns[i] = func() { fires++; hs[i] = s.Reschedule(hs[i], f.Now().Add(time.Second), Func(fns[i])) }
					hs[i] = s.At(epoch.Add(time.Duration(i)*time.Second/time.Duration(n)), fns[i])
				}
				f.Advance(time.Second) // every entry has fired once: the slab and the heap are at size
				fires = 0
				b.ResetTimer()
				for fires < int64(b.N) {
					f.Advance(time.Millisecond)
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(fires), "ns/fire")
			})
		}
	}
}
