package actors

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// ProbeStates reports each worker's streak, last attempt and next run, sorted by container and
// probe type; a pod without workers has none.
func TestProbeStates(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		pod := testPod("ps",
			v1.Container{Name: "b", LivenessProbe: execProbe(10, 3), ReadinessProbe: execProbe(10, 3)},
			v1.Container{Name: "a", ReadinessProbe: execProbe(5, 1)})
		h.run(pod)
		idB, _ := h.settled(pod, "b", messages.Liveness)
		h.settled(pod, "a", messages.Readiness)

		h.prober.result("b", probes.Failure)
		live := messages.ProbeKey{PodUID: pod.UID, Container: "b", Type: messages.Liveness}
		h.tick(live, 10*time.Second) // one failure of three

		states, err := h.tree.ProbeStates(context.Background(), pod.UID)
		require.NoError(t, err)
		require.Len(t, states, 3)
		assert.Equal(t, []messages.ProbeKey{
			{PodUID: pod.UID, Container: "a", Type: messages.Readiness},
			{PodUID: pod.UID, Container: "b", Type: messages.Liveness},
			{PodUID: pod.UID, Container: "b", Type: messages.Readiness},
		}, []messages.ProbeKey{states[0].Key, states[1].Key, states[2].Key})
		l := states[1]
		assert.Equal(t, idB, l.ContainerID)
		assert.Equal(t, messages.Success, l.Published, "one failure of three publishes nothing")
		assert.Equal(t, 1, l.Streak)
		assert.Equal(t, messages.Failure, l.StreakResult)
		assert.Equal(t, messages.Failure, l.LastResult)
		assert.Equal(t, h.clk.Now(), l.LastAt)
		assert.Equal(t, h.clk.Now().Add(10*time.Second), l.NextRun)
		assert.True(t, l.Running)
		assert.True(t, l.Started)
		assert.False(t, l.OnHold)

		none, err := h.tree.ProbeStates(context.Background(), "no-such-pod")
		require.NoError(t, err)
		assert.Empty(t, none)
	})
}
