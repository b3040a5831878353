package worker

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/messages"
)

// A deferred kill releases the hold of the worker whose Failure asked for it: the worker probes
// the failing container again, holds on no further Failure (the syncLoop has the kill queued),
// and a Success cancels the deferral; the next Failure streak then holds as kubelet's does.
func TestDeferReleasesTheHoldUntilSomethingElseIsPublished(t *testing.T) {
	for _, pt := range []messages.ProbeType{messages.Liveness, messages.Startup} {
		t.Run(pt.String(), func(t *testing.T) {
			g := newRig(t, Config{Type: pt, Spec: spec(1, 2, 0)})
			g.view(running(pt == messages.Liveness))
			now := t0
			g.doProbe(now, messages.Failure)
			g.doProbe(now, messages.Failure)
			require.True(t, g.m.OnHold())
			require.Equal(t, messages.Failure, g.cache[testID])
			require.Equal(t, []messages.Result{InitialValue(pt), messages.Failure}, g.results())
			before := g.probes

			// A Defer for another container (replaced meanwhile) changes nothing.
			stepOf(g.m, Event{Kind: Defer, ContainerID: "test://other"})
			assert.True(t, g.m.OnHold())

			stepOf(g.m, Event{Kind: Defer, ContainerID: testID})
			assert.False(t, g.m.OnHold())
			assert.True(t, g.m.State().KillDeferred)
			for range 3 { // still failing: probed, no new write, no hold
				g.doProbe(now, messages.Failure)
				assert.False(t, g.m.OnHold())
			}
			assert.Equal(t, before+3, g.probes)
			assert.Empty(t, g.results())

			g.doProbe(now, messages.Success) // recovered: published, the deferral is over
			assert.Equal(t, []messages.Result{messages.Success}, g.results())
			assert.False(t, g.m.State().KillDeferred)
			if pt == messages.Startup {
				assert.True(t, g.m.OnHold(), "a startup worker holds after its success, as kubelet's")
				return
			}
			g.doProbe(now, messages.Failure)
			g.doProbe(now, messages.Failure)
			assert.Equal(t, []messages.Result{messages.Failure}, g.results())
			assert.True(t, g.m.OnHold(), "without a new Defer the next Failure holds again")
		})
	}
}

// A readiness worker never holds and kills nothing: a Defer is meaningless to it.
func TestDeferIgnoredByReadiness(t *testing.T) {
	g := newRig(t, Config{Type: messages.Readiness, Spec: spec(1, 1, 0)})
	g.view(running(true))
	g.doProbe(t0, messages.Failure)
	stepOf(g.m, Event{Kind: Defer, ContainerID: testID})
	assert.False(t, g.m.State().KillDeferred)
}

// A new container ends a deferral: its kill was for the old one.
func TestNewContainerEndsTheDeferral(t *testing.T) {
	g := newRig(t, Config{Type: messages.Liveness, Spec: spec(1, 1, 0)})
	g.view(running(true))
	g.doProbe(t0, messages.Failure)
	stepOf(g.m, Event{Kind: Defer, ContainerID: testID})
	require.True(t, g.m.State().KillDeferred)
	v := running(true)
	v.ContainerID = "test://next"
	g.view(v)
	g.doProbe(t0, messages.Success)
	assert.False(t, g.m.State().KillDeferred)
	g.doProbe(t0, messages.Failure)
	assert.True(t, g.m.OnHold())
}

// State is what node describe shows: the streak, the last attempt (an error is Unknown) and its
// time, what was published, the next run.
func TestState(t *testing.T) {
	g := newRig(t, Config{Type: messages.Liveness, Spec: spec(1, 3, 0), Period: 10 * time.Second})
	st := g.m.State()
	assert.False(t, st.HasPublished)
	assert.True(t, st.LastAt.IsZero())

	g.view(running(true))
	g.doProbe(t0, messages.Failure) // Started: runs at once, period from t0
	st = g.m.State()
	assert.Equal(t, testID, st.ContainerID)
	assert.Equal(t, messages.ProbeState{ContainerID: testID, Published: messages.Success, HasPublished: true,
		Streak: 1, StreakResult: messages.Failure, LastResult: messages.Failure, LastAt: t0,
		NextRun: t0.Add(10 * time.Second), Running: true, Started: true, ContainerStartedAt: t0}, st)

	// An errored attempt: the last result is Unknown, the streak unchanged.
	later := t0.Add(3 * time.Second)
	r := stepOf(g.m, Event{Kind: Trigger, Now: later})
	require.True(t, r.StartAttempt)
	stepOf(g.m, Event{Kind: Done, Now: later, Attempt: r.Attempt.Attempt, Verdict: &Verdict{Err: errors.New("no route")}})
	st = g.m.State()
	assert.Equal(t, messages.Unknown, st.LastResult)
	assert.Equal(t, later, st.LastAt)
	assert.Equal(t, 1, st.Streak)
	assert.Equal(t, later.Add(10*time.Second), st.NextRun, "the trigger restarted the period")
}
