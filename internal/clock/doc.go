// Package clock owns time for the actor core: the Clock interface (Real for production, Fake for
// tests), the Rand injection point for jitter, and Scheduler, one shared timer that drives the
// deadlines of many actors.
//
// Invariants:
//   - Nothing in the actor core calls time.Now, time.AfterFunc or math/rand directly; it takes a Clock
//     and a Rand, so tests drive time by hand (Fake.Advance) and never sleep.
//   - A Fake runs due callbacks synchronously inside Advance/Set/AdvanceToNext, in deadline order, ties
//     in scheduling order, including callbacks scheduled while advancing. While a callback runs, Now()
//     is its deadline.
//   - A deadline is armed as a time, never as a delay from an earlier reading of the clock
//     (AfterFuncAt; the Scheduler's own timer): AfterFunc counts from its call, and a Fake that a
//     test advances from another goroutine can move on between the reading and the call, by a whole
//     Advance, while firing other timers. TestSchedulersOnAFakeAdvancedByAnotherGoroutine holds
//     every entry rescheduled before its deadline to fire at it.
//   - A Scheduler holds exactly one Clock timer however many entries it has (a Fake shows Pending() <= 1
//     per Scheduler), fires due entries in a batch from that timer, never fires an entry early, and
//     never fires an entry whose Cancel returned true. Within a batch entries fire in the order of
//     their grid points (their deadlines, without a grid), ties in scheduling order; a wake-up
//     between grid points also fires, in scheduling order, the next point's entries whose own
//     deadlines have passed. After Stop (and, with the real clock, Wait) no callback starts and no
//     timer or goroutine is left. TestSchedulerMatchesModel checks all of it against a plain model,
//     for the heap and the wheel.
//   - With WithPace, a batch stops after any chunk when the consumer says it does not keep up; what
//     is due then fires first at the next wake-up. The actor core's shards use it (actors/internal/exec).
//   - Scheduler callbacks must be cheap and non-blocking: they run one after another on the timer's
//     goroutine. The intended callback hands the work to another goroutine, and is the object
//     itself (a Callback), so that rescheduling allocates nothing and firing reads nothing but the
//     slab. With WithDispatch the scheduler hands each due callback to the owner's dispatch instead
//     of firing it (the actor core's shards: a worker's tick is queued for the attempt pool
//     without the firing goroutine reading the worker). Reschedule moves a pending entry in one step.
//   - With the real clock the Scheduler fires from one long-lived goroutine. While the schedule is
//     dense (the next deadline is within two grid steps of the last batch) that goroutine waits on a
//     runtime ticker at the grid resolution; otherwise on a channel timer armed for the next deadline.
//     A ticker is re-armed inside the runtime, while re-arming a timer for a nearer deadline from a
//     goroutine wakes the network poller (a write and a read system call) and AfterFunc starts a
//     goroutine per firing: at 10,000 probes a second that was most of the Scheduler's cost.
//
// With the real clock the Scheduler rounds deadlines up to a 1 ms grid (DefaultResolution) so that the
// entries due in the same millisecond share one wake-up; with a Fake it is exact by default.
// WithResolution overrides both.
//
// Design choice, timing wheel and heap (issue 22): entries live in a slab (8-byte Handles with a
// generation, so stale handles are rejected and slots are reused without allocation). With a grid,
// the entries due within 16.4 s (wheelSlots steps) hang in a timing wheel, one list per grid
// point, threaded through the slab, with a bitmap of the non-empty points: At, Reschedule, Cancel
// and firing are O(1), and the next deadline is a few word reads away. The entries due later, and
// all entries without a grid (a Fake's exact deadlines, which tests rely on), are in a 4-ary
// min-heap of 16-byte items (deadline, sequence, slab index), O(log n); they move into the wheel
// when its span reaches them, which for a probe with a period over 16.4 s is once per period.
//
// The heap alone was the first design: a hashed wheel's usual costs (a wake-up per slot even when
// idle; a precision of one slot) looked not worth paying against a heap at 100,000 entries. They
// turned out not to apply: the loop wakes once per grid step only while entries are due (the bitmap
// finds the next one when they are not), the grid is the precision already, and each entry keeps
// its exact deadline, so a ticker wake-up between grid points fires what has passed, as the heap
// did (without that, lateness p50 at 100,000 entries went from 0.56 to 1.05 ms: on this VM the
// ticker's wake-ups wander across the millisecond). And the heap's sifting did cost: at 1,000,000
// workers on 2 cores it was a quarter of the actor core's CPU (remove, down, swap, less). Measured
// (2-vCPU AMD EPYC VM, same run, both structures):
//
//	BenchmarkWheelAgainstHeap (scheduler only, Fake clock,      heap        wheel
//	1 ms grid, each fire reschedules its entry 1 s on)
//	  10,000 entries                                            198 ns      93 ns per fire
//	  100,000 entries                                           218 ns      81 ns
//	  1,000,000 entries                                         206 ns      78 ns
//	BenchmarkPeriodicRealClock 100,000 entries, scheduler-1ms   522-523 ns  400-409 ns CPU per fire
//	  (two runs each, alternating; the heap is main before       563 µs      548 µs lateness p50
//	  the wheel, built from the same tree)                       1104 µs     1079 µs lateness p99
//
// Measurements of the earlier version (AfterFunc timer, heap of slab indices; scheduler_bench_test.go,
// go test -bench . -benchtime 200000x, 2-core Xeon shared with other jobs, two runs each); the
// actor core's per-probe figures with the current one are in ARCHITECTURE.md:
//
//	schedule + fire one entry, real clock       Scheduler 416-432 ns, 0 allocs (27 B amortised slab growth)
//	                                            time.AfterFunc per entry 1804-2033 ns, 1 alloc, 239-294 B
//	cancel + reschedule among 100,000 pending   Scheduler 200-214 ns, 0 allocs
//	                                            time.AfterFunc 411-455 ns, 1 alloc, 130-146 B
//	10,000 entries at a 1 s period, Fake clock  403 ns per fire (scheduler + fake timer), 0 allocs
//
// So the shared Scheduler is ~4x cheaper per fire than a timer per entry, allocates nothing per fire,
// and keeps ~32 bytes per pending entry instead of a runtime timer (~100+ bytes) per worker.
//
// Periodic load under the real clock (BenchmarkPeriodicRealClock: n entries, 1 s period, phases spread
// evenly, each callback reschedules itself; process CPU from getrusage, so it includes the Go runtime's
// wake-ups; measured while other jobs kept the 2-core machine at load average 3-4.6, so lateness
// percentiles are dominated by CPU contention and vary 10x between runs):
//
//	                       cpu per fire   share of a core   late p50    late p99
//	100k, scheduler 1 ms   1.0-1.8 µs     10-15%            0.65-0.75 ms  2-30 ms
//	100k, scheduler exact  1.4-1.8 µs     13-15%            0.55-0.57 ms  2.6-42 ms
//	100k, scheduler 10 ms  0.6 µs         6%                5.4 ms        10.8 ms
//	100k, timer per entry  2.2-3.8 µs     22-32%            0.52-0.58 ms  3-16 ms
//	10k,  scheduler 1 ms   5.8-7.0 µs     6-7%              0.59 ms       2.2-10 ms
//	10k,  scheduler 10 ms  2.1 µs         2%                5.1 ms        10.7 ms
//	10k,  timer per entry  5.9-7.5 µs     6-7%              0.58-0.59 ms  15-35 ms
//
// At 10k entries the cost is the runtime's timer wake-ups (~50 µs of CPU each on this machine), which
// is why the grid matters more than the data structure there; at 100k the Scheduler halves the CPU of a
// timer per entry. A 10 ms grid (WithResolution) cuts CPU by another 2-3x for probes whose periods are
// whole seconds, at the price of firing up to 10 ms late; the default stays 1 ms.
package clock
