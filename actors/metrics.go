package actors

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are kubelet's prober series, registered on the embedder's registry.
type metrics struct {
	total     *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	unhandled *prometheus.CounterVec // probeactor's own: messages an actor of the tree did not understand
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "prober",
			Name:      "probe_total",
			Help:      "Cumulative number of a liveness, readiness or startup probe for a container by result.",
		}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "prober",
			Name:      "probe_duration_seconds",
			Help:      "Duration in seconds for a probe response.",
			Buckets:   prometheus.DefBuckets,
		}, []string{"probe_type", "container", "pod", "namespace"}),
		unhandled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "probeactor",
			Name:      "unhandled_messages_total",
			Help:      "Messages an actor of the probe tree received and did not understand (dropped), by actor and Go type.",
		}, []string{"actor", "type"}),
	}
	cs := []prometheus.Collector{m.total, m.duration, m.unhandled}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) {
				return nil, fmt.Errorf("actors.Start: WithRegistry: prober metrics already registered (one tree per registry): %w", err)
			}
			return nil, fmt.Errorf("actors.Start: WithRegistry: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) unregister(reg prometheus.Registerer) {
	if m == nil || reg == nil {
		return
	}
	reg.Unregister(m.total)
	reg.Unregister(m.duration)
	reg.Unregister(m.unhandled)
}
