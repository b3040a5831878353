package exec

import (
	"context"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"

	"github.com/probeactor/probeactor/internal/clock"
)

// Executor runs one tree: its shards, and a Runner per tree actor. protoactor's default dispatcher
// starts a new goroutine for every mailbox activation, and each one at once outgrows its initial
// stack (protoactor's call depth): at 100,000 probes/s, goroutine start-up and stack growth were a
// third of the actor core's CPU. Worker mailboxes and probe attempts therefore run on long-lived
// goroutines whose stacks are already grown. Mailboxes and attempts have separate pools because a
// worker waits for its cancelled attempt when it stops: on one shared pool, workers waiting for
// attempts could occupy every goroutine the attempts need.
type Executor struct {
	shards []*Shard
	next   atomic.Uint32

	quit    chan struct{} // closed by Stop: runners end
	runners sync.WaitGroup
	once    sync.Once
}

// Profiler labels on the executor's goroutines. A goroutine inherits its creator's labels, so every
// goroutine the executor starts sets its own: without that, a worker mailbox run on a fallback
// goroutine by probeManager's spawn would count as probeManager's.
const (
	LabelActor = "actor" // a Runner's: the tree actor's name
	LabelPool  = "exec"  // a pool goroutine's: "mailboxes" or "attempts"
)

var (
	mailboxLabels = pprof.WithLabels(context.Background(), pprof.Labels(LabelPool, "mailboxes"))
	attemptLabels = pprof.WithLabels(context.Background(), pprof.Labels(LabelPool, "attempts"))
)

// goLabeled runs j on a new goroutine that carries labels.
func goLabeled(labels context.Context, j Job) {
	go func() {
		pprof.SetGoroutineLabels(labels)
		j.Run()
	}()
}

// Shard is the part of an Executor a worker lives on for its whole life (Executor.Next deals them
// out in turn): a Scheduler for its timer, a mailbox pool for its mailbox and an attempt pool for its
// probes, each with a lock of its own. Nothing on a probe's path (the timer firing, the tick handed
// to an attempt goroutine, the probe, the reschedule, the goroutine going idle) takes a lock that
// another shard's workers take.
type Shard struct {
	// Sched runs the timers of this shard's workers.
	Sched     *clock.Scheduler
	mailboxes *mailboxPool
	attempts  *attemptPool
}

// Config sizes an Executor. Zero values take the defaults, derived from GOMAXPROCS.
type Config struct {
	// Clock drives the shards' Schedulers (the tree's clock: a *clock.Fake in tests).
	Clock clock.Clock
	// Shards is the number of shards (default DefaultShards()).
	Shards int
	// Housekeeping drives the attempt pools' backlog rescue and idle sweeps: goroutine bookkeeping,
	// not probe time, so it is the real clock even when Clock is a Fake (a test that holds the fake
	// clock still must not hold back an attempt waiting in a backlog). Default clock.Real().
	Housekeeping clock.Clock
}

// DefaultShards is the number of shards for GOMAXPROCS procs: one per two procs (at least one).
//
// Why not one per proc: each shard's Scheduler wakes on its own 1 ms grid while probes are due, and
// a wake-up of a parked goroutine is the dominant cost of a sparse schedule (tens of µs of CPU on a
// 2-vCPU VM: clock.doc). One shard per two procs keeps the contention on any shard's locks to about
// two procs, which the 2-proc measurements (ARCHITECTURE.md, "Scaling across cores") show costs less
// than the extra wake-ups would.
func DefaultShards(procs int) int { return max(1, procs/2) }

