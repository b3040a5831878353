package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/probeactor/probeactor/cmd/node/internal/server"
	"github.com/probeactor/probeactor/fleet/aggregator"
	"github.com/probeactor/probeactor/internal/kubectl"
)

const getSynopsis = "get pods|nodes [NAME...] [-l SELECTOR] [--field-selector SELECTOR] [--server ADDR] [-n NAMESPACE | -A] [-o json|yaml|name|wide|jsonpath=T|custom-columns=C] [--sort-by PATH] [--show-labels] [--no-headers] [--ignore-not-found] [-w]"

// getCommand is `kubectl get pods|nodes` against a running node's (or a fleet aggregator's) list
// (a node's /nodes is its own Node object; an aggregator's, every node of the fleet):
// names, label selectors and kubectl's output formats, chosen client-side
// (internal/kubectl.Select), so the same command reads a node and an aggregator; -w reads the
// list every second (node has no watch API) and prints a row for each object that changed or went.
func getCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("get", getSynopsis, stderr)
	srv := fs.String("server", server.DefaultListen, "address of a running node's or a fleet aggregator's HTTP API (for nodes the default is an aggregator's, 127.0.0.1:10256; a node lists itself)")
	ns := fs.String("n", "", "only pods in this `NAMESPACE` (default: all; with NAMEs: default)")
	all := fs.Bool("A", false, "show the NAMESPACE column (and NODE, from a fleet aggregator)")
	selector := fs.String("l", "", "only objects whose labels match this `SELECTOR` (kubectl's: app=web, tier!=db, env in (a,b), !canary)")
	fs.StringVar(selector, "selector", "", "same as -l `SELECTOR`")
	fieldSelector := fs.String("field-selector", "", "only objects whose fields match this `SELECTOR` (the API server's: status.phase!=Running, spec.nodeName=n1, status.podIP=10.0.0.7; nodes: metadata.name, spec.unschedulable)")
	output := fs.String("o", "", "output `FORMAT`: json or yaml (the v1.PodList or v1.NodeList; one NAME: the object), name (pod/NAME), jsonpath=TEMPLATE, custom-columns=HEADER:PATH,..., wide (kubectl's IP, NODE, NOMINATED NODE and READINESS GATES columns for pods)")
	showLabels := fs.Bool("show-labels", false, "add a LABELS column")
	noHeaders := fs.Bool("no-headers", false, "print the table without its header line")
	ignoreNotFound := fs.Bool("ignore-not-found", false, "a NAME not found is no error: print nothing for it and exit 0")
	sortBy := fs.String("sort-by", "", "order by this field, a `PATH` (kubectl's: .metadata.name, .status.containerStatuses[0].restartCount, .metadata.creationTimestamp)")
	watch := fs.Bool("w", false, "after the list, print a row for each object that changes or goes, until interrupted")
	fs.BoolVar(watch, "watch", false, "same as -w")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	kind, sel, err := getArgs(rest, *ns, *all, *selector, *fieldSelector, *output, *showLabels)
	format, template, _ := strings.Cut(*output, "=")
	if err == nil && *watch && format != "" && format != "wide" && format != "name" {
		err = fmt.Errorf("-w prints rows (the table, -o wide or -o name), not -o %s", format)
	}
	g := getter{output: format, names: len(sel.Names), ignoreNotFound: *ignoreNotFound, stdout: stdout, stderr: stderr}
	if err == nil && format == "jsonpath" {
		g.jsonPath, err = kubectl.NewJSONPath(template)
	}
	if err == nil && format == "custom-columns" {
		g.columns, err = kubectl.NewCustomColumns(template, !*noHeaders)
	}
	if err == nil && *sortBy != "" {
		if g.sortBy, err = kubectl.NewSortBy(*sortBy); err != nil {
			err = fmt.Errorf("--sort-by %q: %v", *sortBy, err)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	if kind == "node" && !flagSet(fs, "server") {
		*srv = aggregator.DefaultListen // nodes are what a fleet aggregator knows
	}
	base := serverURL(*srv)
	fleet := false
	fetch := func(list any) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		fleet, err = getJSON(ctx, base, "/"+kind+"s", list, stderr)
		return err
	}
	if kind == "node" {
		return listAndWatch(g, kind, sel, *watch,
			func() ([]v1.Node, error) { var l v1.NodeList; err := fetch(&l); return l.Items, err },
			func(items []v1.Node) runtime.Object {
				return &v1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: orEmpty(items)}
			},
			func() func([]v1.Node) error {
				table := kubectl.NewNodeTable(stdout, *showLabels)
				if *noHeaders {
					table.WithoutHeader()
				}
				return func(nodes []v1.Node) error { return table.Print(nodes, time.Now()) }
			},
			func(n *v1.Node) string { return n.Name }, nodeVersion)
	}
	return listAndWatch(g, kind, sel, *watch,
		func() ([]v1.Pod, error) { var l v1.PodList; err := fetch(&l); return l.Items, err },
		func(items []v1.Pod) runtime.Object {
			return &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: orEmpty(items)}
		},
		func() func([]v1.Pod) error { // after the first read: whether a fleet aggregator answered
			table := kubectl.NewPodTable(stdout, kubectl.Columns{Namespace: *all, Node: *all && fleet, Wide: format == "wide", Labels: *showLabels})
			if *noHeaders {
				table.WithoutHeader()
			}
			return func(pods []v1.Pod) error { return table.Print(pods, time.Now()) }
		},
		func(p *v1.Pod) string { return p.Namespace + "/" + p.Name + "/" + p.Spec.NodeName }, podVersion)
}

