package actors

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/actors/internal/supervision"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

func panicky(n *atomic.Int32) func(context.Context) (probes.Outcome, error) {
	return func(context.Context) (probes.Outcome, error) {
		n.Add(1)
		panic("prober bug")
	}
}

// kubelet's TestHandleCrash: a prober that panics does not change the cached result and the worker
// keeps probing — here after a back-off restart on the fake clock.
func TestHandleCrash(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		policy := supervision.Policy{Initial: time.Second, Max: 8 * time.Second, Multiplier: 2, MaxFailures: 10, Window: time.Hour}
		h := newHarness(t, WithSupervision(policy))
		pod := testPod("crash", v1.Container{Name: "c", ReadinessProbe: execProbe(10, 1)})
		key := messages.ProbeKey{PodUID: pod.UID, Container: "c", Type: messages.Readiness}
		h.run(pod)
		id, _ := h.settled(pod, "c", messages.Readiness)

		var panics atomic.Int32
		h.prober.set("c", panicky(&panics))
		h.clk.Advance(10 * time.Second)
		h.restartPending()
		require.Equal(t, int32(1), panics.Load())
		r, ok := h.result(id, messages.Readiness)
		require.True(t, ok)
		assert.Equal(t, messages.Success, r, "the last published result stays while the worker is down")

		// Back-off: nothing before 1 s, a restart (which probes at once) at 1 s, then 2 s.
		h.clk.Advance(999 * time.Millisecond)
		h.sync()
		assert.Equal(t, int32(1), panics.Load())
		h.clk.Advance(time.Millisecond)
		h.restartPending()
		require.Equal(t, int32(2), panics.Load())
		h.clk.Advance(1999 * time.Millisecond)
		h.sync()
		assert.Equal(t, int32(2), panics.Load(), "second delay is 2 s")

		// The prober is fixed: the next restart continues probing with the counters it had.
		h.prober.result("c", probes.Failure)
		h.clk.Advance(time.Millisecond)
		h.settledResult(id, messages.Readiness, messages.Failure)
		info := h.idle(key)
		assert.True(t, info.Exists)
		assert.Equal(t, id, info.ContainerID, "the restarted worker kept its container")
		assert.Empty(t, h.events.find(messages.ReasonProbeWorkerGaveUp))
	})
}

// After MaxFailures within Window the key reports Unknown with a warning event; other workers keep
// running.
func TestSupervisionGivesUp(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		policy := supervision.Policy{Initial: time.Second, Max: time.Second, MaxFailures: 3, Window: time.Minute}
		h := newHarness(t, WithSupervision(policy))
		pod := testPod("giveup", v1.Container{Name: "bad", LivenessProbe: execProbe(1, 1)},
			v1.Container{Name: "good", LivenessProbe: execProbe(1, 1)})
		h.run(pod)
		bad, _ := h.settled(pod, "bad", messages.Liveness)
		good := h.rt.ContainerID(pod.UID, "good")

		var panics atomic.Int32
		h.prober.set("bad", panicky(&panics))
		for i := int32(1); i <= 2; i++ {
			h.clk.Advance(time.Second)
			h.restartPending()
			require.Equal(t, i, panics.Load())
		}
		h.clk.Advance(time.Second)
		h.settledResult(bad, messages.Liveness, messages.Unknown)
		synctest.Wait()
		require.Len(t, h.events.find(messages.ReasonProbeWorkerGaveUp), 1)
		ev := h.events.find(messages.ReasonProbeWorkerGaveUp)[0]
		assert.Equal(t, v1.EventTypeWarning, ev.Type)
		assert.Contains(t, ev.Message, "prober bug")
		assert.Equal(t, "pod-giveup", ev.Pod.Name)
		assert.False(t, h.inspect(messages.ProbeKey{PodUID: pod.UID, Container: "bad", Type: messages.Liveness}).Exists)
		assert.Empty(t, h.rt.Kills(), "Unknown does not kill")

		// The sibling keeps probing.
		before := h.prober.count("good")
		h.tick(messages.ProbeKey{PodUID: pod.UID, Container: "good", Type: messages.Liveness}, time.Second)
		assert.Greater(t, h.prober.count("good"), before)
		r, _ := h.result(good, messages.Liveness)
		assert.Equal(t, messages.Success, r)
	})
}

// restartPending waits until the supervisor holds exactly one worker restart on the fake clock.
func (h *harness) restartPending() {
	h.t.Helper()
	synctest.Wait()
	require.Equal(h.t, 1, h.tree.env.supervisor.Pending())
}

// A worker removed while it waits for its restart is stopped for good: the pending restart is
// cancelled (no restart of a gone worker, no dead letter) and its key has no result left.
func TestRemoveDuringBackoff(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		policy := supervision.Policy{Initial: time.Second, Max: time.Second, MaxFailures: 10, Window: time.Minute}
		h := newHarness(t, WithSupervision(policy))
		pod := testPod("backoff", v1.Container{Name: "c", LivenessProbe: execProbe(1, 1)})
		h.run(pod)
		id, _ := h.settled(pod, "c", messages.Liveness)

		var panics atomic.Int32
		h.prober.set("c", panicky(&panics))
		h.clk.Advance(time.Second)
		h.restartPending()
		h.tree.RemovePod(pod)
		synctest.Wait()
		require.True(t, h.workerCount() == 0)
		assert.Zero(t, h.tree.env.supervisor.Pending(), "the restart was cancelled")
		assert.Zero(t, h.tree.env.supervisor.Tracked(), "no back-off state is kept for a gone worker")
		h.clk.Advance(time.Minute)
		h.sync()
		assert.Equal(t, int32(1), panics.Load(), "never restarted")
		_, ok := h.result(id, messages.Liveness)
		assert.False(t, ok)
	})
}

// crash makes the tree actor named target panic (through crashMiddleware).
type crash struct{ target string }

func crashMiddleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		if m, ok := env.Message.(crash); ok && strings.HasSuffix(c.Self().Id, "/"+m.target) {
			panic("injected crash of " + m.target)
		}
		next(c, env)
	}
}

func withMiddleware(mw ...actor.ReceiverMiddleware) Option {
	return func(c *config) { c.middleware = append(c.middleware, mw...) }
}

// The tree's own actors are restarted with back-off however often they fail. protoactor's default
// strategy stops a child after 10 failures in 10 s, which would leave a half-dead tree.
func TestTreeActorsSurviveRepeatedPanics(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t, withMiddleware(crashMiddleware))
		infra := h.tree.env.infra
		for _, name := range []string{nameCache, nameStatus, nameSync, nameManager} {
			pid := childPID(h.tree.env.root, name)
			for i := 1; i <= 12; i++ {
				h.sys.Root.Send(pid, crash{name})
				synctest.Wait()
				require.True(t, infra.Waiting(pid), "%s: restart %d scheduled", name, i)
				h.clk.Advance(h.tree.env.cfg.policy.Max) // the back-off delay never exceeds Max
				require.False(t, infra.Waiting(pid), "%s: restarted after failure %d", name, i)
			}
		}

		// Every actor still does its job: a readiness success reaches the cache and the pod's conditions.
		pod := testPod("u1", v1.Container{Name: "app", ReadinessProbe: execProbe(1, 1)})
		h.run(pod)
		h.settledResult(h.rt.ContainerID(pod.UID, "app"), messages.Readiness, messages.Success)
		synctest.Wait()
		st := h.status(pod.UID)
		require.Len(t, st.ContainerStatuses, 1)
		require.True(t, st.ContainerStatuses[0].Ready)
	})
}
