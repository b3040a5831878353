package actors

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

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

// Attempts do not wait for each other beyond backlogWait: blocked attempts delay a new one at most
// that long, a goroutine that finishes an attempt takes the next one (or one from the backlog), the
// pool shrinks back to maxIdle at once and to nothing within two attemptIdleTimeouts at rest
// (virtual time in a synctest bubble).
func TestAttemptPoolGrowsAndShrinks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxIdle = 2
		p := newAttemptPool(maxIdle)
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
		<-ran // while 20 attempts block: it waits in the backlog at most backlogWait
		assert.LessOrEqual(t, time.Since(start), backlogWait)

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
			time.Sleep(attemptIdleTimeout / 2)
			synctest.Wait()
			require.GreaterOrEqual(t, p.Idle(), 1)
		}
		time.Sleep(2 * attemptIdleTimeout)
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
		p := newAttemptPool(64)
		defer p.Stop()
		release := make(chan struct{})
		for range burst {
			p.Go(jobFunc(func() { <-release }))
		}
		time.Sleep(backlogWait) // virtual time: the backlog's rescue starts the rest
		synctest.Wait()
		close(release)
		synctest.Wait()
		require.Equal(t, burst, p.Idle(), "the burst's goroutines are idle")
		for range 300 { // 3 s: past two attemptIdleTimeouts
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
	p := newAttemptPool(1)
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

// Far more workers than pool goroutines, each with an attempt that blocks until cancelled: within
// backlogWait every attempt is in flight (attempts beyond the spare goroutines wait in the backlog
// at most that long), the workers still answer, and the tree stops (each stopping worker waits for
// its attempt).
func TestBlockedAttemptsDoNotStarveWorkers(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		const pods = 50
		var keys []messages.ProbeKey
		for i := range pods {
			name := fmt.Sprintf("c%d", i)
			h.prober.set(name, func(ctx context.Context) (probes.Outcome, error) {
				<-ctx.Done()
				return probes.Outcome{Result: probes.Unknown}, ctx.Err()
			})
			pod := testPod(fmt.Sprintf("slow-%d", i), v1.Container{Name: name, ReadinessProbe: execProbe(1, 1)})
			h.run(pod)
			keys = append(keys, messages.ProbeKey{PodUID: pod.UID, Container: name, Type: messages.Readiness})
		}
		synctest.Wait()
		for _, k := range keys {
			require.True(t, h.inspect(k).Busy)
		}
		time.Sleep(backlogWait) // virtual time: the backlog's rescue
		synctest.Wait()
		assert.Equal(t, pods, countAll(h.prober, pods), "one attempt per worker, all in flight at once")
	})
}

func countAll(p *scriptProber, n int) int {
	total := 0
	for i := range n {
		total += p.count(fmt.Sprintf("c%d", i))
	}
	return total
}