// listAndWatch reads the list (fetch), prints what sel selects of it in g's output (asList for
// json and yaml, the table made by table after the first read) and, with watch, goes on with
// watchRows: `node get` for one kind.
func listAndWatch[T any, PT interface {
	*T
	runtime.Object
	GetName() string
	GetNamespace() string
	GetLabels() map[string]string
}](g getter, kind string, sel kubectl.Selection, watch bool, fetch func() ([]T, error), asList func([]T) runtime.Object,
	table func() func([]T) error, key, version func(*T) string) int {
	read := func() ([]T, []string, error) {
		items, err := fetch()
		chosen, missing := kubectl.Select[T, PT](items, sel)
		return chosen, missing, err
	}
	items, missing, err := read()
	if err == nil && g.sortBy != nil {
		err = kubectl.Sort(g.sortBy, items)
	}
	if err != nil {
		fmt.Fprintf(g.stderr, "error: %v\n", err)
		return 1
	}
	printRows := table()
	if code := g.print(asList(items), len(items), missing, sel.Namespace, func(i int) runtime.Object { return PT(&items[i]) },
		func() error { return printRows(items) }); code != 0 || !watch {
		return code
	}
	return watchRows(items, func() ([]T, error) {
		items, _, err := read()
		return items, err
	}, key, version, watchPrinter[T, PT](g, kind, printRows), true, g.stderr)
}

// orEmpty makes a nil list an empty one, so that JSON says "items": [] as the API server does.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// watchPollInterval is how often `node get -w` and `node events -w` read the list again.
var watchPollInterval = time.Second

// watchRows is `kubectl get -w` over a list read every watchPollInterval: after first (already
// printed), it prints what diffRows decides of each read (each object whose version changed or
// that is new, then, with printGone, each one that went), until a read fails.
func watchRows[T any](first []T, fetch func() ([]T, error), key, version func(*T) string, print func([]T) error, printGone bool, stderr io.Writer) int {
	_, last := diffRows(nil, first, key, version, false) // first is printed already: only remembered
	for {
		time.Sleep(watchPollInterval)
		items, err := fetch()
		if err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
		var rows []T
		if rows, last = diffRows(last, items, key, version, printGone); len(rows) == 0 {
			continue
		}
		if err := print(rows); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
	}
}

// watched is what a watch remembers of an object from the last read: its row, printed again
// when it goes, and its version.
type watched[T any] struct {
	row     T
	version string
}

