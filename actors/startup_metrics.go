package actors

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probeactor/probeactor/actors/internal/statusbook"
)

// startupBuckets span a container that is started and ready at once (its detection: a few
// milliseconds) to a slow starter's ten minutes.
var startupBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}

// newStartupHistograms are probeactor_container_time_to_started_seconds and
// probeactor_container_time_to_ready_seconds: from a container instance's start
// (State.Running.StartedAt) to its first Started=true and its first Ready=true as the tree
// computes them (kubernetes#96411 asks kubelet for this). Labelled by the pod's namespace and the
// container's name only: both come from the pod templates, so the series are bounded by the
// workloads a node runs, while pod names and UIDs (new with every rollout, every replica) would
// grow without bound; the status page shows the values per pod.
func newStartupHistograms() (toStarted, toReady *prometheus.HistogramVec) {
	labels := []string{"namespace", "container"}
	toStarted = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "probeactor", Subsystem: "container", Name: "time_to_started_seconds",
		Help:    "Time from a container's start to its first Started=true (its startup probe passed, or at once without one), by namespace and container name.",
		Buckets: startupBuckets,
	}, labels)
	toReady = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "probeactor", Subsystem: "container", Name: "time_to_ready_seconds",
		Help:    "Time from a container's start to its first Ready=true after that start, by namespace and container name.",
		Buckets: startupBuckets,
	}, labels)
	return toStarted, toReady
}

// observeStartup records a first Started or Ready (nothing without a registry).
func (m *metrics) observeStartup(o statusbook.Observation) {
	if m == nil {
		return
	}
	h := m.toStarted
	if o.Ready {
		h = m.toReady
	}
	h.WithLabelValues(o.Namespace, o.Container).Observe(o.After.Seconds())
}
