package exec

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/probeactor/probeactor/internal/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// jobFunc runs a function as a Job.
type jobFunc func()

func (f jobFunc) Run() { f() }

// inBubble runs f in a synctest bubble: virtual time, and every goroutine f leaves must end.
func inBubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, f)
}

// within fails the test unless ch is closed within d of (the bubble's virtual) time: a pool that
// hangs fails the test instead of hanging it.
func within(t *testing.T, d time.Duration, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not done within %v", what, d)
	}
}

// signal closes a channel when f returns.
func signal(f func()) <-chan struct{} {
	ch := make(chan struct{})
	go func() { f(); close(ch) }()
	return ch
}

func TestMailboxPoolRunsEverything(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		p := newMailboxPool(2)
		var wg sync.WaitGroup
		const n = 1000
		wg.Add(n)
		for range n {
			p.schedule(jobFunc(wg.Done))
		}
		within(t, time.Second, signal(wg.Wait), "every scheduled activation runs")
		within(t, time.Second, signal(p.Stop), "Stop")
		p.Stop() // idempotent
		done := make(chan struct{})
		p.schedule(jobFunc(func() { close(done) })) // after Stop: a goroutine of its own
		within(t, time.Second, done, "an activation after Stop runs")
	})
}

// schedule never blocks, even when every pool goroutine is stuck and the queue is full.
func TestMailboxPoolNeverBlocks(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		p := newMailboxPool(2)
		release := make(chan struct{})
		var stuck sync.WaitGroup
		stuck.Add(2)
		for range 2 {
			p.schedule(jobFunc(func() { stuck.Done(); <-release }))
		}
		within(t, time.Second, signal(stuck.Wait), "both pool goroutines are stuck")
		ran := make(chan struct{})
		within(t, time.Second, signal(func() {
			for range mailboxQueue {
				p.schedule(jobFunc(func() {}))
			}
			p.schedule(jobFunc(func() { close(ran) })) // the queue is full: it must not wait for the stuck goroutines
		}), "scheduling onto a full queue")
		within(t, time.Second, ran, "the activation past the full queue runs")
		close(release)
		within(t, time.Second, signal(p.Stop), "Stop")
	})
}

// Attempts do not wait for each other beyond BacklogWait: blocked attempts delay a new one at most
// that long, a goroutine that finishes an attempt takes the next one (or one from the backlog), the
// pool shrinks back to maxIdle at once and to nothing within two AttemptIdleTimeouts at rest
// (virtual time in a synctest bubble).
func TestAttemptPoolGrowsAndShrinks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxIdle = 2
		p := newAttemptPool(clock.Real(), maxIdle, 4)
		defer p.Stop()

		p.Go(jobFunc(func() {}))
		synctest.Wait()
		require.Equal(t, 1, p.Idle())
		release := make(chan struct{})
		p.Go(jobFunc(func() { <-release }))
		synctest.Wait()
		assert.Equal(t, 0, p.Idle(), "the idle goroutine took the attempt (a new goroutine would leave it idle)")

		const blocked = 20
		for range blocked - 1 {
			p.Go(jobFunc(func() { <-release }))
		}
		ran := make(chan struct{})
		start := time.Now()
		p.Go(jobFunc(func() { close(ran) }))
		<-ran // while 20 attempts block: it waits in the backlog at most BacklogWait
		assert.LessOrEqual(t, time.Since(start), BacklogWait)

		// A goroutine that finishes takes a waiting attempt from the backlog.
		quick := make(chan struct{})
		p.Go(jobFunc(func() { <-quick }))
		p.Go(jobFunc(func() {})) // all busy again: into the backlog
		close(quick)
		synctest.Wait()
		assert.Zero(t, len(p.backlog), "the finished goroutine took the backlogged attempt")

		close(release)
		synctest.Wait()
		assert.Equal(t, maxIdle, p.Idle(), "the rest ended as soon as they finished")
		for range 6 { // one attempt every half timeout: a goroutine that works stays
			p.Go(jobFunc(func() {}))
			time.Sleep(AttemptIdleTimeout / 2)
			synctest.Wait()
			require.GreaterOrEqual(t, p.Idle(), 1)
		}
		time.Sleep(2 * AttemptIdleTimeout)
		synctest.Wait()
		assert.Equal(t, 0, p.Idle(), "no goroutine at rest")
		done := make(chan struct{})
		p.Go(jobFunc(func() { close(done) })) // and it grows again
		<-done
	})
}

