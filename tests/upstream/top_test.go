package upstream

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/metricsutil"
	metricsapi "k8s.io/metrics/pkg/apis/metrics"

	"github.com/probeactor/probeactor/internal/kubectl"
)

// TestTopPodsIsKubectls: `node top pods`' table, header, alignment, rounding, --containers, -A,
// --no-headers and --sum all, is what kubectl 1.37's top pod prints for the same metrics, byte for
// byte (metricsutil.TopCmdPrinter.PrintPodMetrics), on 2,000 random lists of 1-5 pods of 1-3
// containers, in kubectl's default order (by namespace and name, containers by name).
func TestTopPodsIsKubectls(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(97, 101))
	for range 2000 {
		var metrics []metricsapi.PodMetrics
		for j := range 1 + r.IntN(5) {
			m := metricsapi.PodMetrics{ObjectMeta: metav1.ObjectMeta{Namespace: pickOf(r, "default", "kube-system", "a-much-longer-namespace"),
				Name: pickOf(r, "web", "db-0", "a-pod-with-a-long-name-7f9c") + string(rune('a'+j))}}
			for k := range 1 + r.IntN(3) {
				m.Containers = append(m.Containers, metricsapi.ContainerMetrics{Name: pickOf(r, "app", "sidecar-proxy", "c") + string(rune('a'+k)),
					Usage: randomUsage(r)})
			}
			sort.Slice(m.Containers, func(a, b int) bool { return m.Containers[a].Name < m.Containers[b].Name }) // kubectl's order
			metrics = append(metrics, m)
		}
		namespaces, containers, noHeaders, sum := r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(4) == 0, r.IntN(3) == 0
		sort.SliceStable(metrics, func(i, j int) bool { // kubectl's PodMetricsSorter without --sort-by
			if namespaces && metrics[i].Namespace != metrics[j].Namespace {
				return metrics[i].Namespace < metrics[j].Namespace
			}
			return metrics[i].Name < metrics[j].Name
		})
		var theirs bytes.Buffer
		require.NoError(t, metricsutil.NewTopCmdPrinter(&theirs, false).PrintPodMetrics(clonePods(metrics), containers, namespaces, noHeaders, "", sum))

		var rows []kubectl.TopPod
		for _, m := range metrics {
			if containers {
				for _, c := range m.Containers {
					rows = append(rows, kubectl.TopPod{Namespace: m.Namespace, Pod: m.Name, Container: c.Name, CPU: c.Usage[v1.ResourceCPU], Memory: c.Usage[v1.ResourceMemory]})
				}
				continue
			}
			var cpu, memory resource.Quantity
			for _, c := range m.Containers {
				cpu.Add(c.Usage[v1.ResourceCPU])
				memory.Add(c.Usage[v1.ResourceMemory])
			}
			rows = append(rows, kubectl.TopPod{Namespace: m.Namespace, Pod: m.Name, CPU: cpu, Memory: memory})
		}
		var ours bytes.Buffer
		kubectl.PrintTopPods(&ours, rows, namespaces, containers, noHeaders, sum)
		if !assert.Equal(t, theirs.String(), ours.String(), "namespaces %v, containers %v, no headers %v, sum %v", namespaces, containers, noHeaders, sum) {
			return
		}
	}
}

// TestTopNodesIsKubectls: `node top node`'s table is what kubectl 1.37's top node prints for the
// same metrics and nodes (metricsutil.TopCmdPrinter.PrintNodeMetrics), byte for byte: percentages
// of what a node has (none of what it lacks), and a node without metrics <unknown>, on 2,000
// random fleets of 1-4 nodes in kubectl's default order (by name; kubectl prints the nodes
// without metrics from a map, in no order, so at most one here).
func TestTopNodesIsKubectls(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(103, 107))
	for range 2000 {
		var metrics []metricsapi.NodeMetrics
		available := map[string]v1.ResourceList{}
		var rows []kubectl.TopNode
		n := 1 + r.IntN(4)
		for i := range n {
			name := fmt.Sprintf("%s-%d", pickOf(r, "n", "worker", "a-node-with-a-long-name"), i)
			var has v1.ResourceList
			switch r.IntN(4) {
			case 0: // no Node object: no percentages
			case 1:
				has = v1.ResourceList{v1.ResourceCPU: randomUsage(r)[v1.ResourceCPU]}
			default:
				has = randomUsage(r)
			}
			if i == n-1 && r.IntN(3) == 0 { // the node without metrics
				available[name] = has
				rows = append(rows, kubectl.TopNode{Name: name, Unknown: true})
				continue
			}
			if has != nil {
				available[name] = has
			}
			usage := randomUsage(r)
			metrics = append(metrics, metricsapi.NodeMetrics{ObjectMeta: metav1.ObjectMeta{Name: name}, Usage: usage})
			rows = append(rows, kubectl.TopNode{Name: name, CPU: usage[v1.ResourceCPU], Memory: usage[v1.ResourceMemory], Available: has})
		}
		sort.SliceStable(rows, func(i, j int) bool { return !rows[i].Unknown && (rows[j].Unknown || rows[i].Name < rows[j].Name) })
		noHeaders := r.IntN(4) == 0
		var theirs bytes.Buffer
		require.NoError(t, metricsutil.NewTopCmdPrinter(&theirs, false).PrintNodeMetrics(metrics, available, noHeaders, ""))
		var ours bytes.Buffer
		if len(metrics) > 0 { // kubectl prints nothing without metrics (its command says "metrics not available yet")
			kubectl.PrintTopNodes(&ours, rows, noHeaders)
		}
		if !assert.Equal(t, theirs.String(), ours.String(), "no headers %v", noHeaders) {
			return
		}
	}
}

// randomUsage is a CPU and a memory usage as metrics-server reports them: whole nanocores and
// bytes, from nothing to a few dozen cores and gibibytes.
func randomUsage(r *rand.Rand) v1.ResourceList {
	cpu := resource.NewScaledQuantity(r.Int64N(40e9), resource.Nano)
	memory := resource.NewQuantity(r.Int64N(40<<30), resource.BinarySI)
	return v1.ResourceList{v1.ResourceCPU: *cpu, v1.ResourceMemory: *memory}
}

// clonePods is a deep copy: kubectl's printer sorts the containers it is given.
func clonePods(ms []metricsapi.PodMetrics) []metricsapi.PodMetrics {
	out := make([]metricsapi.PodMetrics, len(ms))
	for i := range ms {
		ms[i].DeepCopyInto(&out[i])
	}
	return out
}