// diffRows decides what a watch prints after a read, given what it remembers of the last one
// (last, by key): first each of items whose version is not the one remembered under its key (it
// is new, or changed), in the read's order; then, with printGone, the remembered row of each key
// the read lacks, in key order, as kubectl prints a deletion with the object's last state. next is
// what to remember for the following read: each key of items with its last row and version, and
// no other, so an object that went and comes back is new again. A key twice in one read is
// compared the second time with the first, and the last is remembered. A new object whose version
// is "" is taken for unchanged: "" is what is remembered of a key never seen. last is not changed.
func diffRows[T any](last map[string]watched[T], items []T, key, version func(*T) string, printGone bool) (rows []T, next map[string]watched[T]) {
	next = make(map[string]watched[T], len(items))
	for i := range items {
		k, v := key(&items[i]), version(&items[i])
		prev, ok := next[k]
		if !ok {
			prev = last[k]
		}
		if prev.version != v {
			rows = append(rows, items[i])
		}
		next[k] = watched[T]{row: items[i], version: v}
	}
	if printGone {
		var gone []string
		for k := range last {
			if _, ok := next[k]; !ok {
				gone = append(gone, k)
			}
		}
		slices.Sort(gone)
		for _, k := range gone {
			rows = append(rows, last[k].row)
		}
	}
	return rows, next
}

// podVersion changes when anything `node get pods` shows of a pod may have: its status (as a
// status write to the API server would wake kubectl's watch), labels, deletion or node.
func podVersion(p *v1.Pod) string {
	b, _ := json.Marshal(struct {
		Labels   map[string]string
		Deleted  *metav1.Time
		NodeName string
		Status   *v1.PodStatus
	}{p.Labels, p.DeletionTimestamp, p.Spec.NodeName, &p.Status})
	return string(b)
}

// nodeVersion changes when a node's STATUS or labels do (not with each heartbeat, which would
// print a row every few seconds for nothing a reader can see).
func nodeVersion(n *v1.Node) string {
	b, _ := json.Marshal(struct {
		Status string
		Labels map[string]string
	}{kubectl.NodeStatus(n), n.Labels})
	return string(b)
}

// resourceKind is the kind of object the first of a get or top command's arguments names, spelled
// as kubectl accepts it (pods, pod, po; nodes, node, no): "pod" or "node", "" for anything else.
func resourceKind(rest []string) string {
	if len(rest) > 0 {
		switch rest[0] {
		case "pods", "pod", "po":
			return "pod"
		case "nodes", "node", "no":
			return "node"
		}
	}
	return ""
}

// getArgs checks `node get`'s arguments and flags as kubectl does, and returns the kind ("pod"
// or "node") and the selection.
func getArgs(rest []string, ns string, all bool, selector, fieldSelector, output string, showLabels bool) (string, kubectl.Selection, error) {
	var sel kubectl.Selection
	kind := resourceKind(rest)
	if kind == "" {
		return "", sel, fmt.Errorf("only `node get pods [NAME...]` and `node get nodes [NAME...]` are supported")
	}
	sel.Names = rest[1:]
	format, _, _ := strings.Cut(output, "=")
	switch format {
	case "", "json", "yaml", "name", "jsonpath", "custom-columns":
	case "wide":
		if kind == "node" {
			return "", sel, fmt.Errorf(`-o "wide": only for pods (nodes: json, yaml, name, jsonpath= or custom-columns=)`)
		}
	default:
		return "", sel, fmt.Errorf("-o %q: use json, yaml, name, wide, jsonpath=TEMPLATE or custom-columns=HEADER:PATH,...", output)
	}
	if showLabels && format != "" && format != "wide" {
		return "", sel, fmt.Errorf("--show-labels: only for the table (-o wide or no -o), not -o %s", format)
	}
	if len(sel.Names) > 0 {
		if selector != "" || fieldSelector != "" {
			return "", sel, fmt.Errorf("selectors and the all flag cannot be used when passing resource/name arguments")
		}
		if all && kind == "pod" {
			return "", sel, fmt.Errorf("a resource cannot be retrieved by name across all namespaces")
		}
	}
	if selector != "" {
		s, err := labels.Parse(selector)
		if err != nil {
			return "", sel, fmt.Errorf("-l %q: %v", selector, err)
		}
		sel.Selector = s
	}
	if fieldSelector != "" {
		f, err := kubectl.ParseFieldSelector(kind, fieldSelector)
		if err != nil {
			return "", sel, fmt.Errorf("--field-selector %q: %v", fieldSelector, err)
		}
		sel.Fields = f
	}
	if kind == "pod" && !all {
		sel.Namespace = ns
		if sel.Namespace == "" && len(sel.Names) > 0 {
			sel.Namespace = "default" // kubectl's default namespace, for a pod asked for by name
		}
	}
	return kind, sel, nil
}

