package actors

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/actors/internal/supervision"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// After a give-up the key reads Unknown; a worker created for it again (the next AddPod) starts
// with nothing published, so its initial value replaces the Unknown.
func TestWorkerPublishesAgainAfterGiveUp(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		policy := supervision.Policy{Initial: time.Second, Max: time.Second, MaxFailures: 1, Window: time.Minute}
		h := newHarness(t, WithSupervision(policy))
		pod := testPod("again", v1.Container{Name: "c", LivenessProbe: execProbe(1, 1)})
		key := messages.ProbeKey{PodUID: pod.UID, Container: "c", Type: messages.Liveness}
		h.run(pod)
		id, _ := h.settled(pod, "c", messages.Liveness)

		var panics atomic.Int32
		h.prober.set("c", panicky(&panics))
		h.clk.Advance(time.Second)
		h.settledResult(id, messages.Liveness, messages.Unknown)
		synctest.Wait()
		require.True(t, !h.inspect(key).Exists)

		h.prober.result("c", probes.Success)
		require.NoError(t, h.tree.AddPod(pod))
		h.settledResult(id, messages.Liveness, messages.Success)
	})
}
