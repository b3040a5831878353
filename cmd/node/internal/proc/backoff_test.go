package proc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBackoffDoublesToTheCapAndResetsAfterStableRun(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := backoff{initial: 10 * time.Second, max: 40 * time.Second}

	// First exit: no entry, restart at once.
	in, _ := b.inBackoff(t0, t0)
	assert.False(t, in, "first restart is immediate")
	b.next(t0, t0)

	steps := []struct {
		runFor time.Duration // how long the container ran before exiting again
		want   time.Duration // the wait before the restart
	}{
		{time.Second, 10 * time.Second},
		{time.Second, 20 * time.Second},
		{time.Second, 40 * time.Second},
		{time.Second, 40 * time.Second}, // capped
		{81 * time.Second, 0},           // ran > 2×max: forgotten, immediate
		{time.Second, 10 * time.Second}, // and starting over at initial
	}
	now := t0
	for i, s := range steps {
		exit := now.Add(s.runFor)
		in, until := b.inBackoff(exit, exit)
		if s.want == 0 {
			assert.False(t, in, "step %d", i)
			b.next(exit, exit)
			now = exit
			continue
		}
		assert.True(t, in, "step %d", i)
		assert.Equal(t, exit.Add(s.want), until, "step %d", i)
		in, _ = b.inBackoff(exit, until.Add(-time.Millisecond))
		assert.True(t, in, "step %d just before", i)
		in, _ = b.inBackoff(exit, until)
		assert.False(t, in, "step %d at the deadline", i)
		b.next(exit, until)
		now = until
	}
}

func TestBackoffInitialAboveCapIsClamped(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := backoff{initial: 10 * time.Second, max: 2 * time.Second}
	b.next(t0, t0)
	_, until := b.inBackoff(t0.Add(time.Second), t0.Add(time.Second))
	assert.Equal(t, t0.Add(3*time.Second), until)
}