// getter prints what `node get` selected in the chosen output.
type getter struct {
	output         string // -o's format: "" (the table), wide, json, yaml, name, jsonpath, custom-columns
	names          int
	ignoreNotFound bool // --ignore-not-found
	jsonPath       *kubectl.JSONPath
	columns        *kubectl.CustomColumns
	sortBy         *kubectl.SortBy // --sort-by: the list's order (a watch's later rows come as they change)
	stdout, stderr io.Writer
}

// watchPrinter is how a watch prints the objects that changed: table rows, or kind/NAME lines
// for -o name.
func watchPrinter[T any, PT interface {
	*T
	GetName() string
}](g getter, kind string, table func([]T) error) func([]T) error {
	if g.output != "name" {
		return table
	}
	return func(items []T) error {
		for i := range items {
			fmt.Fprintf(g.stdout, "%s/%s\n", kind, PT(&items[i]).GetName())
		}
		return nil
	}
}

// print writes the list (n items; item(i) is one) as json, yaml, names or a table (table), then
// kubectl's NotFound line for each missing name; ns is the namespace the selection was in.
func (g getter) print(list runtime.Object, n int, missing []string, ns string, item func(int) runtime.Object, table func() error) int {
	kind := "pod"
	if _, ok := list.(*v1.NodeList); ok {
		kind = "node"
	}
	var err error
	switch {
	case g.output == "json" || g.output == "yaml" || g.output == "jsonpath":
		var obj any = list
		if g.names == 1 && n == 1 { // kubectl prints the object itself for one name, typed
			o := item(0)
			if o.GetObjectKind().GroupVersionKind().Kind == "" {
				o.GetObjectKind().SetGroupVersionKind(v1.SchemeGroupVersion.WithKind(map[string]string{"pod": "Pod", "node": "Node"}[kind]))
			}
			obj = o
		}
		if g.names == 0 || n > 0 {
			err = g.encode(obj)
		}
	case n == 0 && (len(missing) > 0 || g.names > 0 && g.ignoreNotFound):
	case n == 0:
		if ns != "" {
			fmt.Fprintf(g.stderr, "No resources found in %s namespace.\n", ns)
		} else {
			fmt.Fprintln(g.stderr, "No resources found")
		}
	case g.output == "name":
		for i := range n {
			fmt.Fprintf(g.stdout, "%s/%s\n", kind, item(i).(interface{ GetName() string }).GetName())
		}
	case g.output == "custom-columns":
		objs := make([]any, n)
		for i := range n {
			objs[i] = item(i)
		}
		err = g.columns.Print(g.stdout, objs)
	case n > 0:
		err = table()
	}
	if err != nil {
		fmt.Fprintf(g.stderr, "error: %v\n", err)
		return 1
	}
	if g.ignoreNotFound {
		return 0
	}
	for _, name := range missing {
		fmt.Fprintf(g.stderr, "Error from server (NotFound): %ss %q not found\n", kind, name)
	}
	if len(missing) > 0 {
		return 1
	}
	return 0
}

func (g getter) encode(obj any) error {
	if g.output == "jsonpath" {
		return g.jsonPath.Print(g.stdout, obj)
	}
	if g.output == "yaml" {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		_, err = g.stdout.Write(b)
		return err
	}
	enc := json.NewEncoder(g.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(obj)
}
