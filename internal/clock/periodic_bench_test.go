package clock

import (
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// periodicEntry is one simulated probe worker: it wants to run every period from its phase.
type periodicEntry struct {
	due time.Time
	fn  func()
	tm  *time.Timer // timer-per-entry variant only
}

// periodicRun collects what the callbacks observe. Callbacks of one Scheduler never run
// concurrently; the timer-per-entry variant does, hence the mutex.
type periodicRun struct {
	mu       sync.Mutex
	lateness []time.Duration
	want     int
	done     chan struct{}
	stopped  bool // guarded by mu: no timer-per-entry Reset after the run ends
}

func (r *periodicRun) record(late time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lateness) >= r.want {
		return
	}
	r.lateness = append(r.lateness, late)
	if len(r.lateness) == r.want {
		close(r.done)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPeriodicRealClock runs n entries at a 1 s period, phases spread evenly, under the real
// clock until b.N fires have happened, and reports the process CPU per fire (cpu-ns/fire), the share
// of one core (core-%), and how late entries fired (late-p50-µs, late-p99-µs). One op is one fire; the
// op rate is paced by the period, so ns/op itself is just 1 s / n.
//
//	go test -run XXX -bench PeriodicRealClock -benchtime 300000x ./actors/clock
func BenchmarkPeriodicRealClock(b *testing.B) {
	const period = time.Second
	for _, n := range []int{10_000, 100_000} {
		for _, variant := range []string{"scheduler-10ms", "scheduler-1ms", "scheduler-exact", "timer-per-entry"} {
			b.Run(fmt.Sprintf("entries=%d/%s", n, variant), func(b *testing.B) {
				run := &periodicRun{want: b.N, done: make(chan struct{}), lateness: make([]time.Duration, 0, b.N)}
				start := time.Now().Add(100 * time.Millisecond)
				entries := make([]periodicEntry, n)
				var s *Scheduler
				switch variant {
				case "scheduler-10ms", "scheduler-1ms", "scheduler-exact":
					res := map[string]time.Duration{
						"scheduler-10ms": 10 * time.Millisecond, "scheduler-1ms": time.Millisecond, "scheduler-exact": 0,
					}[variant]
					s = NewScheduler(Real(), WithResolution(res))
					for i := range entries {
						e := &entries[i]
						e.due = start.Add(time.Duration(i) * period / time.Duration(n))
						e.fn = func() {
							run.record(time.Since(e.due))
							e.due = e.due.Add(period)
							s.At(e.due, e.fn)
						}
					}
				default:
					for i := range entries {
						e := &entries[i]
						e.due = start.Add(time.Duration(i) * period / time.Duration(n))
						e.fn = func() {
							run.record(time.Since(e.due))
							e.due = e.due.Add(period)
							run.mu.Lock()
							if !run.stopped {
								e.tm.Reset(time.Until(e.due))
							}
							run.mu.Unlock()
						}
					}
				}
				b.ResetTimer()
				cpu0, wall0 := cpuTime(), time.Now()
				for i := range entries {
					e := &entries[i]
					if s != nil {
						s.At(e.due, e.fn)
					} else {
						e.tm = time.AfterFunc(time.Until(e.due), e.fn)
					}
				}
				<-run.done
				cpu, wall := cpuTime()-cpu0, time.Since(wall0)
				b.StopTimer()
				run.mu.Lock()
				run.stopped = true
				if s != nil {
					s.Stop()
				} else {
					for i := range entries {
						entries[i].tm.Stop()
					}
				}
				run.mu.Unlock()
				// Stop and Reset both happen under run.mu with the stopped flag, so no timer outlives
				// the sub-benchmark (Scheduler.At after Stop is a no-op).
				run.mu.Lock()
				lat := slices.Clone(run.lateness)
				run.mu.Unlock()
				slices.Sort(lat)
				q := func(p float64) float64 {
					return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Microsecond)
				}
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/fire")
				b.ReportMetric(100*float64(cpu)/float64(wall), "core-%")
				b.ReportMetric(q(0.50), "late-p50-µs")
				b.ReportMetric(q(0.99), "late-p99-µs")
			})
		}
	}
}
