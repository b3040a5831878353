package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/probeactor/probeactor/cmd/node/internal/server"
	"github.com/probeactor/probeactor/fleet/aggregator"
	"github.com/probeactor/probeactor/internal/kubectl"
)

const topSynopsis = "top pod[s] [NAME... | -l SELECTOR] [-n NAMESPACE | -A] [--containers] [--sum] [--sort-by cpu|memory] [--no-headers] [--window D] [--server ADDR]\n" +
	"       node top node[s] [NAME... | -l SELECTOR] [--show-capacity] [--sort-by cpu|memory] [--no-headers] [--window D] [--server ADDR]"

// topCommand is `kubectl top pod` and `kubectl top node` against a running node: each pod's (or
// container's) CPU, as the rate of its usage counter over --window (two reads of the node's
// /metrics/resource), and memory working set now, in kubectl's table ("3m", "12Mi"); for the node,
// the host's, and each as a share of the node's allocatable (or capacity) from its /nodes.
//
// Against a fleet aggregator (its 404 for /metrics/resource carries its Probeactor-Server header)
// it reads the aggregator's metrics API once instead, as kubectl reads metrics-server's: the rates
// are the nodes' own, over their sampling windows (--window does not apply), and `top node` lists
// every node of the fleet, against each one's allocatable from the aggregator's /nodes.
func topCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("top", topSynopsis, stderr)
	srv := fs.String("server", server.DefaultListen, "address of a running node's HTTP API, or of a fleet aggregator's (its metrics API: every node of the fleet)")
	ns := fs.String("n", "default", "pods: only pods in this `NAMESPACE`")
	all := fs.Bool("A", false, "pods: pods in every namespace (a NAMESPACE column)")
	containers := fs.Bool("containers", false, "pods: a line per container (a POD column)")
	selector := fs.String("l", "", "only pods (or nodes) whose labels match this `SELECTOR` (kubectl's: app=web, tier!=db, env in (a,b), !canary)")
	fs.StringVar(selector, "selector", "", "same as -l `SELECTOR`")
	sum := fs.Bool("sum", false, "pods: print the sum of the usage under the table, as kubectl top pod --sum")
	showCapacity := fs.Bool("show-capacity", false, "nodes: CPU(%) and MEMORY(%) of the node's capacity instead of its allocatable (node reserves nothing: the same)")
	sortBy := fs.String("sort-by", "", "sort by `cpu` or `memory`, largest first (default: by namespace and name)")
	noHeaders := fs.Bool("no-headers", false, "print the table without its header line")
	window := fs.Duration("window", time.Second, "the CPU rate's window: how long between the two reads of a node's usage counters (kubectl's metrics-server measures over its own; ignored against a fleet aggregator, whose rates are over each node's sampling window)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	kind := map[string]string{"pod": "pods", "node": "node"}[resourceKind(rest)]
	if kind == "" {
		fmt.Fprintln(stderr, "error: node top shows pods or nodes: node top pods [NAME...] or node top node [NAME...] (kubectl's top pod and top node)")
		return 2
	}
	names := rest[1:]
	var misplaced []string // the flags of the other kind
	for _, f := range map[string][]string{"pods": {"--show-capacity"}, "node": {"-n", "-A", "--containers", "--sum"}}[kind] {
		if flagSet(fs, strings.TrimLeft(f, "-")) {
			misplaced = append(misplaced, f)
		}
	}
	switch {
	case len(misplaced) > 0:
		other := map[string]string{"pods": "node", "node": "pods"}[kind]
		fmt.Fprintf(stderr, "error: %s: a flag of node top %s, not of node top %s\n", strings.Join(misplaced, ", "), other, kind)
		return 2
	case *sortBy != "" && *sortBy != "cpu" && *sortBy != "memory":
		fmt.Fprintf(stderr, "error: --sort-by %q: use cpu or memory\n", *sortBy)
		return 2
	case *window <= 0:
		fmt.Fprintf(stderr, "error: --window %v: must be a positive duration (e.g. 1s)\n", *window)
		return 2
	case *all && len(names) > 0:
		fmt.Fprintln(stderr, "error: a pod name and -A cannot go together: name the pods of one namespace (-n)")
		return 2
	case *selector != "" && len(names) > 0: // kubectl's words, which differ between its two commands
		fmt.Fprintln(stderr, map[string]string{"pods": "error: only one of NAME or selector can be provided",
			"node": "error: only one of NAME or --selector can be provided"}[kind])
		return 2
	}
	labelSelector, err := labels.Parse(*selector)
	if err != nil {
		fmt.Fprintf(stderr, "error: -l %q: %v\n", *selector, err)
		return 2
	}
	base := serverURL(*srv)
	if kind == "node" {
		return topNodeCommand(base, names, labelSelector, *window, *showCapacity, *sortBy, *noHeaders, stdout, stderr)
	}
	var rows []topRow
	first, t0, err := readUsage(base)
	fleet := errors.Is(err, errFleet)
	switch {
	case fleet:
		rows, err = fleetPodRows(base, *ns, *all, *containers, *selector, stderr)
	case err == nil:
		time.Sleep(*window)
		var second map[usageKey]usageSample
		var t1 time.Time
		if second, t1, err = readUsage(base); err == nil {
			rows = topRows(first, second, t1.Sub(t0), *containers)
		}
		if err == nil && !labelSelector.Empty() {
			rows, err = selectByLabels(base, rows, labelSelector, stderr)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	rows = slices.DeleteFunc(rows, func(r topRow) bool { return !*all && r.key.namespace != *ns })
	if len(names) > 0 {
		rows = slices.DeleteFunc(rows, func(r topRow) bool { return !slices.Contains(names, r.key.pod) })
		for _, n := range names {
			if !slices.ContainsFunc(rows, func(r topRow) bool { return r.key.pod == n }) {
				if fleet {
					fmt.Fprintf(stderr, "Error from server (NotFound): podmetrics.metrics.k8s.io \"%s/%s\" not found\n", *ns, n)
				} else {
					fmt.Fprintf(stderr, "error: pod %q has no metrics in namespace %q: it is not running on this node\n", n, *ns)
				}
				return 1
			}
		}
	}
	if len(rows) == 0 {
		if *all {
			fmt.Fprintln(stderr, "No resources found")
		} else {
			fmt.Fprintf(stderr, "No resources found in %s namespace.\n", *ns)
		}
		return 0
	}
	sortTop(rows, *sortBy)
	printTop(stdout, rows, *all, *containers, *noHeaders, *sum)
	return 0
}

// selectByLabels keeps the rows of the pods whose labels, read from the node's /pods, match
// selector (/metrics/resource carries no labels; the metrics API selects by itself).
func selectByLabels(base string, rows []topRow, selector labels.Selector, stderr io.Writer) ([]topRow, error) {
	var list v1.PodList
	if err := readJSON(base, "/pods", &list, stderr); err != nil {
		return nil, fmt.Errorf("the pods' labels: %w", err)
	}
	match := map[[2]string]bool{}
	for _, p := range list.Items {
		if selector.Matches(labels.Set(p.Labels)) {
			match[[2]string{p.Namespace, p.Name}] = true
		}
	}
	return slices.DeleteFunc(rows, func(r topRow) bool { return !match[[2]string{r.key.namespace, r.key.pod}] }), nil
}

// topNodeCommand is `kubectl top node [NAME...]` against the node at base: the host's CPU (the
// rate of node_cpu_usage_seconds_total over window) and memory working set, as shares of what its
// /nodes says it has. A NAME that is not this node's is kubectl's NotFound, before the window.
// Against a fleet aggregator, topFleetNodes.
func topNodeCommand(base string, names []string, selector labels.Selector, window time.Duration, capacity bool, sortBy string, noHeaders bool, stdout, stderr io.Writer) int {
	first, t0, err := readUsage(base)
	if errors.Is(err, errFleet) {
		return topFleetNodes(base, names, selector, capacity, sortBy, noHeaders, stdout, stderr)
	}
	var node v1.Node
	if err == nil {
		node, err = readNode(base, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	for _, n := range names {
		if n != node.Name {
			fmt.Fprintf(stderr, "Error from server (NotFound): nodemetrics.metrics.k8s.io %q not found\n", n)
			return 1
		}
	}
	if !selector.Matches(labels.Set(node.Labels)) { // kubectl's answer when its selector lists no node
		fmt.Fprintln(stderr, "error: metrics not available yet")
		return 1
	}
	time.Sleep(window)
	second, t1, err := readUsage(base)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	row, err := topNodeRow(node, first, second, t1.Sub(t0), capacity)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	printTopNodes(stdout, []nodeTopRow{row}, noHeaders)
	return 0
}

// readNode reads the node's own Node object from its /nodes (one item).
func readNode(base string, stderr io.Writer) (v1.Node, error) {
	var list v1.NodeList
	if err := readJSON(base, "/nodes", &list, stderr); err != nil {
		return v1.Node{}, err
	}
	if len(list.Items) != 1 {
		return v1.Node{}, fmt.Errorf("%s/nodes lists %d nodes: node top node needs a node's API, which lists itself", base, len(list.Items))
	}
	return list.Items[0], nil
}

// usageKey names a pod's (container "") or a container's usage, or, nodeKey, the host's.
type usageKey struct{ namespace, pod, container string }

// nodeKey is the host's usage: node_cpu_usage_seconds_total and node_memory_working_set_bytes.
var nodeKey = usageKey{}

// usageSample is one read of a usage: its CPU counter (core-seconds) and memory working set.
type usageSample struct {
	cpu    float64
	memory float64
}

// errFleet is readUsage's answer from a fleet aggregator: it serves no /metrics/resource (its 404
// says who it is), node top reads its metrics API instead.
var errFleet = errors.New("a fleet aggregator serves no /metrics/resource")

// readUsage reads node's /metrics/resource: every container's and pod's usage, the host's
// (nodeKey), and when. A fleet aggregator is errFleet; another server without that path an error
// saying so.
func readUsage(base string) (map[usageKey]usageSample, time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := apiGet(ctx, base, "/metrics/resource")
	if se := (*statusError)(nil); errors.As(err, &se) && se.code == 404 {
		if se.fleet {
			return nil, time.Time{}, errFleet
		}
		return nil, time.Time{}, fmt.Errorf("node top needs a node's API (node run's --listen, default %s): %s serves no /metrics/resource (%s)", server.DefaultListen, base, se.status)
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	defer resp.Body.Close()
	at := time.Now()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read %s/metrics/resource: %w", base, err)
	}
	if f := families["scrape_error"]; f != nil && len(f.Metric) > 0 && f.Metric[0].GetGauge().GetValue() != 0 {
		return nil, time.Time{}, errors.New("node could not read its containers' usage (scrape_error 1)")
	}
	out := map[usageKey]usageSample{}
	for name, set := range map[string]func(*usageSample, float64){
		"container_cpu_usage_seconds_total":  func(s *usageSample, v float64) { s.cpu = v },
		"container_memory_working_set_bytes": func(s *usageSample, v float64) { s.memory = v },
		"pod_cpu_usage_seconds_total":        func(s *usageSample, v float64) { s.cpu = v },
		"pod_memory_working_set_bytes":       func(s *usageSample, v float64) { s.memory = v },
		"node_cpu_usage_seconds_total":       func(s *usageSample, v float64) { s.cpu = v },
		"node_memory_working_set_bytes":      func(s *usageSample, v float64) { s.memory = v },
	} {
		f := families[name]
		if f == nil {
			continue
		}
		for _, m := range f.Metric {
			var k usageKey
			for _, l := range m.Label {
				switch l.GetName() {
				case "namespace":
					k.namespace = l.GetValue()
				case "pod":
					k.pod = l.GetValue()
				case "container":
					k.container = l.GetValue()
				default:
				}
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			s := out[k]
			set(&s, v)
			out[k] = s
		}
	}
	return out, at, nil
}

// topRow is one line of the table: CPU over the window (nanocores), memory at its end.
type topRow struct {
	key         usageKey
	cpu, memory resource.Quantity
}

// topRows is the pods' (or, with containers, the containers') usage: the CPU counter's rate
// between the two reads (a counter that went back, a container restarted between them, counts from
// zero), the memory of the second. Only what both reads have.
func topRows(first, second map[usageKey]usageSample, elapsed time.Duration, containers bool) []topRow {
	var rows []topRow
	for k, b := range second {
		if k == nodeKey || (k.container != "") != containers {
			continue
		}
		a, ok := first[k]
		if !ok {
			continue
		}
		rows = append(rows, topRow{key: k, cpu: nanocores(cpuRate(a, b, elapsed)), memory: bytesOf(b.memory)})
	}
	return rows
}

// nanocores is cores as metrics-server reports CPU: whole nanocores.
func nanocores(cores float64) resource.Quantity {
	return *resource.NewScaledQuantity(int64(math.Round(cores*1e9)), resource.Nano)
}

// bytesOf is memory as metrics-server reports it: whole bytes.
func bytesOf(memory float64) resource.Quantity {
	return *resource.NewQuantity(int64(memory), resource.BinarySI)
}

// cpuRate is the cores used between two reads of a counter, elapsed apart; a counter that went
// back (a container restarted between them) counts from zero.
func cpuRate(first, second usageSample, elapsed time.Duration) float64 {
	used := second.cpu - first.cpu
	if used < 0 {
		used = second.cpu
	}
	return used / elapsed.Seconds()
}

func sortTop(rows []topRow, by string) {
	slices.SortFunc(rows, func(a, b topRow) int {
		switch {
		case by == "cpu" && a.cpu.MilliValue() != b.cpu.MilliValue(): // kubectl's sorters
			return cmp.Compare(b.cpu.MilliValue(), a.cpu.MilliValue())
		case by == "memory" && a.memory.Value() != b.memory.Value():
			return cmp.Compare(b.memory.Value(), a.memory.Value())
		}
		return strings.Compare(a.key.namespace+"/"+a.key.pod+"/"+a.key.container, b.key.namespace+"/"+b.key.pod+"/"+b.key.container)
	})
}

// printTop prints kubectl 1.37's top pod table (kubectl.PrintTopPods), with sum its totals.
func printTop(w io.Writer, rows []topRow, namespaces, containers, noHeaders, sum bool) {
	out := make([]kubectl.TopPod, 0, len(rows))
	for _, r := range rows {
		out = append(out, kubectl.TopPod{Namespace: r.key.namespace, Pod: r.key.pod, Container: r.key.container, CPU: r.cpu, Memory: r.memory})
	}
	kubectl.PrintTopPods(w, out, namespaces, containers, noHeaders, sum)
}

// nodeTopRow is `kubectl top node`'s line for one node: its usage as metrics-server reports it
// (CPU in whole nanocores, memory in bytes) and what the percentages are of (its allocatable, or
// its capacity); a resource the node does not report has no percentage.
type nodeTopRow struct {
	name        string
	cpu, memory resource.Quantity
	available   v1.ResourceList
	unknown     bool // a node without metrics: kubectl's <unknown> in every column
}

// topNodeRow is the node's line from two reads of its /metrics/resource elapsed apart: the
// host's CPU rate between them and its memory at the second, against node's allocatable (with
// capacity, its capacity). An error when a read lacks the host's series.
func topNodeRow(node v1.Node, first, second map[usageKey]usageSample, elapsed time.Duration, capacity bool) (nodeTopRow, error) {
	a, okA := first[nodeKey]
	b, okB := second[nodeKey]
	if !okA || !okB {
		return nodeTopRow{}, errors.New("/metrics/resource has no node_cpu_usage_seconds_total or node_memory_working_set_bytes")
	}
	return nodeRow(node, nanocores(cpuRate(a, b, elapsed)), bytesOf(b.memory), capacity), nil
}

// nodeRow is node's line for a usage: against its allocatable (with capacity, its capacity).
func nodeRow(node v1.Node, cpu, memory resource.Quantity, capacity bool) nodeTopRow {
	available := node.Status.Allocatable
	if capacity {
		available = node.Status.Capacity
	}
	return nodeTopRow{name: node.Name, cpu: cpu, memory: memory, available: available}
}

// printTopNodes prints kubectl 1.37's top node table (kubectl.PrintTopNodes).
func printTopNodes(w io.Writer, rows []nodeTopRow, noHeaders bool) {
	out := make([]kubectl.TopNode, 0, len(rows))
	for _, r := range rows {
		out = append(out, kubectl.TopNode{Name: r.name, CPU: r.cpu, Memory: r.memory, Available: r.available, Unknown: r.unknown})
	}
	kubectl.PrintTopNodes(w, out, noHeaders)
}

// fleetPodRows is node top pods against a fleet aggregator: one read of its metrics API, the
// namespace's pods (with all, every pod's; with a selector, those it selects by their labels), as
// kubectl top pod reads metrics-server's.
func fleetPodRows(base, namespace string, all, containers bool, selector string, stderr io.Writer) ([]topRow, error) {
	path := aggregator.MetricsAPI + "/namespaces/" + url.PathEscape(namespace) + "/pods"
	if all {
		path = aggregator.MetricsAPI + "/pods"
	}
	if selector != "" {
		path += "?labelSelector=" + url.QueryEscape(selector)
	}
	var list metricsv1beta1.PodMetricsList
	if err := readFleetMetrics(base, path, &list, stderr); err != nil {
		return nil, err
	}
	return metricsRows(list.Items, containers), nil
}

// readFleetMetrics reads path of the aggregator's metrics API into v; an aggregator without it
// (an older version) is an error saying so.
func readFleetMetrics(base, path string, v any, stderr io.Writer) error {
	err := readJSON(base, path, v, stderr)
	if se := (*statusError)(nil); errors.As(err, &se) && se.code == 404 {
		return fmt.Errorf("%s is a fleet aggregator that serves no %s (%s): node top needs node fleet of this version", base, aggregator.MetricsAPI, se.status)
	}
	return err
}

// readJSON reads base's path into v within 10 s; its error names what was read.
func readJSON(base, path string, v any, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := getJSON(ctx, base, path, v, stderr); err != nil {
		return fmt.Errorf("read %s%s: %w", base, path, err)
	}
	return nil
}

// metricsRows is kubectl top pod's rows from the metrics API: each container's usage (with
// containers), or each pod's, the sum of its containers' (kubectl's getPodMetrics).
func metricsRows(items []metricsv1beta1.PodMetrics, containers bool) []topRow {
	var rows []topRow
	for _, m := range items {
		if containers {
			for _, c := range m.Containers {
				rows = append(rows, topRow{key: usageKey{m.Namespace, m.Name, c.Name}, cpu: c.Usage[v1.ResourceCPU], memory: c.Usage[v1.ResourceMemory]})
			}
			continue
		}
		sum := v1.ResourceList{v1.ResourceCPU: resource.Quantity{}, v1.ResourceMemory: resource.Quantity{}}
		for _, c := range m.Containers {
			for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
				q := sum[name]
				q.Add(c.Usage[name])
				sum[name] = q
			}
		}
		rows = append(rows, topRow{key: usageKey{m.Namespace, m.Name, ""}, cpu: sum[v1.ResourceCPU], memory: sum[v1.ResourceMemory]})
	}
	return rows
}

// topFleetNodes is kubectl top node against a fleet aggregator (metrics-server's API and the API
// server's nodes): one read of its node metrics and its /nodes; each node with metrics against its
// allocatable (capacity), no percentage for what its Node object lacks (a node that sent none);
// without a NAME, each node without metrics (out of contact, or no window yet) after them,
// <unknown>, as kubectl prints a node metrics-server could not scrape. A NAME without metrics is
// kubectl's NotFound; no metrics at all kubectl's "metrics not available yet".
func topFleetNodes(base string, names []string, selector labels.Selector, capacity bool, sortBy string, noHeaders bool, stdout, stderr io.Writer) int {
	var metrics metricsv1beta1.NodeMetricsList
	path := aggregator.MetricsAPI + "/nodes"
	if !selector.Empty() {
		path += "?labelSelector=" + url.QueryEscape(selector.String())
	}
	err := readFleetMetrics(base, path, &metrics, stderr)
	var nodes v1.NodeList
	if err == nil {
		err = readJSON(base, "/nodes", &nodes, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	for _, n := range names {
		if !slices.ContainsFunc(metrics.Items, func(m metricsv1beta1.NodeMetrics) bool { return m.Name == n }) {
			fmt.Fprintf(stderr, "Error from server (NotFound): nodemetrics.metrics.k8s.io %q not found\n", n)
			return 1
		}
	}
	if len(metrics.Items) == 0 {
		fmt.Fprintln(stderr, "error: metrics not available yet")
		return 1
	}
	// The nodes the selector selects (kubectl lists them with it): a node without metrics is
	// <unknown> only if it is one of them.
	nodes.Items = slices.DeleteFunc(nodes.Items, func(n v1.Node) bool { return !selector.Matches(labels.Set(n.Labels)) })
	rows, unknown := fleetNodeRows(metrics.Items, nodes.Items, names, capacity)
	sortTopNodes(rows, sortBy)
	printTopNodes(stdout, append(rows, unknown...), noHeaders)
	return 0
}

// fleetNodeRows is top node's lines from the metrics API and the nodes: those with metrics (only
// names', if any) against their Node objects; and, without names, the nodes without metrics,
// sorted by name.
func fleetNodeRows(metrics []metricsv1beta1.NodeMetrics, nodes []v1.Node, names []string, capacity bool) (rows, unknown []nodeTopRow) {
	byName := make(map[string]v1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	measured := map[string]bool{}
	for _, m := range metrics {
		if len(names) > 0 && !slices.Contains(names, m.Name) {
			continue
		}
		measured[m.Name] = true
		node, ok := byName[m.Name]
		if !ok {
			node = v1.Node{ObjectMeta: metav1.ObjectMeta{Name: m.Name}} // no Node object: no percentages
		}
		rows = append(rows, nodeRow(node, *m.Usage.Cpu(), *m.Usage.Memory(), capacity))
	}
	if len(names) > 0 {
		return rows, nil
	}
	for _, n := range nodes {
		if !measured[n.Name] {
			unknown = append(unknown, nodeTopRow{name: n.Name, unknown: true})
		}
	}
	slices.SortFunc(unknown, func(a, b nodeTopRow) int { return strings.Compare(a.name, b.name) })
	return rows, unknown
}

// sortTopNodes is kubectl's NodeMetricsSorter: by CPU millicores or memory bytes, largest first,
// else by name (ties by name too, where kubectl leaves them as they come).
func sortTopNodes(rows []nodeTopRow, by string) {
	slices.SortFunc(rows, func(a, b nodeTopRow) int {
		switch {
		case by == "cpu" && a.cpu.MilliValue() != b.cpu.MilliValue():
			return cmp.Compare(b.cpu.MilliValue(), a.cpu.MilliValue())
		case by == "memory" && a.memory.Value() != b.memory.Value():
			return cmp.Compare(b.memory.Value(), a.memory.Value())
		}
		return strings.Compare(a.name, b.name)
	})
}
