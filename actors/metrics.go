package actors

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are kubelet's prober series, registered on the embedder's registry.
type metrics struct {
	total     *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	unhandled *prometheus.CounterVec // probeactor's own: messages an actor of the tree did not understand
	entries   prometheus.GaugeFunc   // probeactor's own: the scheduler's timers
	mailboxes *queuedCollector       // probeactor's own: user messages waiting, by actor
	// probeactor's own: container start → first Started, → first Ready (startup_metrics.go)
	toStarted *prometheus.HistogramVec
	toReady   *prometheus.HistogramVec
}

// Actor kinds of the tree, the actor label of probeactor_mailbox_messages.
const (
	kindRoot = iota
	kindCache
	kindManager
	kindStatus
	kindSync
	kindWorker
	numKinds
)

var kindNames = [numKinds]string{kindRoot: nameRoot, kindCache: nameCache, kindManager: nameManager,
	kindStatus: nameStatus, kindSync: nameSync, kindWorker: "worker"}

func kindOf(name string) int {
	for k, n := range kindNames {
		if n == name {
			return k
		}
	}
	return kindWorker
}

// queued counts the user messages waiting in the tree's mailboxes, per actor kind: each mailbox adds
// what it queues and subtracts what it takes (see mailbox.depth). Read on scrape, never on the
// probe path.
type queued [numKinds]atomic.Int64

// queuedCollector serves probeactor_mailbox_messages{actor} from a tree's queued counters.
type queuedCollector struct {
	desc *prometheus.Desc
	q    *queued
}

func (c *queuedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *queuedCollector) Collect(ch chan<- prometheus.Metric) {
	for k := range c.q {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(c.q[k].Load()), kindNames[k])
	}
}

// newMetrics registers kubelet's prober series and probeactor's own on reg (none when reg is nil);
// entries reports the scheduler's timers, q the mailboxes' queues.
func newMetrics(reg prometheus.Registerer, entries func() float64, q *queued) (*metrics, error) {
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
		entries: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "probeactor",
			Name:      "scheduler_entries",
			Help:      "Timers the probe tree's scheduler holds (one per worker at rest, plus back-offs and holds).",
		}, entries),
		mailboxes: &queuedCollector{q: q, desc: prometheus.NewDesc("probeactor_mailbox_messages",
			"User messages waiting in the probe tree's mailboxes, by actor (worker: summed over every worker).",
			[]string{"actor"}, nil)},
	}
	m.toStarted, m.toReady = newStartupHistograms()
	if err := registerAll(reg, "prober", m.total, m.duration, m.unhandled, m.entries, m.mailboxes, m.toStarted, m.toReady); err != nil {
		return nil, err
	}
	return m, nil
}

// registerAll registers cs with reg, or none of them: on an error it unregisters those it
// registered. what names the set in the error ("prober metrics already registered").
func registerAll(reg prometheus.Registerer, what string, cs ...prometheus.Collector) error {
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) {
				return fmt.Errorf("actors.Start: WithRegistry: %s metrics already registered (one tree per registry): %w", what, err)
			}
			return fmt.Errorf("actors.Start: WithRegistry: %w", err)
		}
	}
	return nil
}

func (m *metrics) unregister(reg prometheus.Registerer) {
	if m == nil || reg == nil {
		return
	}
	reg.Unregister(m.total)
	reg.Unregister(m.duration)
	reg.Unregister(m.unhandled)
	reg.Unregister(m.entries)
	reg.Unregister(m.mailboxes)
	reg.Unregister(m.toStarted)
	reg.Unregister(m.toReady)
}