// New starts an Executor. Its goroutines run until Stop.
func New(cfg Config) *Executor {
	procs := max(2, runtime.GOMAXPROCS(0))
	if cfg.Shards <= 0 {
		cfg.Shards = DefaultShards(procs)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if cfg.Housekeeping == nil {
		cfg.Housekeeping = clock.Real()
	}
	n := cfg.Shards
	x := &Executor{shards: make([]*Shard, n), quit: make(chan struct{})}
	for i := range x.shards {
		sh := &Shard{
			mailboxes: newMailboxPool(max(2, procs/n)),
			attempts: newAttemptPool(cfg.Housekeeping, max(idlePerProc, idlePerProc*procs/n),
				max(2, 2*procs/n)),
		}
		sh.Sched = clock.NewScheduler(cfg.Clock, clock.WithPace(sh.keepsUp), clock.WithDispatch(sh.dispatch))
		x.shards[i] = sh
	}
	return x
}

// idlePerProc: idle attempt goroutines kept per proc (256 on 2 procs in all, ~2 MB of stacks). The
// scheduler wakes workers in bursts (every worker due in the same instant), and a mailbox goroutine
// starts a burst's attempts faster than they finish: with 8 idle goroutines, most attempts at
// 100,000 probes/s still started a goroutine and grew its stack (15 % of CPU); with 256, under 2 %.
// The LIFO hand-off keeps only as many as the bursts use.
const idlePerProc = 128

// Next returns the shard for a new worker: the shards in turn, so that they hold equal numbers.
func (x *Executor) Next() *Shard {
	return x.shards[int(x.next.Add(1)-1)%len(x.shards)]
}

// Shards returns the executor's shards (tests, metrics).
func (x *Executor) Shards() []*Shard { return x.shards }

// Pending is the number of timers pending in all shards' Schedulers.
func (x *Executor) Pending() int {
	n := 0
	for _, s := range x.shards {
		n += s.Sched.Len()
	}
	return n
}

// Go runs the attempt j on an idle goroutine of the shard's attempt pool, or a new one; it never
// blocks and never waits for another attempt for more than BacklogWait.
func (s *Shard) Go(j Job) { s.attempts.Go(j) }

// keepsUp is the shard's scheduler's pace (clock.WithPace): false while the mailbox pool's queue or
// the attempt pool's backlog is half full. Under overload (more due than the cores can probe) the
// workers' ticks then wait in the scheduler, late, instead of overflowing the queue into a goroutine
// per activation: at 1,000,000 workers on 2 cores, once the timing wheel made the scheduler fast
// enough to outrun the pools, that overflow took a tenth of the CPU and 300-600 bytes of stack per
// worker, and cut the probes done by a third (ARCHITECTURE.md, "Scaling across cores").
func (s *Shard) keepsUp() bool {
	return len(s.mailboxes.queue) < mailboxQueue/2 && len(s.attempts.backlog) < backlogCap/2
}

// dispatch is the shard's scheduler's dispatch (clock.WithDispatch): a due callback that is also a
// Job (a worker's tick) is queued for the attempt pool's goroutines, which run it (attemptPool.Dispatch:
// one goroutine woken per burst, not one per tick); when the pool is stopped or its queue full, or
// for any other callback, the callback fires on the scheduler's goroutine. The firing goroutine, the
// shard's serial stage, hands the tick over without reading the worker: at 1,000,000 workers probed
// in random order, reading it there cost a cache miss per tick on that goroutine.
func (s *Shard) dispatch(c clock.Callback) {
	if j, ok := c.(Job); ok && s.attempts.Dispatch(j) {
		return
	}
	c.Fire()
}

// Schedule runs m (a mailbox activation) on the shard's mailbox pool; it never blocks.
func (s *Shard) Schedule(m Job) { s.mailboxes.schedule(m) }

// IdleAttempts is the number of the shard's attempt goroutines waiting for work (tests).
func (s *Shard) IdleAttempts() int { return s.attempts.Idle() }

// Runner starts a goroutine of its own for the mailbox of one of the tree's actors (probeManager,
// statusManager, resultsCache, syncLoop): each of them is one stage of the pod pipeline, so it gets
// a long-lived goroutine, woken when its mailbox has work, rather than a new goroutine (and a new
// stack to grow) per activation or a place in the workers' queue. It ends when the Executor stops;
// wake then runs the mailbox on a goroutine of its own, as protoactor's default dispatcher does.
//
// The goroutine carries the profiler label actor=name, so that a CPU profile gives each stage's
// whole cost, its mailbox's share and the collector's assists included (go tool pprof -tagfocus
// actor=probeManager): the stages' figures in ARCHITECTURE.md's set-up analyses.
func (x *Executor) Runner(name string) (wake func(*Mailbox)) {
	ch := make(chan *Mailbox, 1) // one activation at a time: at most one wake-up is pending
	x.runners.Add(1)
	labels := pprof.WithLabels(context.Background(), pprof.Labels(LabelActor, name))
	go func() {
		defer x.runners.Done()
		pprof.SetGoroutineLabels(labels)
		for {
			select {
			case m := <-ch:
				m.Run()
			case <-x.quit:
				return
			}
		}
	}()
	return func(m *Mailbox) {
		select {
		case ch <- m:
		case <-x.quit:
			go m.Run()
		}
	}
}

// StopTimers stops every shard's Scheduler and waits for their goroutines: no timer fires after it.
func (x *Executor) StopTimers() {
	for _, s := range x.shards {
		s.Sched.Stop()
	}
	for _, s := range x.shards {
		s.Sched.Wait()
	}
}

// Stop stops the timers, then both pools of every shard (running what is queued and waiting for
// busy attempts) and the runners, and waits for their goroutines. Idempotent. It must be called
// when no worker is left (a worker's attempt would otherwise run on a plain goroutine).
func (x *Executor) Stop() {
	x.StopTimers()
	for _, s := range x.shards {
		s.attempts.Stop()
	}
	for _, s := range x.shards {
		s.mailboxes.Stop()
	}
	x.once.Do(func() { close(x.quit) })
	x.runners.Wait()
}
