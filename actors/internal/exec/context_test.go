package exec

import (
	"context"
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
		var c Context
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

		c.Cancel()
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
