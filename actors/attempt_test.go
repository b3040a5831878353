package actors

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The reusable attempt context behaves as a context to children the prober derives from it: they end
// when it is cancelled, a child derived after the cancellation ends at once, the context lives again
// after reset, and no goroutine is started for a child (synctest fails the test on any left behind).
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

		c.reset()
		require.NoError(t, c.Err(), "live again for the next attempt")
		next, cancelNext := context.WithCancel(&c)
		require.NoError(t, next.Err())
		select {
		case <-c.Done():
			t.Fatal("a reset context is not done")
		default:
		}
		cancelNext()
		c.mu.Lock()
		assert.Empty(t, c.afters)
		c.mu.Unlock()
	})
}
