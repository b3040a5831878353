package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// A container the runtime reports running, ready and started when the tree first sees it (node
// re-adopting its containers after its own restart) is ready and started at once, before any probe
// ran, and stays so until a probe result changes it: readiness turns it not ready only after
// FailureThreshold consecutive failures counted from zero, startup does not probe it and liveness is
// not held back (kubelet 1.35+, KEP-4781). A fresh container next to it (Ready false, Started unset or false,
// as a runtime reports a container it just started) behaves as before.
func TestAdoptedContainerKeepsReadyAndStarted(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		// Jitter: the workers' first runs wait half a period, so the statuses before them are
		// statusManager's alone.
		h := newHarness(t, WithRand(func() float64 { return 0.5 }))
		probe := func(failureThreshold int32) *v1.Probe { return execProbe(10, failureThreshold) }
		adopted := testPod("adopted", v1.Container{Name: "old", StartupProbe: probe(3),
			LivenessProbe: probe(10), ReadinessProbe: probe(3)})
		fresh := testPod("fresh", v1.Container{Name: "new", StartupProbe: probe(10),
			LivenessProbe: probe(10), ReadinessProbe: probe(3)})
		h.prober.result("old", probes.Failure)
		h.prober.result("new", probes.Failure)

		h.rt.RunPod(adopted)
		h.rt.Update(adopted.UID, func(st *v1.PodStatus) {
			cs := &st.ContainerStatuses[0]
			started := true
			cs.Ready, cs.Started = true, &started
			cs.State.Running.StartedAt = metav1.NewTime(t0.Add(-time.Hour))
		})
		h.sync()
		require.NoError(t, h.tree.AddPod(adopted))
		h.run(fresh)
		h.sync()

		readyStarted := func(pod *v1.Pod) (ready, started bool, cond v1.PodCondition) {
			st := h.status(pod.UID)
			cs := st.ContainerStatuses[0]
			require.NotNil(t, cs.Started)
			require.NotNil(t, condition(st, v1.PodReady))
			return cs.Ready, *cs.Started, *condition(st, v1.PodReady)
		}
		ready, started, cond := readyStarted(adopted)
		assert.True(t, ready, "adopted: ready before any probe")
		assert.True(t, started, "adopted: started before any probe")
		assert.Equal(t, v1.ConditionTrue, cond.Status)
		since := cond.LastTransitionTime
		ready, started, _ = readyStarted(fresh)
		assert.False(t, ready, "fresh: not ready before its probes")
		assert.False(t, started, "fresh: not started before its startup probe")
		assert.Zero(t, h.prober.count("old")+h.prober.count("new"), "no probe ran yet")

		old := h.rt.ContainerID(adopted.UID, "old")
		oldKey := func(pt messages.ProbeType) messages.ProbeKey {
			return messages.ProbeKey{PodUID: adopted.UID, Container: "old", Type: pt}
		}
		// Three periods of readiness failures: ready until the third.
		for i := 1; i <= 3; i++ {
			if i == 1 {
				h.clk.Advance(5 * time.Second) // the first runs, after the jitter
			} else {
				h.clk.Advance(10 * time.Second)
			}
			h.idle(oldKey(messages.Readiness))
			h.idle(oldKey(messages.Liveness))
			if i < 3 {
				require.Equal(t, i, h.prober.count("old/Readiness"))
			} else { // not ready: kubelet's manual trigger then probes again at once
				require.GreaterOrEqual(t, h.prober.count("old/Readiness"), 3)
			}
			assert.Equal(t, i, h.prober.count("old/Liveness"), "liveness is not held back by startup")
			assert.Zero(t, h.prober.count("old/Startup"), "a started container's startup probe does not run")
			h.settledResult(old, messages.Startup, messages.Success)
			ready, started, cond = readyStarted(adopted)
			assert.True(t, started)
			if i < 3 {
				assert.True(t, ready, "failure %d of 3: still ready", i)
				assert.Equal(t, v1.ConditionTrue, cond.Status)
				assert.Equal(t, since, cond.LastTransitionTime, "no flap")
				h.settledResult(old, messages.Readiness, messages.Success)
				assert.Equal(t, i, h.inspect(oldKey(messages.Readiness)).ResultRun, "streak counted from zero")
			} else {
				assert.False(t, ready, "failure 3 of 3: not ready")
				assert.Equal(t, v1.ConditionFalse, cond.Status)
				h.settledResult(old, messages.Readiness, messages.Failure)
			}
		}
		assert.Empty(t, h.rt.Kills())

		// The fresh container, as before: its startup probe runs and fails (below its threshold),
		// so it is neither started nor ready, and readiness and liveness wait for it.
		newID := h.rt.ContainerID(fresh.UID, "new")
		h.settledResult(newID, messages.Startup, messages.Unknown)
		h.settledResult(newID, messages.Readiness, messages.Failure)
		assert.Equal(t, 3, h.prober.count("new/Startup"))
		assert.Zero(t, h.prober.count("new/Readiness")+h.prober.count("new/Liveness"))
		ready, started, _ = readyStarted(fresh)
		assert.False(t, ready)
		assert.False(t, started)
	})
}
