// Package exec is the actor core's execution layer: where a tree's mailboxes and probe attempts run,
// and how a probe gets from a timer to a verdict with one hand-off between goroutines.
//
//	Executor                one per tree: shards, and a Runner goroutine per tree actor
//	└── Shard × S           S = DefaultShards(GOMAXPROCS); a worker stays on one for its life
//	    ├── Sched           a clock.Scheduler: the shard's workers' timers, one wake-up per 1 ms grid
//	    ├── mailbox pool    fixed goroutines taking activations from one queue (the shard's)
//	    └── attempt pool    goroutines taking ticks and attempts from a backlog; idle ones stacked LIFO
//
// Mailbox is protoactor's actor.Mailbox for every actor of the tree: a user message inline,
// system messages first, Suspend/Resume and the escalation of a panic, and Carry, which delivers a
// message on the calling goroutine when the mailbox is free, so that a tick handed by the scheduler
// to an attempt goroutine becomes "tick handled → probe → verdict handled" there (HandOff, Carried).
// Context is the reusable context of an attempt. A shard's scheduler dispatches (clock.WithDispatch)
// a due callback that is a Job, a worker's tick, to the attempt pool without reading it: the tick is
// queued in the pool's backlog, and one idle goroutine is woken to search it unless one is searching
// already; whoever takes a tick wakes the next searcher if ticks are still queued, before it runs
// its own, and hands the backlog on to it after relayAfter ticks in a row (attemptPool.Dispatch).
// So a burst of due ticks costs a wake-up per relayAfter ticks, not one per tick, a probe that
// blocks holds up no tick behind it, and under overload the goroutines draining the backlog stay
// few instead of taking the procs from everything else in 10 ms slices. The tick fires (posted to
// the worker's mailbox) only when the pool is stopped or its backlog full. The firing goroutine,
// the shard's serial stage, touches nothing of a worker on the common path.
//
// Invariants (TestMailboxMatchesModel checks the mailbox's step by step against a plain model;
// TestMailboxUnderConcurrency under real concurrency; the pools' tests in virtual time):
//   - A mailbox is run by at most one goroutine at a time and is scheduled only when it has
//     something it may process and is not scheduled already; system messages go first, in order;
//     user messages are delivered exactly once, in order, at most mailboxThroughput per activation,
//     none while suspended; Restarted comes first after a Resume that follows a failure.
//   - Carry delivers inline only when the mailbox is idle, not suspended and has no system message;
//     system messages (which may block) are always left to the mailbox pool.
//   - Nothing blocks a sender: a full or stopped pool falls back to a goroutine of its own; an
//     attempt or a dispatched tick waits at most BacklogWait for a pool goroutine (a searcher woken
//     for it, a goroutine that finishes, or the rescue); idle attempt goroutines retire after one to
//     two AttemptIdleTimeouts, so a tree at rest holds none.
//   - At most one goroutine is searching the backlog at a time (woken and not yet holding a job),
//     and a searcher that finds it empty looks once more after it stops searching, so no dispatched
//     tick is stranded (TestAttemptPoolSearcherLooksAgain, TestAttemptPoolDispatchStrandsNoJob); a
//     goroutine goes idle after relayAfter jobs in a row only with a searcher on its way or the
//     backlog empty (TestAttemptPoolDispatchWakesOneSearcherPerRelay).
//   - No lock on a probe's path is shared by two shards: the scheduler's (held for at most one chunk
//     of a batch), the attempt pool's backlog and idle stack, the mailbox pool's queue. The tree's
//     own actors (probeManager, resultsCache, statusManager, syncLoop) are not on the per-probe path
//     unless a result changes.
//   - Time is read only through internal/clock: the schedulers through the tree's clock (a Fake in
//     tests), the pools' housekeeping (backlog rescue, idle sweep) through Config.Housekeeping, the
//     real clock by default, because a test holding a Fake still must not hold back a goroutine.
//   - After Stop no timer fires, and no goroutine of the executor is left.
//   - Every goroutine the executor starts carries profiler labels of its own (LabelActor on a
//     Runner, LabelPool on the pools' goroutines and their fallbacks), never its starter's
//     (TestGoroutinesCarryLabels): a profile's stages add up without double counting.
//
// Why S = GOMAXPROCS/2 shards rather than one scheduler or a shard per P: with one scheduler, at
// 1,000,000 workers on 16 cores every due worker passed through its mutex (44 % of the CPU in
// Reschedule, 25 % in lockSlow: issue 22), and on 2 procs the attempt pool's idle stack and the
// scheduler's mutex were all of the mutex profile (ARCHITECTURE.md, "Scaling across cores"). Each
// shard's scheduler wakes on its own grid while its workers are due, and on a 2-vCPU VM a wake-up of
// a parked goroutine costs tens of µs (internal/clock's doc): one shard per proc would pay S wake-ups
// per millisecond where one is enough at 10,000 workers, so one shard per two procs. Each shard's
// scheduler keeps its near deadlines in a timing wheel (O(1) per probe; internal/clock's doc says
// why and what it measured against the heap it replaced). Measured on 16 cores since
// (ARCHITECTURE.md, "16 cores, measured" and "measured again"): 1,000,000 workers at 1 s all probed
// on time (p99 2–3 ms) with 8 shards, at 0.26× kubelet-style's CPU per probe, the mutex wait left
// being each shard's own Reschedule; with 4 shards (8 procs) a shard's firing goroutine was 47 %
// busy and the schedule fell behind, in two runs of three.
//
// Backpressure: a shard's scheduler is paced (clock.WithPace) by the shard's queues. When the
// mailbox pool's queue or the attempt pool's backlog is half full, the batch stops and the rest of
// what is due fires at the next wake-up, in order: under overload the ticks wait, late, in the
// scheduler, where nothing grows, instead of overflowing the queue into a goroutine per activation.
package exec