// The hand-off is LIFO: after a burst of 32 slow attempts, a steady trickle of quick ones (one
// every 10 ms, each done before the next) keeps one goroutine working while the 31 others reach
// their retire timeout. (A FIFO hand-off would pass the trickle round all 32 and keep every one.)
func TestAttemptPoolKeepsOnlyTheGoroutinesItUses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const burst = 32
		p := newAttemptPool(clock.Real(), 64, 4)
		defer p.Stop()
		release := make(chan struct{})
		for range burst {
			p.Go(jobFunc(func() { <-release }))
		}
		time.Sleep(BacklogWait) // virtual time: the backlog's rescue starts the rest
		synctest.Wait()
		close(release)
		synctest.Wait()
		require.Equal(t, burst, p.Idle(), "the burst's goroutines are idle")
		for range 300 { // 3 s: past two AttemptIdleTimeouts
			p.Go(jobFunc(func() {}))
			time.Sleep(10 * time.Millisecond)
			synctest.Wait()
		}
		assert.Equal(t, 1, p.Idle(), "only the goroutine the trickle uses stays")
		assert.Equal(t, int32(1), p.live.Load())
	})
}

func TestAttemptPoolStopWaitsForBusyAttempts(t *testing.T) {
	inBubble(t, func(t *testing.T) { attemptPoolStopWaitsForBusyAttempts(t) })
}

func attemptPoolStopWaitsForBusyAttempts(t *testing.T) {
	p := newAttemptPool(clock.Real(), 1, 4)
	release := make(chan struct{})
	finished := make(chan struct{})
	started := make(chan struct{})
	p.Go(jobFunc(func() { close(started); <-release; close(finished) }))
	<-started
	stopped := make(chan struct{})
	go func() { p.Stop(); close(stopped) }()
	close(release)
	<-stopped
	select {
	case <-finished:
	default:
		t.Fatal("Stop returned before the busy attempt finished")
	}
	done := make(chan struct{})
	p.Go(jobFunc(func() { close(done) })) // after Stop: a goroutine of its own
	<-done
}

// A shard's scheduler is paced by its pools: keepsUp says no while the mailbox queue or the attempt
// backlog is half full, and yes again once they drain.
func TestShardKeepsUpUntilAQueueIsHalfFull(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		release := make(chan struct{})
		blocked := jobFunc(func() { <-release })
		sh := &Shard{mailboxes: newMailboxPool(1), attempts: newAttemptPool(clock.Real(), 4, 1)}
		assert.True(t, sh.keepsUp(), "empty queues")

		sh.mailboxes.schedule(blocked) // the pool's one goroutine is stuck: the queue fills
		synctest.Wait()
		for range mailboxQueue/2 - 1 {
			sh.mailboxes.schedule(jobFunc(func() {}))
		}
		assert.True(t, sh.keepsUp(), "a queue under half full")
		sh.mailboxes.schedule(jobFunc(func() {}))
		assert.False(t, sh.keepsUp(), "the mailbox queue half full")
		close(release)
		synctest.Wait()
		assert.True(t, sh.keepsUp(), "drained")

		hold := make(chan struct{})
		sh.attempts.Go(jobFunc(func() { <-hold })) // the one spare goroutine is busy: the rest wait
		for range backlogCap / 2 {
			sh.attempts.Go(jobFunc(func() {}))
		}
		assert.False(t, sh.keepsUp(), "the attempt backlog half full")
		close(hold)
		synctest.Wait()
		time.Sleep(2 * BacklogWait) // the rescue, in virtual time
		synctest.Wait()
		assert.True(t, sh.keepsUp(), "the backlog drained")
		sh.mailboxes.Stop()
		sh.attempts.Stop()
	})
}

// idleGoroutines leaves n goroutines idle on p's stack (p keeps at least n idle and is otherwise
// unused), in virtual time.
func idleGoroutines(t *testing.T, p *attemptPool, n int) {
	t.Helper()
	release := make(chan struct{})
	for range n {
		p.Go(jobFunc(func() { <-release }))
	}
	time.Sleep(BacklogWait) // the backlog's rescue starts the rest
	synctest.Wait()
	close(release)
	synctest.Wait()
	require.Equal(t, n, p.Idle())
}

