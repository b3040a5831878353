package aggregator

import (
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/probeactor/probeactor/wire/fleetv1"
)

// The aggregator is the fleet's metrics-server: it serves metrics.k8s.io from the usage the nodes
// send (Changes.usage: one sampling window, rates already taken over it), instead of scraping them.

// servedUsage is the node's usage if it is to be served at now, nil otherwise: only while the
// node is Ready (in contact: metrics-server drops a node it cannot scrape), and only until
// staleAfter passed since it arrived (a node in contact whose sampling stopped has no metrics
// either, as metrics-server serves only its latest scrape).
func (b *Book) servedUsage(n *nodeState, now time.Time) *fleetv1.Usage {
	if n.usage == nil || !n.ready || now.Sub(n.usageAt) > b.staleAfter(n.usage) {
		return nil
	}
	return n.usage
}

// staleAfter is how long a usage is served after it arrived without a newer one: three of its
// windows (a node sends one per window: two missed), and never less than the grace period, the
// patience the aggregator has with a node's contact.
func (b *Book) staleAfter(u *fleetv1.Usage) time.Duration {
	w := time.Duration(u.GetWindowNanos())
	if w > math.MaxInt64/3 {
		return math.MaxInt64
	}
	return max(3*w, b.grace)
}

// NodeMetrics is metrics.k8s.io/v1beta1's NodeMetrics of every node with a usage to serve at now
// (servedUsage), sorted by name, as metrics-server 0.8 lists them: the node's labels (from its own
// Node object, when it sent one), creationTimestamp now, the window's end and length, and the
// host's CPU in nanocores and memory in bytes. Items carry no kind (a list's items do not).
func (b *Book) NodeMetrics(now time.Time) []metricsv1beta1.NodeMetrics {
	var out []metricsv1beta1.NodeMetrics
	for _, name := range b.nodeNames() {
		n := b.nodes[name]
		u := b.servedUsage(n, now)
		if u == nil {
			continue
		}
		m := metricsv1beta1.NodeMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now)},
			Timestamp:  windowEnd(u),
			Window:     metav1.Duration{Duration: time.Duration(u.GetWindowNanos())},
			Usage:      usageList(u.GetNodeCpuNanocores(), u.GetNodeMemoryBytes()),
		}
		if n.object != nil && len(n.object.Labels) > 0 {
			m.Labels = maps.Clone(n.object.Labels)
		}
		out = append(out, m)
	}
	return out
}

// PodMetrics is metrics.k8s.io/v1beta1's PodMetrics of every pod with a usage to serve at now,
// sorted by namespace, name and node (pods of two nodes may share a namespace and name: both are
// listed), containers by name. As metrics-server's, only the pods the node reports (its /pods) are
// listed: a pod removed since the window has no metrics. A pod without any container measured over
// the window is left out. metadata.labels are the pod's, as the node reports them.
func (b *Book) PodMetrics(now time.Time) []metricsv1beta1.PodMetrics {
	type item struct {
		node string
		m    metricsv1beta1.PodMetrics
	}
	var items []item
	for _, name := range b.nodeNames() {
		n := b.nodes[name]
		u := b.servedUsage(n, now)
		if u == nil {
			continue
		}
		known := make(map[[2]string]*fleetv1.PodMeta, len(n.pods))
		for _, p := range n.pods {
			known[[2]string{p.GetMeta().GetNamespace(), p.GetMeta().GetName()}] = p.GetMeta()
		}
		for _, p := range u.GetPods() {
			meta := known[[2]string{p.GetNamespace(), p.GetName()}]
			if meta == nil || len(p.GetContainers()) == 0 {
				continue
			}
			m := metricsv1beta1.PodMetrics{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.GetNamespace(), Name: p.GetName(), CreationTimestamp: metav1.NewTime(now),
					Labels: maps.Clone(meta.GetLabels())},
				Timestamp:  windowEnd(u),
				Window:     metav1.Duration{Duration: time.Duration(u.GetWindowNanos())},
				Containers: make([]metricsv1beta1.ContainerMetrics, 0, len(p.GetContainers())),
			}
			for _, c := range p.GetContainers() {
				m.Containers = append(m.Containers, metricsv1beta1.ContainerMetrics{Name: c.GetName(), Usage: usageList(c.GetCpuNanocores(), c.GetMemoryBytes())})
			}
			slices.SortFunc(m.Containers, func(a, c metricsv1beta1.ContainerMetrics) int { return strings.Compare(a.Name, c.Name) })
			items = append(items, item{node: name, m: m})
		}
	}
	slices.SortStableFunc(items, func(a, c item) int {
		if r := strings.Compare(a.m.Namespace, c.m.Namespace); r != 0 {
			return r
		}
		if r := strings.Compare(a.m.Name, c.m.Name); r != 0 {
			return r
		}
		return strings.Compare(a.node, c.node)
	})
	out := make([]metricsv1beta1.PodMetrics, 0, len(items))
	for _, it := range items {
		out = append(out, it.m)
	}
	return out
}

func windowEnd(u *fleetv1.Usage) metav1.Time {
	return metav1.NewTime(time.Unix(0, u.GetTimestampUnixNano()).UTC())
}

// usageList is a usage as metrics-server 0.8 renders it: CPU in nanocores (DecimalSI, scale -9,
// "250m" or "1234567n"), memory in bytes (BinarySI, "100Mi" or "104857601").
func usageList(cpuNanocores, memoryBytes uint64) v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:    quantity(cpuNanocores, resource.Nano, resource.DecimalSI),
		v1.ResourceMemory: quantity(memoryBytes, 0, resource.BinarySI),
	}
}

// quantity is v×10^scale as a Quantity in format f. A value beyond int64 (nothing a real node
// reports, but the wire allows it) loses decimal digits until it fits, as metrics-server's
// uint64Quantity does, rather than wrapping negative.
func quantity(v uint64, scale resource.Scale, f resource.Format) resource.Quantity {
	for v > math.MaxInt64 {
		v /= 10
		scale++
	}
	q := *resource.NewScaledQuantity(int64(v), scale)
	q.Format = f
	return q
}
