package exec

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/internal/clock"
)

// Shards are dealt in turn, each with a Scheduler of its own (Pending sums them), jobs run on the
// shard they were given to, and Stop ends every goroutine (TestMain's goleak) and every timer: a
// timer pending at Stop never fires.
func TestExecutorShards(t *testing.T) {
	f := clock.NewFake(time.Unix(0, 0))
	x := New(Config{Clock: f, Shards: 3})
	require.Len(t, x.Shards(), 3)
	var got []*Shard
	for range 7 {
		got = append(got, x.Next())
	}
	sh := x.Shards()
	assert.Equal(t, []*Shard{sh[0], sh[1], sh[2], sh[0], sh[1], sh[2], sh[0]}, got, "in turn")

	fired := make(chan int, 3)
	for i, s := range sh {
		s.Sched.After(time.Duration(i+1)*time.Second, func() { fired <- i })
	}
	sh[2].Sched.After(time.Hour, func() { t.Error("a timer pending at Stop fired") })
	assert.Equal(t, 4, x.Pending())
	f.Advance(3 * time.Second)
	assert.Equal(t, []int{0, 1, 2}, []int{<-fired, <-fired, <-fired}, "each shard's timer, in deadline order")
	assert.Equal(t, 1, x.Pending())

	var wg sync.WaitGroup
	wg.Add(len(sh) * 2)
	for _, s := range sh {
		s.Go(jobFunc(wg.Done))
		s.Schedule(jobFunc(wg.Done))
	}
	wg.Wait()
	wake := x.Runner("test")
	ran := make(chan struct{})
	m := &Mailbox{Owner: &runnerOwner{wake: wake}}
	m.RegisterHandlers(invokerFunc(func(any) { close(ran) }), nil)
	m.Post(1)
	<-ran

	x.Stop()
	x.Stop() // idempotent
	assert.Zero(t, x.Pending(), "Stop cancels every timer")
	f.Advance(2 * time.Hour)
	done := make(chan struct{})
	sh[0].Go(jobFunc(func() { close(done) })) // after Stop: a goroutine of its own
	<-done
}

// DefaultShards: one per two procs, at least one.
func TestDefaultShards(t *testing.T) {
	for procs, want := range map[int]int{1: 1, 2: 1, 3: 1, 4: 2, 8: 4, 16: 8, 64: 32} {
		assert.Equal(t, want, DefaultShards(procs), "procs=%d", procs)
	}
}

type runnerOwner struct{ wake func(*Mailbox) }

func (o *runnerOwner) Schedule(m *Mailbox)    { o.wake(m) }
func (o *runnerOwner) Signal(any) bool        { return false }
func (o *runnerOwner) Failed(any, any)        {}
func (o *runnerOwner) RestartsOnResume() bool { return false }

// tickRecorder is a callback that is also a Job (a worker's tick): it records how it was delivered.
type tickRecorder struct {
	mu  sync.Mutex
	got []string
}

func (r *tickRecorder) add(s string) { r.mu.Lock(); r.got = append(r.got, s); r.mu.Unlock() }
func (r *tickRecorder) Run()         { r.add("run") }
func (r *tickRecorder) Fire()        { r.add("fire") }
func (r *tickRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

// A shard's scheduler queues a due Job callback for the attempt pool's goroutines, which run it:
// started for it when none is alive, or the idle one; it fires the callback on the scheduler's
// goroutine once the pool is stopped, as it does any callback that is not a Job.
func TestShardDispatchesTicksToIdleAttemptGoroutines(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		f := clock.NewFake(time.Unix(0, 0))
		x := New(Config{Clock: f, Shards: 1})
		sh := x.Shards()[0]
		tick := &tickRecorder{}

		require.Zero(t, sh.IdleAttempts())
		sh.Sched.Reschedule(clock.Handle{}, f.Now().Add(time.Second), tick)
		f.Advance(time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"run"}, tick.take(), "no goroutine alive: one is started and runs it")
		require.Equal(t, 1, sh.IdleAttempts(), "and waits idle")

		sh.Sched.Reschedule(clock.Handle{}, f.Now().Add(time.Second), tick)
		f.Advance(time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"run"}, tick.take(), "run by the idle goroutine")
		assert.Equal(t, 1, sh.IdleAttempts(), "which is idle again: none was started")

		plain := false
		sh.Sched.At(f.Now().Add(time.Second), func() { plain = true })
		f.Advance(time.Second)
		assert.True(t, plain, "a callback that is not a Job fires")
		assert.Equal(t, 1, sh.IdleAttempts(), "and leaves the idle goroutine idle")

		sh.attempts.Stop()
		sh.Sched.Reschedule(clock.Handle{}, f.Now().Add(time.Second), tick)
		f.Advance(time.Second)
		assert.Equal(t, []string{"fire"}, tick.take(), "the pool stopped: the callback fires")
		x.Stop()
	})
}
