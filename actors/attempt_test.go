package actors

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type wrapKey struct{}

// A slot's context is reused while live and replaced once cancelled: a child derived through a
// wrapper (probes/exec.go: context.WithTimeout(context.WithValue(ctx, …))) is watched by a goroutine
// of the context package, which may read the context's Err after the slot went back to the pool; a
// context made live again then handed it nil and the context package panicked ("missing cancel
// error", a node crash in a soak).
func TestAReleasedSlotNeverRevivesACancelledContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newSlotPool()
		s := x.get()
		live := s.ctx
		x.release(s) // an attempt that finished: the context is kept
		require.Same(t, live, s.ctx)

		child, cancelChild := context.WithTimeout(context.WithValue(s.ctx, wrapKey{}, 1), time.Hour)
		s.ctx.Cancel() // the worker abandons the attempt
		cancelChild()  // and the prober returns
		x.release(s)
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
	x := newSlotPool()
	var children []context.Context
	for range 5000 {
		s := x.get()
		child, cancel := context.WithTimeout(context.WithValue(s.ctx, wrapKey{}, 1), time.Hour)
		s.ctx.Cancel()
		cancel()
		x.release(s)
		children = append(children, child)
	}
	for _, c := range children {
		<-c.Done() // every child ended; a watcher that read a revived context would have panicked
	}
}
