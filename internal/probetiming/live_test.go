package probetiming

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/probeactor/probeactor/messages"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// running is a live liveness worker of a container started an hour ago, healthy so far, whose
// next tick is 4 s away (kubelet's default timing).
func running() Live {
	return Live{Type: messages.Liveness, Timing: timing(0, 10, 1, 1, 3), Now: now, Running: true, Started: true,
		StartedAt: now.Add(-time.Hour), Published: messages.Success, HasPublished: true, NextTick: now.Add(4 * s)}
}

func TestNextAction(t *testing.T) {
	for name, c := range map[string]struct {
		edit   func(l *Live)
		text   string
		within time.Duration
	}{
		// The failure threshold is one failure away: the next tick (4 s) plus its timeout.
		"liveness failing 2/3": {func(l *Live) { l.Streak, l.StreakResult = 2, messages.Failure },
			"restarts in ≤ 5s if it keeps failing", 5 * s},
		// The attempt in flight may be the second failure (assumed just begun): 1 interval + 1 s.
		"liveness failing 1/3, busy": {func(l *Live) { l.Streak, l.StreakResult, l.Busy = 1, messages.Failure, true },
			"restarts in ≤ 11s if it keeps failing", 11 * s},
		// Nothing counted yet: three failures from the next tick: 4 + 2×10 + 1.
		"liveness fresh": {func(l *Live) {}, "restarts in ≤ 25s if it fails", 25 * s},
		"liveness passing": {func(l *Live) { l.Streak, l.StreakResult = 9, messages.Success },
			"no change while it passes", 0},
		"liveness failing, restartPolicy Never": {func(l *Live) { l.Streak, l.StreakResult, l.NoRestart = 1, messages.Failure, true },
			"is killed in ≤ 15s if it keeps failing", 15 * s},
		// Attempts can outlast the period (T10 ≥ P5): the next tick 4 s, then one timeout apart.
		"liveness failing 1/3, T over P": {func(l *Live) {
			l.Timing = timing(0, 5, 10, 1, 3)
			l.Streak, l.StreakResult = 1, messages.Failure
		}, "restarts in ≤ 24s if it keeps failing", 24 * s},
		// The container started 5 s ago with a 30 s delay: ticks at +4, +14, +24 are too early;
		// the first that counts is +34, then two periods and a timeout.
		"liveness within its initial delay": {func(l *Live) {
			l.Timing = timing(30, 10, 1, 1, 3)
			l.StartedAt = now.Add(-5 * s)
		}, "restarts in ≤ 55s if it fails", 55 * s},
		// A not-ready container's readiness worker within its delay (30 s, started 5 s ago): a
		// manual trigger before 25 s from now restarts the period, so the first run counts up to
		// a period after the delay: 25 + 10, then the attempt.
		"readiness within its initial delay": {func(l *Live) {
			l.Type, l.Published = messages.Readiness, messages.Failure
			l.Timing = timing(30, 10, 1, 1, 3)
			l.StartedAt = now.Add(-5 * s)
		}, "turns ready in ≤ 36s if it passes", 36 * s},
		// No tick known: a whole period.
		"liveness, next tick unknown": {func(l *Live) { l.NextTick = time.Time{}; l.Streak, l.StreakResult = 2, messages.Failure },
			"restarts in ≤ 11s if it keeps failing", 11 * s},
		"readiness ready and passing": {func(l *Live) {
			l.Type = messages.Readiness
			l.Streak, l.StreakResult = 3, messages.Success
		}, "stays ready while it passes", 0},
		"readiness ready, failing 1/3": {func(l *Live) {
			l.Type = messages.Readiness
			l.Streak, l.StreakResult = 1, messages.Failure
		}, "turns not ready in ≤ 15s if it keeps failing", 15 * s},
		"readiness not ready and failing": {func(l *Live) {
			l.Type, l.Published = messages.Readiness, messages.Failure
			l.Streak, l.StreakResult = 7, messages.Failure
		}, "stays not ready while it fails", 0},
		// Initial Failure, nothing counted: one success turns it ready.
		"readiness initial": {func(l *Live) { l.Type, l.Published = messages.Readiness, messages.Failure },
			"turns ready in ≤ 5s if it passes", 5 * s},
		"readiness not ready, passing 1/3": {func(l *Live) {
			l.Type, l.Published = messages.Readiness, messages.Failure
			l.Timing.Success = 3
			l.Streak, l.StreakResult = 1, messages.Success
		}, "turns ready in ≤ 15s if it keeps passing", 15 * s},
		"readiness before the startup probe passed": {func(l *Live) { l.Type, l.Started = messages.Readiness, false },
			"waits for the startup probe", 0},
		// The docs' startup probe (F30), failing 10 times so far: 20 more: 4 + 19×10 + 1 = 195 s.
		"startup failing 10/30": {func(l *Live) {
			l.Type, l.Published, l.Started = messages.Startup, messages.Unknown, false
			l.Timing = timing(0, 10, 1, 1, 30)
			l.Streak, l.StreakResult = 10, messages.Failure
		}, "restarts in ≤ 3m15s if it keeps failing", 195 * s},
		"startup done": {func(l *Live) {
			l.Type, l.OnHold = messages.Startup, true
		}, "started: no more startup probes until the container restarts", 0},
		"liveness held after its failure": {func(l *Live) { l.Published, l.OnHold = messages.Failure, true },
			"kill requested; probing resumes with the new container", 0},
		"liveness deferred by the restart budget": {func(l *Live) {
			l.Published, l.Deferred, l.Streak, l.StreakResult = messages.Failure, true, 4, messages.Failure
		}, "restart deferred: the restart budget has no room for it; restarts when it allows, if the probe still fails", 0},
		"not running": {func(l *Live) { l.Running = false }, "container not running", 0},
	} {
		t.Run(name, func(t *testing.T) {
			l := running()
			c.edit(&l)
			a := NextAction(l)
			assert.Equal(t, c.text, a.Text)
			assert.Equal(t, c.within, a.Within)
			assert.Equal(t, c.within > 0, a.Pending)
		})
	}
}

func TestStreakText(t *testing.T) {
	l := running()
	assert.Equal(t, "no attempt counted yet", StreakText(l))
	l.Streak, l.StreakResult = 2, messages.Failure
	assert.Equal(t, "failing 2/3", StreakText(l))
	l.Streak, l.Published = 5, messages.Failure
	assert.Equal(t, "failed 5 in a row", StreakText(l))
	l.Streak, l.StreakResult, l.Published = 1, messages.Success, messages.Failure
	l.Timing.Success = 3
	assert.Equal(t, "passing 1/3", StreakText(l))
	l.Streak, l.Published = 7, messages.Success
	assert.Equal(t, "passed 7 in a row", StreakText(l))
	l.Streak, l.OnHold = 0, true
	assert.Equal(t, "passed", StreakText(l), "a startup probe done")
	l.Published = messages.Failure
	assert.Equal(t, "failed, held until the container restarts", StreakText(l))
}

func TestBound(t *testing.T) {
	assert.Equal(t, "0s", Bound(0))
	assert.Equal(t, "11s", Bound(10*s+200*time.Millisecond))
	assert.Equal(t, "10s", Bound(10*s))
	assert.Equal(t, "5m1s", Bound(301*s))
}
