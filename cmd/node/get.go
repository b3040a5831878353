package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/probeactor/probeactor/cmd/node/internal/server"
	"github.com/probeactor/probeactor/fleet/aggregator"
	"github.com/probeactor/probeactor/internal/kubectl"
)

const getSynopsis = "get pods|nodes [NAME...] [-l SELECTOR] [--server ADDR] [-n NAMESPACE | -A] [-o json|yaml|name|wide] [--show-labels]"

// getCommand is `kubectl get pods|nodes` against a running node's (or a fleet aggregator's) list:
// names, label selectors and kubectl's output formats, chosen client-side
// (internal/kubectl.Select), so the same command reads a node and an aggregator.
func getCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("get", getSynopsis, stderr)
	srv := fs.String("server", server.DefaultListen, "address of a running node's (or, for nodes, a fleet aggregator's) HTTP API")
	ns := fs.String("n", "", "only pods in this `NAMESPACE` (default: all; with NAMEs: default)")
	all := fs.Bool("A", false, "show the NAMESPACE column (and NODE, from a fleet aggregator)")
	selector := fs.String("l", "", "only objects whose labels match this `SELECTOR` (kubectl's: app=web, tier!=db, env in (a,b), !canary)")
	fs.StringVar(selector, "selector", "", "same as -l `SELECTOR`")
	output := fs.String("o", "", "output `FORMAT`: json or yaml (the v1.PodList or v1.NodeList; one NAME: the object), name (pod/NAME), wide (kubectl's IP, NODE, NOMINATED NODE and READINESS GATES columns for pods)")
	showLabels := fs.Bool("show-labels", false, "add a LABELS column")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	kind, sel, err := getArgs(rest, *ns, *all, *selector, *output, *showLabels)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	if kind == "node" && !flagSet(fs, "server") {
		*srv = aggregator.DefaultListen // nodes are what a fleet aggregator knows
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := apiGet(ctx, serverURL(*srv), "/"+kind+"s")
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	printWarnings(resp.Header, stderr)
	g := getter{output: *output, names: len(sel.Names), stdout: stdout, stderr: stderr}
	if kind == "node" {
		var list v1.NodeList
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			fmt.Fprintf(stderr, "error: decode node list: %v\n", err)
			return 1
		}
		var missing []string
		list.Items, missing = kubectl.Select(list.Items, sel)
		return g.print(&list, len(list.Items), missing, "", func(i int) runtime.Object { return &list.Items[i] },
			func() error { return kubectl.PrintNodes(stdout, list.Items, time.Now(), *showLabels) })
	}
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		fmt.Fprintf(stderr, "error: decode pod list: %v\n", err)
		return 1
	}
	var missing []string
	list.Items, missing = kubectl.Select(list.Items, sel)
	cols := kubectl.Columns{Namespace: *all, Node: *all && resp.Header.Get(aggregator.ServerHeader) == aggregator.ServerName,
		Wide: *output == "wide", Labels: *showLabels}
	return g.print(&list, len(list.Items), missing, sel.Namespace, func(i int) runtime.Object { return &list.Items[i] },
		func() error { return kubectl.PrintPodColumns(stdout, list.Items, time.Now(), cols) })
}

// getArgs checks `node get`'s arguments and flags as kubectl does, and returns the kind ("pod"
// or "node") and the selection.
func getArgs(rest []string, ns string, all bool, selector, output string, showLabels bool) (string, kubectl.Selection, error) {
	var sel kubectl.Selection
	kind := ""
	if len(rest) > 0 {
		switch rest[0] {
		case "pods", "pod", "po":
			kind = "pod"
		case "nodes", "node", "no":
			kind = "node"
		}
	}
	if kind == "" {
		return "", sel, fmt.Errorf("only `node get pods [NAME...]` and `node get nodes [NAME...]` are supported")
	}
	sel.Names = rest[1:]
	switch output {
	case "", "json", "yaml", "name":
	case "wide":
		if kind == "node" {
			return "", sel, fmt.Errorf(`-o "wide": only for pods (nodes: json, yaml or name)`)
		}
	default:
		return "", sel, fmt.Errorf("-o %q: use json, yaml, name or wide", output)
	}
	if showLabels && (output == "json" || output == "yaml" || output == "name") {
		return "", sel, fmt.Errorf("--show-labels: only for the table (-o wide or no -o), not -o %s", output)
	}
	if len(sel.Names) > 0 {
		if selector != "" {
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
	output         string
	names          int
	stdout, stderr io.Writer
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
	case g.output == "json" || g.output == "yaml":
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
	case n == 0 && len(missing) == 0:
		if ns != "" {
			fmt.Fprintf(g.stderr, "No resources found in %s namespace.\n", ns)
		} else {
			fmt.Fprintln(g.stderr, "No resources found")
		}
	case g.output == "name":
		for i := range n {
			fmt.Fprintf(g.stdout, "%s/%s\n", kind, item(i).(interface{ GetName() string }).GetName())
		}
	case n > 0:
		err = table()
	}
	if err != nil {
		fmt.Fprintf(g.stderr, "error: %v\n", err)
		return 1
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
