package exec

import (
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
