package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/probeactor/probeactor/cmd/node/internal/server"
)

const topSynopsis = "top pod[s] [NAME...] [-n NAMESPACE | -A] [--containers] [--sort-by cpu|memory] [--no-headers] [--window D] [--server ADDR]"

// topCommand is `kubectl top pods` against a running node: each pod's (or container's) CPU, as
// the rate of its usage counter over --window (two reads of the node's /metrics/resource), and
// memory working set now, in kubectl's table ("3m", "12Mi").
func topCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("top", topSynopsis, stderr)
	srv := fs.String("server", server.DefaultListen, "address of a running node's HTTP API")
	ns := fs.String("n", "default", "only pods in this `NAMESPACE`")
	all := fs.Bool("A", false, "pods in every namespace (a NAMESPACE column)")
	containers := fs.Bool("containers", false, "a line per container (a POD column)")
	sortBy := fs.String("sort-by", "", "sort by `cpu` or `memory`, largest first (default: by namespace and name)")
	noHeaders := fs.Bool("no-headers", false, "print the table without its header line")
	window := fs.Duration("window", time.Second, "the CPU rate's window: how long between the two reads of the usage counters (kubectl's metrics-server measures over its own)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(rest) == 0 || (rest[0] != "pod" && rest[0] != "pods" && rest[0] != "po") {
		fmt.Fprintln(stderr, "error: node top shows pods: node top pods [NAME...] (kubectl's top pod)")
		return 2
	}
	names := rest[1:]
	switch {
	case *sortBy != "" && *sortBy != "cpu" && *sortBy != "memory":
		fmt.Fprintf(stderr, "error: --sort-by %q: use cpu or memory\n", *sortBy)
		return 2
	case *window <= 0:
		fmt.Fprintf(stderr, "error: --window %v: must be a positive duration (e.g. 1s)\n", *window)
		return 2
	case *all && len(names) > 0:
		fmt.Fprintln(stderr, "error: a pod name and -A cannot go together: name the pods of one namespace (-n)")
		return 2
	}
	base := serverURL(*srv)
	first, t0, err := readUsage(base)
	if err == nil {
		time.Sleep(*window)
	}
	var second map[usageKey]usageSample
	var t1 time.Time
	if err == nil {
		second, t1, err = readUsage(base)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	rows := topRows(first, second, t1.Sub(t0), *containers)
	rows = slices.DeleteFunc(rows, func(r topRow) bool { return !*all && r.key.namespace != *ns })
	if len(names) > 0 {
		rows = slices.DeleteFunc(rows, func(r topRow) bool { return !slices.Contains(names, r.key.pod) })
		for _, n := range names {
			if !slices.ContainsFunc(rows, func(r topRow) bool { return r.key.pod == n }) {
				fmt.Fprintf(stderr, "error: pod %q has no metrics in namespace %q: it is not running on this node\n", n, *ns)
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
	printTop(stdout, rows, *all, *containers, *noHeaders)
	return 0
}

// usageKey names a pod's (container "") or a container's usage.
type usageKey struct{ namespace, pod, container string }

// usageSample is one read of a usage: its CPU counter (core-seconds) and memory working set.
type usageSample struct {
	cpu    float64
	memory float64
}

// readUsage reads node's /metrics/resource: every container's and pod's usage, and when.
func readUsage(base string) (map[usageKey]usageSample, time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := apiGet(ctx, base, "/metrics/resource")
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

// topRow is one line of the table.
type topRow struct {
	key    usageKey
	cores  float64 // CPU over the window
	memory float64 // bytes, at the second read
}

// topRows is the pods' (or, with containers, the containers') usage: the CPU counter's rate
// between the two reads (a counter that went back, a container restarted between them, counts from
// zero), the memory of the second. Only what both reads have.
func topRows(first, second map[usageKey]usageSample, elapsed time.Duration, containers bool) []topRow {
	var rows []topRow
	for k, b := range second {
		if (k.container != "") != containers {
			continue
		}
		a, ok := first[k]
		if !ok {
			continue
		}
		used := b.cpu - a.cpu
		if used < 0 {
			used = b.cpu
		}
		rows = append(rows, topRow{key: k, cores: used / elapsed.Seconds(), memory: b.memory})
	}
	return rows
}

func sortTop(rows []topRow, by string) {
	slices.SortFunc(rows, func(a, b topRow) int {
		switch {
		case by == "cpu" && a.cores != b.cores:
			return cmpDesc(a.cores, b.cores)
		case by == "memory" && a.memory != b.memory:
			return cmpDesc(a.memory, b.memory)
		}
		return strings.Compare(a.key.namespace+"/"+a.key.pod+"/"+a.key.container, b.key.namespace+"/"+b.key.pod+"/"+b.key.container)
	})
}

func cmpDesc(a, b float64) int {
	if a > b {
		return -1
	}
	return 1
}

// printTop prints kubectl top's table: CPU in millicores ("3m"), memory in mebibytes ("12Mi").
func printTop(w io.Writer, rows []topRow, namespaces, containers, noHeaders bool) {
	tw := tabwriter.NewWriter(w, 10, 4, 3, ' ', 0) // kubectl's printers.GetNewTabWriter
	var header []string
	if namespaces {
		header = append(header, "NAMESPACE")
	}
	if containers {
		header = append(header, "POD")
	}
	header = append(header, "NAME", "CPU(cores)", "MEMORY(bytes)")
	if !noHeaders {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for _, r := range rows {
		var cols []string
		if namespaces {
			cols = append(cols, r.key.namespace)
		}
		name := r.key.pod
		if containers {
			cols = append(cols, r.key.pod)
			name = r.key.container
		}
		cols = append(cols, name, fmt.Sprintf("%dm", int64(r.cores*1000+0.5)), fmt.Sprintf("%dMi", int64(r.memory)/(1024*1024)))
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	_ = tw.Flush()
}
