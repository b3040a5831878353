package actors

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/actors/internal/podrecord"
	"github.com/probeactor/probeactor/actors/internal/worker"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

func TestMetrics(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		h := newHarness(t, WithRegistry(reg))
		pod := testPod("m1", v1.Container{Name: "c", ReadinessProbe: execProbe(1, 1)})
		key := messages.ProbeKey{PodUID: pod.UID, Container: "c", Type: messages.Readiness}
		h.run(pod)
		h.idle(key)
		h.prober.result("c", probes.Failure)
		h.tick(key, time.Second)
		h.tick(key, time.Second)

		m := h.tree.env.metrics
		assert.GreaterOrEqual(t, testutil.ToFloat64(m.total.WithLabelValues("Readiness", "successful", "c", "pod-m1", "ns", "m1")), 1.0)
		// Two ticks, plus kubelet's manual trigger after the result turned Failure (status generation).
		assert.GreaterOrEqual(t, testutil.ToFloat64(m.total.WithLabelValues("Readiness", "failed", "c", "pod-m1", "ns", "m1")), 2.0)
		n, err := testutil.GatherAndCount(reg, "prober_probe_total", "prober_probe_duration_seconds")
		require.NoError(t, err)
		assert.Equal(t, 3, n, "two counter series and one histogram (durations of successes only)")

		// A second tree on the same registry is refused with a clear error.
		_, err = Start(h.sys.Root, WithRuntime(h.rt), WithRegistry(reg))
		assert.ErrorContains(t, err, "already registered")

		// Series are deleted when the worker exits.
		h.tree.RemovePod(pod)
		synctest.Wait()
		require.True(t, h.workerCount() == 0)
		n, err = testutil.GatherAndCount(reg, "prober_probe_total", "prober_probe_duration_seconds")
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}

// Each attempt is counted once, in the series of its result, and each timed one observed once: the
// worker keeps its series after the first lookup, and those are the ones the registry serves.
func TestMetricsCountEveryAttemptOnceInItsSeries(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		h := newHarness(t, WithRegistry(reg))
		pod := testPod("m2", v1.Container{Name: "c", ReadinessProbe: execProbe(1, 1)})
		key := messages.ProbeKey{PodUID: pod.UID, Container: "c", Type: messages.Readiness}
		h.run(pod)
		h.idle(key)
		for range 3 {
			h.tick(key, time.Second)
		}
		successes := h.prober.count("c/Readiness")
		h.prober.result("c", probes.Failure)
		for range 4 {
			h.tick(key, time.Second)
		}
		all := h.prober.count("c/Readiness")
		series := func(result string) float64 {
			return testutil.ToFloat64(h.tree.env.metrics.total.WithLabelValues("Readiness", result, "c", "pod-m2", "ns", "m2"))
		}
		ok, failed := series("successful"), series("failed")
		assert.Equal(t, float64(successes), ok)
		assert.Positive(t, failed)
		assert.Equal(t, float64(all), ok+failed, "every attempt counted once")

		mfs, err := reg.Gather()
		require.NoError(t, err)
		var observed uint64
		for _, mf := range mfs {
			if mf.GetName() == "prober_probe_duration_seconds" {
				for _, m := range mf.GetMetric() {
					observed += m.GetHistogram().GetSampleCount()
				}
			}
		}
		assert.Equal(t, uint64(ok), observed, "successes are timed, failures are not (kubelet)")
	})
}

// At rest the tree's scheduler holds one timer per worker and no mailbox holds a message; the
// gauges are served on the embedder's registry and go with the tree.
func TestTreeGauges(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		h := newHarness(t, WithRegistry(reg))
		for _, name := range []string{"g1", "g2", "g3"} {
			pod := testPod(name, v1.Container{Name: "c", ReadinessProbe: execProbe(1, 1)})
			h.run(pod)
			h.idle(messages.ProbeKey{PodUID: pod.UID, Container: "c", Type: messages.Readiness})
		}
		synctest.Wait()
		m := h.tree.env.metrics
		assert.Equal(t, float64(h.workerCount()), testutil.ToFloat64(m.entries), "one timer per worker at rest")
		assert.Equal(t, 3, h.workerCount())
		n, err := testutil.GatherAndCount(reg, "probeactor_mailbox_messages")
		require.NoError(t, err)
		assert.Equal(t, numKinds, n, "a series per actor kind")
		for k := range numKinds {
			assert.Zero(t, h.tree.env.queued[k].Load(), "queued at rest: %s", kindNames[k])
		}
		require.NoError(t, h.tree.Stop(context.Background()))
		n, err = testutil.GatherAndCount(reg, "probeactor_scheduler_entries", "probeactor_mailbox_messages")
		require.NoError(t, err)
		assert.Zero(t, n, "unregistered with the tree")
	})
}

// BenchmarkWorkerObserve is what a worker pays per attempt for its metrics (one counter increment
// and one histogram observation) among 1,000 workers' series.
func BenchmarkWorkerObserve(b *testing.B) {
	m, err := newMetrics(prometheus.NewRegistry(), func() float64 { return 0 }, &queued{})
	require.NoError(b, err)
	e := &env{metrics: m}
	workers := make([]*workerActor, 1000)
	for i := range workers {
		pod := testPod(fmt.Sprintf("w%d", i), v1.Container{Name: "c", ReadinessProbe: execProbe(1, 1)})
		workers[i] = &workerActor{env: e, pod: podrecord.New(pod)}
		workers[i].m.Init(worker.Config{Type: messages.Readiness, Container: &pod.Spec.Containers[0]})
	}
	o := worker.Observation{Label: worker.LabelSuccessful, Timed: true, Duration: time.Millisecond}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		workers[i%len(workers)].observe(o)
	}
}
