package kubectl

import (
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TopPod is one line of kubectl top pod: a pod's usage (the sum of its containers'), or, in a
// table of containers, one container's (Container set).
type TopPod struct {
	Namespace, Pod, Container string
	CPU, Memory               resource.Quantity
}

// TopNode is one line of kubectl top node: a node's usage and what its percentages are of (its
// allocatable, or its capacity; a resource it lacks has no percentage), or, Unknown, a node
// without metrics.
type TopNode struct {
	Name        string
	CPU, Memory resource.Quantity
	Available   v1.ResourceList
	Unknown     bool
}

// PrintTopPods prints rows, in their order, as kubectl 1.37's top pod prints metrics
// (metricsutil.TopCmdPrinter.PrintPodMetrics): a NAMESPACE column with namespaces, a POD column
// with containers, CPU in millicores rounded up, memory in whole mebibytes, every cell ended by a
// tab in kubectl's tabwriter; with sum, kubectl's rule under the two usage columns and their
// totals. Nothing for no rows, as kubectl.
func PrintTopPods(w io.Writer, rows []TopPod, namespaces, containers, noHeaders, sum bool) {
	if len(rows) == 0 {
		return
	}
	tw := NewTabWriter(w)
	defer tw.Flush()
	columns := 3 // NAME, CPU(cores), MEMORY(bytes)
	if !noHeaders {
		if namespaces {
			cell(tw, "NAMESPACE")
			columns++
		}
		if containers {
			cell(tw, "POD")
			columns++
		}
		for _, h := range []string{"NAME", "CPU(cores)", "MEMORY(bytes)"} {
			cell(tw, h)
		}
		fmt.Fprint(tw, "\n")
	}
	var cpu, memory resource.Quantity
	for _, r := range rows {
		if namespaces {
			cell(tw, r.Namespace)
		}
		name := r.Pod
		if containers {
			cell(tw, r.Pod)
			name = r.Container
		}
		cell(tw, name)
		usage(tw, r.CPU, r.Memory, nil)
		fmt.Fprint(tw, "\n")
		cpu.Add(r.CPU)
		memory.Add(r.Memory)
	}
	if sum {
		// kubectl counts the optional columns only when it prints the header: its rule and totals
		// stand further left without one.
		for range columns - 2 {
			cell(tw, "")
		}
		cell(tw, "________")
		cell(tw, "________")
		fmt.Fprint(tw, "\n")
		for range columns - 3 {
			cell(tw, "")
		}
		cell(tw, "")
		usage(tw, cpu, memory, nil)
		fmt.Fprint(tw, "\n")
	}
}

// PrintTopNodes prints rows, in their order, as kubectl 1.37's top node prints metrics
// (metricsutil.TopCmdPrinter.PrintNodeMetrics): NAME, CPU(cores), CPU(%), MEMORY(bytes) and
// MEMORY(%), a percentage truncated and only of what the node has, <unknown> in every column of a
// node without metrics. Nothing for no rows.
func PrintTopNodes(w io.Writer, rows []TopNode, noHeaders bool) {
	if len(rows) == 0 {
		return
	}
	tw := NewTabWriter(w)
	defer tw.Flush()
	if !noHeaders {
		for _, h := range []string{"NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"} {
			cell(tw, h)
		}
		fmt.Fprint(tw, "\n")
	}
	for _, r := range rows {
		cell(tw, r.Name)
		if r.Unknown {
			for range 4 {
				cell(tw, "<unknown>")
			}
		} else {
			usage(tw, r.CPU, r.Memory, r.Available)
		}
		fmt.Fprint(tw, "\n")
	}
}

// cell is kubectl's printValue: the value and a tab.
func cell(w io.Writer, v string) { fmt.Fprintf(w, "%s\t", v) }

// usage is kubectl's printAllResourceUsages for CPU and memory: each as kubectl prints it, then
// its percentage of available when available has it.
func usage(w io.Writer, cpu, memory resource.Quantity, available v1.ResourceList) {
	for _, q := range []struct {
		name  v1.ResourceName
		value resource.Quantity
		text  string
	}{
		{v1.ResourceCPU, cpu, fmt.Sprintf("%vm", cpu.MilliValue())},
		{v1.ResourceMemory, memory, fmt.Sprintf("%vMi", memory.Value()/(1024*1024))},
	} {
		fmt.Fprint(w, q.text)
		fmt.Fprint(w, "\t")
		if a, ok := available[q.name]; ok {
			fraction := 0.0
			if !a.IsZero() {
				fraction = float64(q.value.MilliValue()) / float64(a.MilliValue()) * 100
			}
			cell(w, fmt.Sprintf("%d%%", int64(fraction)))
		}
	}
}
