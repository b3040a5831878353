package actors

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// A container whose startup probe passes at its third attempt (period 1 s: at 2 s) and whose
// readiness probe passes once it started is started and ready 2 s after its start: one
// observation each, labelled by namespace and container only, and the same durations from
// ContainerStartups.
func TestTimeToStartedAndReady(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		h := newHarness(t, WithRegistry(reg))
		pod := testPod("tt", v1.Container{Name: "app", StartupProbe: execProbe(1, 10), ReadinessProbe: execProbe(1, 3)})
		attempts := 0
		h.prober.set("app", func(context.Context) (probes.Outcome, error) {
			attempts++
			if attempts < 3 {
				return probes.Outcome{Result: probes.Failure}, nil
			}
			return probes.Outcome{Result: probes.Success}, nil
		})
		h.run(pod)
		h.sync()
		startup := messages.ProbeKey{PodUID: pod.UID, Container: "app", Type: messages.Startup}
		h.tick(startup, time.Second)
		h.tick(startup, time.Second)
		h.sync()
		st := h.status(pod.UID)
		require.True(t, st.ContainerStatuses[0].Ready)

		startups, err := h.tree.ContainerStartups(context.Background(), pod.UID, "no-such-pod")
		require.NoError(t, err)
		require.Len(t, startups, 1)
		assert.Equal(t, []messages.ContainerStartup{{Container: "app", ContainerID: h.rt.ContainerID(pod.UID, "app"),
			Started: true, StartedAfter: 2 * time.Second, Ready: true, ReadyAfter: 2 * time.Second}}, startups[pod.UID])

		m := h.tree.env.metrics
		assert.Equal(t, 1, testutil.CollectAndCount(m.toStarted))
		assert.Equal(t, 1, testutil.CollectAndCount(m.toReady))
		n, err := testutil.GatherAndCount(reg, "probeactor_container_time_to_started_seconds", "probeactor_container_time_to_ready_seconds")
		require.NoError(t, err)
		assert.Equal(t, 2, n, "one series each: {namespace, container}, no pod name or UID")
		assert.Equal(t, 2.0, sampleSum(t, reg, "probeactor_container_time_to_ready_seconds"))
	})
}

func sampleSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() == name {
			m := f.GetMetric()[0]
			assert.Equal(t, []string{"namespace=ns", "container=app"}, []string{
				m.GetLabel()[1].GetName() + "=" + m.GetLabel()[1].GetValue(), m.GetLabel()[0].GetName() + "=" + m.GetLabel()[0].GetValue()})
			return m.GetHistogram().GetSampleSum()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}
