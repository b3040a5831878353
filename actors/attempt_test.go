package actors

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The reusable attempt context behaves as a context to children the prober derives from it: they end
// when it is cancelled, a child derived after the cancellation ends at once, and no goroutine is
// started for a child (synctest fails the test on any left behind).
func TestAttemptContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c attemptCtx
		child, cancelChild := context.WithTimeout(&c, time.Hour)
		grand, cancelGrand := context.WithCancel(child)
		defer cancelGrand()
		require.NoError(t, child.Err())
		kept, cancelKept := context.WithCancel(&c)
		cancelKept() // a child cancelled by the prober leaves no registration behind
		assert.ErrorIs(t, kept.Err(), context.Canceled)
		c.mu.Lock()
		assert.Len(t, c.afters, 1, "only the live child is registered")
		c.mu.Unlock()

		c.cancel()
		assert.ErrorIs(t, c.Err(), context.Canceled)
		assert.ErrorIs(t, child.Err(), context.Canceled, "cancelled with the attempt, at once")
		assert.ErrorIs(t, grand.Err(), context.Canceled)
		<-c.Done()
		cancelChild()

		late, cancelLate := context.WithCancel(&c) // derived from the cancelled context: ends too
		synctest.Wait()
		assert.ErrorIs(t, late.Err(), context.Canceled)
		cancelLate()

		assert.ErrorIs(t, c.Err(), context.Canceled, "cancelled for good: the slot gets a new context")
	})
}

type wrapKey struct{}

// A slot's context is reused while live and replaced once cancelled: a child derived through a
// wrapper (probes/exec.go: context.WithTimeout(context.WithValue(ctx, …))) is watched by a goroutine
// of the context package, which may read the context's Err after the slot went back to the pool; a
// context made live again then handed it nil and the context package panicked ("missing cancel
// error", a node crash in a soak).
func TestAReleasedSlotNeverRevivesACancelledContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := &executors{slots: sync.Pool{New: func() any { return &attemptSlot{ctx: new(attemptCtx)} }}}
		s := x.slots.Get().(*attemptSlot)
		live := s.ctx
		x.releaseSlot(s) // an attempt that finished: the context is kept
		require.Same(t, live, s.ctx)

		child, cancelChild := context.WithTimeout(context.WithValue(s.ctx, wrapKey{}, 1), time.Hour)
		s.ctx.cancel() // the worker abandons the attempt
		cancelChild()  // and the prober returns
		x.releaseSlot(s)
		assert.NotSame(t, live, s.ctx, "a cancelled context is replaced")
		assert.ErrorIs(t, live.Err(), context.Canceled, "and stays cancelled for whoever still watches it")
		assert.ErrorIs(t, child.Err(), context.Canceled)
		require.NoError(t, s.ctx.Err(), "the slot's new context is live")
		synctest.Wait() // the context package's watcher goroutine has ended (without a panic)
	})
}

// The same, many times over with the context package's watcher goroutines racing the slot's reuse:
// with contexts revived on release, this panicked within milliseconds.
func TestCancelledSlotsChurnWithoutAPanic(t *testing.T) {
	x := &executors{slots: sync.Pool{New: func() any { return &attemptSlot{ctx: new(attemptCtx)} }}}
	var children []context.Context
	for range 5000 {
		s := x.slots.Get().(*attemptSlot)
		child, cancel := context.WithTimeout(context.WithValue(s.ctx, wrapKey{}, 1), time.Hour)
		s.ctx.cancel()
		cancel()
		x.releaseSlot(s)
		children = append(children, child)
	}
	for _, c := range children {
		<-c.Done() // every child ended; a watcher that read a revived context would have panicked
	}
}
