package usage

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/probeactor/probeactor/wire/fleetv1"
)

// Rates is what the node and its containers used between two samples, prev then cur
// (metrics-server's view of a kubelet: rates over a window, not counters). nil when there is no
// window to measure: cur.At not after prev.At, cur.At not after the Unix epoch, or the host's CPU
// counter gone backwards (CPUs taken offline leave /proc/stat's sum).
//
//   - the node: its busy CPU time over the window in nanocores, and its memory in use at cur;
//   - each container of cur whose run (namespace, pod, container, container ID and start) is in
//     prev too: its CPU over the window in nanocores, and its memory at cur. A container only in
//     cur (new, or restarted: another run, whose counter started again) is left out until the next
//     window, as metrics-server waits for two points of one run; so is one whose counter went
//     backwards, and one without a namespace, pod or container name (the wire refuses them). Two
//     runs of one container both measurable: the one started later (then the greater ID) counts.
//   - pods are their measured containers, grouped: a pod without one is left out. Pods are sorted
//     by namespace then name, each pod's containers by name.
//
// CPU nanocores are the counter's delta times 10⁹ over the window, in exact integer arithmetic,
// rounded to the nearest nanocore (halves up), so a steady 1 s of CPU per 10 s is 100000000.
// Memory is rounded to the nearest byte. The result passes (*fleetv1.Usage).Validate.
func Rates(prev, cur Sample) *fleetv1.Usage {
	window := cur.At.Sub(prev.At)
	if window <= 0 || cur.At.UnixNano() <= 0 {
		return nil
	}
	nodeCPU, ok := nanocores(cur.NodeCPU-prev.NodeCPU, window)
	if !ok {
		return nil
	}
	u := &fleetv1.Usage{TimestampUnixNano: cur.At.UnixNano(), WindowNanos: int64(window),
		NodeCpuNanocores: nodeCPU, NodeMemoryBytes: roundBytes(cur.NodeMemory)}

	before := make(map[run]time.Duration, len(prev.Containers))
	for _, c := range prev.Containers {
		before[runOf(c)] = c.CPU
	}
	type name struct{ ns, pod, container string }
	type measured struct {
		c   ContainerSample
		cpu uint64
	}
	chosen := map[name]measured{}
	for _, c := range cur.Containers {
		if c.Namespace == "" || c.Pod == "" || c.Container == "" {
			continue
		}
		was, ok := before[runOf(c)]
		if !ok {
			continue // new or restarted: one point of this run so far
		}
		cpu, ok := nanocores(c.CPU-was, window)
		if !ok {
			continue // a counter that went backwards
		}
		k := name{c.Namespace, c.Pod, c.Container}
		if other, dup := chosen[k]; dup && !laterRun(c, other.c) {
			continue
		}
		chosen[k] = measured{c: c, cpu: cpu}
	}

	pods := map[[2]string]*fleetv1.PodUsage{}
	for k, m := range chosen {
		p := pods[[2]string{k.ns, k.pod}]
		if p == nil {
			p = &fleetv1.PodUsage{Namespace: k.ns, Name: k.pod}
			pods[[2]string{k.ns, k.pod}] = p
			u.Pods = append(u.Pods, p)
		}
		p.Containers = append(p.Containers, &fleetv1.ContainerUsage{Name: k.container, CpuNanocores: m.cpu, MemoryBytes: roundBytes(m.c.Memory)})
	}
	slices.SortFunc(u.Pods, func(a, b *fleetv1.PodUsage) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, p := range u.Pods {
		slices.SortFunc(p.Containers, func(a, b *fleetv1.ContainerUsage) int { return cmp.Compare(a.Name, b.Name) })
	}
	return u
}

// run identifies one run of a container: a restarted container is another run.
type run struct {
	ns, pod, container, id string
	started                int64 // StartedAt, Unix nanoseconds
}

func runOf(c ContainerSample) run {
	return run{c.Namespace, c.Pod, c.Container, c.ID, c.StartedAt.UnixNano()}
}

// laterRun says whether a was started after b (at the same time: has the greater ID).
func laterRun(a, b ContainerSample) bool {
	if !a.StartedAt.Equal(b.StartedAt) {
		return a.StartedAt.After(b.StartedAt)
	}
	return a.ID > b.ID
}

// nanocores is delta over window in nanocores, delta×10⁹/window rounded to the nearest (halves up),
// without overflow (a 128-bit product; a rate beyond uint64, which no machine reaches, saturates).
// false for a negative delta.
func nanocores(delta, window time.Duration) (uint64, bool) {
	if delta < 0 {
		return 0, false
	}
	w := uint64(window)
	hi, lo := bits.Mul64(uint64(delta), uint64(time.Second))
	var carry uint64
	lo, carry = bits.Add64(lo, w/2, 0)
	hi += carry
	if hi >= w {
		return math.MaxUint64, true
	}
	q, _ := bits.Div64(hi, lo, w)
	return q, true
}

// roundBytes is memory in bytes, rounded to the nearest; never negative.
func roundBytes(m float64) uint64 {
	if !(m > 0) {
		return 0
	}
	if m >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(math.Round(m))
}