// Dispatched jobs (a shard's ticks) wait for nothing but a goroutine's wake-up while goroutines are
// idle: every goroutine that takes one wakes a searcher for the next before it runs its own, so a
// burst of jobs that block runs on a goroutine each, at once. With every goroutine busy and none
// to be started, a job runs within BacklogWait (the rescue); with the backlog full or the pool
// stopped, Dispatch refuses it, and the caller fires the tick instead.
func TestAttemptPoolDispatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = 32
		p := newAttemptPool(clock.Real(), 64, 4)

		ran := make(chan struct{})
		require.True(t, p.Dispatch(jobFunc(func() { close(ran) })))
		<-ran // no goroutine alive: one is started for it
		synctest.Wait()
		require.Equal(t, 1, p.Idle())
		idleGoroutines(t, p, idle)

		release := make(chan struct{})
		var started sync.WaitGroup
		started.Add(idle)
		start := time.Now()
		for range idle {
			require.True(t, p.Dispatch(jobFunc(func() { started.Done(); <-release })))
		}
		within(t, time.Second, signal(started.Wait), "a burst of blocking jobs starts")
		assert.Zero(t, time.Since(start), "on the idle goroutines, not by the rescue")
		assert.Zero(t, p.Idle())

		ran = make(chan struct{})
		start = time.Now()
		require.True(t, p.Dispatch(jobFunc(func() { close(ran) })))
		synctest.Wait()
		select {
		case <-ran:
			t.Fatal("ran with every goroutine busy and live >= spare: no goroutine should have been started")
		default:
		}
		<-ran // the rescue
		assert.Equal(t, BacklogWait, time.Since(start), "a job waits at most BacklogWait")

		// The goroutine the rescue gave that job is idle again, and takes one job off the backlog.
		queued := 0
		for p.Dispatch(jobFunc(func() { <-release })) {
			queued++
			require.LessOrEqual(t, queued, backlogCap+1, "Dispatch refuses a job once the backlog is full")
		}
		assert.Equal(t, backlogCap, len(p.backlog), "refused only when the backlog is full")
		close(release)
		synctest.Wait()
		time.Sleep(BacklogWait)
		synctest.Wait()
		assert.Zero(t, len(p.backlog))
		p.Stop()
		assert.False(t, p.Dispatch(jobFunc(func() {})), "the pool is stopped")
	})
}

// A burst of quick jobs wakes a goroutine per relayAfter jobs, not one per job: with a single proc
// the dispatching goroutine queues the whole burst before the first searcher runs; each goroutine
// that takes a job with more queued wakes the next searcher, which waits for the proc, and after
// relayAfter jobs in a row hands the backlog on to it and goes idle. (Without the one-searcher rule,
// a goroutine woken per job, it woke all 64 idle ones here; without the relay, 2, and those two
// would have drained any backlog for as long as it lasted.)
func TestAttemptPoolDispatchWakesOneSearcherPerRelay(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		p := newAttemptPool(clock.Real(), 256, 4)
		defer p.Stop()
		idleGoroutines(t, p, 64)
		const burst = 5 * relayAfter
		var ran sync.WaitGroup
		ran.Add(burst)
		before := p.searchers.Load()
		for range burst {
			require.True(t, p.Dispatch(jobFunc(ran.Done)))
		}
		within(t, time.Second, signal(ran.Wait), "the burst runs")
		synctest.Wait()
		woken := p.searchers.Load() - before
		assert.GreaterOrEqual(t, woken, uint64(burst/relayAfter), "a searcher per relay")
		assert.LessOrEqual(t, woken, uint64(burst/relayAfter+3), "searchers woken for a burst of %d quick jobs", burst)
	})
}

// A job dispatched while a searcher that found the backlog empty has not yet said so (its Dispatch
// sees a searcher and wakes nobody) is taken by the searcher's second look, not stranded: no rescue
// is armed while goroutines are idle.
func TestAttemptPoolSearcherLooksAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newAttemptPool(clock.Real(), 8, 2)
		defer p.Stop()
		idleGoroutines(t, p, 1)
		ran := make(chan struct{})
		testHookSearchedEmpty = func() {
			testHookSearchedEmpty = nil
			require.True(t, p.Dispatch(jobFunc(func() { close(ran) })))
		}
		defer func() { testHookSearchedEmpty = nil }()
		p.mu.RLock()
		p.kick() // a searcher for a backlog that is empty by the time it looks
		p.mu.RUnlock()
		within(t, time.Second, ran, "the job dispatched in the window")
		synctest.Wait()
		assert.Equal(t, 1, p.Idle())
		assert.False(t, p.searching.Load())
	})
}

// No dispatched job is stranded: a searcher that finds the backlog empty says it is no longer
// searching and then looks again, so a job queued in between (whose Dispatch saw a searcher and
// woke nobody) is taken. Bursts of random sizes from one goroutine, against goroutines finishing
// and going idle on the other proc; a stranded job would leave wg.Wait waiting (no rescue is armed
// while goroutines are idle).
func TestAttemptPoolDispatchStrandsNoJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newAttemptPool(clock.Real(), 8, 2)
		defer p.Stop()
		rng := rand.New(rand.NewPCG(1, 2))
		for round := range 2000 {
			var wg sync.WaitGroup
			n := 1 + rng.IntN(8)
			wg.Add(n)
			for range n {
				yield := rng.IntN(2) == 0
				require.True(t, p.Dispatch(jobFunc(func() {
					if yield {
						runtime.Gosched()
					}
					wg.Done()
				})))
			}
			within(t, 10*time.Millisecond, signal(wg.Wait), fmt.Sprintf("round %d's %d jobs", round, n))
		}
	})
}
