package clock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestFakeRunsCallbacksInDeadlineOrderWithTiesFIFO(t *testing.T) {
	f := NewFake(epoch)
	var got []string
	var seenNow []time.Duration
	add := func(name string, d time.Duration) {
		f.AfterFunc(d, func() {
			got = append(got, name)
			seenNow = append(seenNow, f.Now().Sub(epoch))
		})
	}
	add("c", 3*time.Second)
	add("a1", 1*time.Second)
	add("b", 2*time.Second)
	add("a2", 1*time.Second)
	add("late", 10*time.Second)
	require.Equal(t, 5, f.Pending())

	f.Advance(3 * time.Second)
	assert.Equal(t, []string{"a1", "a2", "b", "c"}, got)
	assert.Equal(t, []time.Duration{time.Second, time.Second, 2 * time.Second, 3 * time.Second}, seenNow)
	assert.Equal(t, epoch.Add(3*time.Second), f.Now())
	assert.Equal(t, 1, f.Pending())
}

func TestFakeAdvanceRunsCallbacksScheduledWhileAdvancing(t *testing.T) {
	f := NewFake(epoch)
	var fired []time.Duration
	var tick func()
	tick = func() {
		fired = append(fired, f.Now().Sub(epoch))
		f.AfterFunc(time.Second, tick)
	}
	f.AfterFunc(time.Second, tick)
	f.Advance(3500 * time.Millisecond)
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, fired)
	assert.Equal(t, 1, f.Pending(), "the 4 s tick stays pending")
	next, ok := f.Next()
	require.True(t, ok)
	assert.Equal(t, epoch.Add(4*time.Second), next)
}

func TestFakeStopAndReset(t *testing.T) {
	f := NewFake(epoch)
	ran := 0
	tm := f.AfterFunc(time.Second, func() { ran++ })
	assert.True(t, tm.Stop())
	assert.False(t, tm.Stop(), "second Stop reports not pending")
	f.Advance(2 * time.Second)
	assert.Equal(t, 0, ran)

	r, ok := tm.(interface{ Reset(time.Duration) bool })
	require.True(t, ok)
	assert.False(t, r.Reset(time.Second), "was not pending")
	assert.True(t, r.Reset(2*time.Second), "pending after the first Reset")
	f.Advance(time.Second)
	assert.Equal(t, 0, ran, "Reset moved the deadline to +2 s")
	f.Advance(time.Second)
	assert.Equal(t, 1, ran)
	assert.False(t, tm.Stop(), "already ran")
}

// AfterFuncAt runs f at a time, not after a delay: on a Fake that has moved on since the deadline
// was chosen it is still due at the deadline (at once if that has passed); on the real clock it
// fires too.
func TestAfterFuncAt(t *testing.T) {
	f := NewFake(epoch)
	f.Advance(3 * time.Second)
	var ran []time.Duration
	AfterFuncAt(f, epoch.Add(5*time.Second), func() { ran = append(ran, f.Now().Sub(epoch)) })
	next, ok := f.Next()
	require.True(t, ok)
	assert.Equal(t, epoch.Add(5*time.Second), next, "due at the deadline, not 5 s from now")
	AfterFuncAt(f, epoch.Add(time.Second), func() { ran = append(ran, f.Now().Sub(epoch)) })
	f.Advance(0)
	assert.Equal(t, []time.Duration{3 * time.Second}, ran, "a deadline passed already: at the next Advance")
	tm := AfterFuncAt(f, epoch.Add(4*time.Second), func() { ran = append(ran, -1) })
	assert.True(t, tm.Stop())
	f.Advance(2 * time.Second)
	assert.Equal(t, []time.Duration{3 * time.Second, 5 * time.Second}, ran)

	done := make(chan struct{})
	AfterFuncAt(Real(), time.Now().Add(time.Millisecond), func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("AfterFuncAt on the real clock did not fire")
	}
}

func TestFakeZeroAndNegativeDurations(t *testing.T) {
	f := NewFake(epoch)
	ran := 0
	f.AfterFunc(-time.Second, func() { ran++ })
	f.AfterFunc(0, func() { ran++ })
	assert.Equal(t, 0, ran, "nothing runs outside Advance")
	f.Advance(-time.Second)
	assert.Equal(t, 2, ran)
	assert.Equal(t, epoch, f.Now(), "negative Advance does not move time back")
}

func TestFakeSetAndAdvanceToNext(t *testing.T) {
	f := NewFake(epoch)
	assert.False(t, f.AdvanceToNext())
	ran := 0
	f.AfterFunc(5*time.Second, func() { ran++ })
	require.True(t, f.AdvanceToNext())
	assert.Equal(t, 1, ran)
	assert.Equal(t, epoch.Add(5*time.Second), f.Now())
	f.Set(epoch)
	assert.Equal(t, epoch.Add(5*time.Second), f.Now(), "Set never moves time backwards")
	f.Set(epoch.Add(time.Minute))
	assert.Equal(t, epoch.Add(time.Minute), f.Now())
}

func TestFakeWaitPending(t *testing.T) {
	f := NewFake(epoch)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- f.WaitPending(ctx, 2)
	}()
	f.AfterFunc(time.Second, func() {})
	f.AfterFunc(time.Second, func() {})
	require.NoError(t, <-done)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, f.WaitPending(ctx, 3), context.Canceled)
}

func TestJitter(t *testing.T) {
	assert.Equal(t, 250*time.Millisecond, Jitter(time.Second, func() float64 { return 0.25 }))
	assert.Equal(t, time.Duration(0), Jitter(0, func() float64 { return 0.5 }))
	assert.Equal(t, time.Duration(0), Jitter(time.Second, nil))
	for range 100 {
		j := Jitter(time.Second, DefaultRand())
		require.GreaterOrEqual(t, j, time.Duration(0))
		require.Less(t, j, time.Second)
	}
}

func TestRealClock(t *testing.T) {
	c := Real()
	before := time.Now()
	assert.False(t, c.Now().Before(before))
	fired := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(fired) })
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("real AfterFunc did not fire within 10 s")
	}
	tm := c.AfterFunc(time.Hour, func() { t.Error("stopped timer fired") })
	assert.True(t, tm.Stop())
}
