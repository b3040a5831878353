package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/probeactor/probeactor/cmd/node/internal/server"
	"github.com/probeactor/probeactor/fleet/aggregator"
	"github.com/probeactor/probeactor/internal/describe"
	"github.com/probeactor/probeactor/internal/kubectl"
)

// describeCommand is `kubectl describe pod[s] [NAME...]`: each pod in kubectl describe's layout
// with each probe's live state, from a node (its workers' streaks, last attempts, next actions) or
// a fleet aggregator (each probe's published result and the node; the pod on every node that runs
// one of that name). As kubectl: no NAME describes every pod (-l: those it selects), one NAME
// that matches no pod describes the pods whose names begin with it, and several pods are
// described without their events unless --show-events is given.
func describeCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("describe", "describe pod[s] [NAME...] | pod/NAME... [-n NAMESPACE | -A] [-l SELECTOR] [--show-events] [--server ADDR] [-o json]", stderr)
	srv := fs.String("server", server.DefaultListen, "address of a running node's (or a fleet aggregator's) HTTP API")
	ns := fs.String("n", "default", "the pods' `NAMESPACE`")
	all := fs.Bool("A", false, "pods in every namespace")
	selector := fs.String("l", "", "only pods whose labels match this `SELECTOR` (kubectl's)")
	fs.StringVar(selector, "selector", "", "same as -l `SELECTOR`")
	showEvents := fs.Bool("show-events", true, "print each pod's events; not given, only when one pod is described, as kubectl")
	output := fs.String("o", "", "output format: json prints the description (pod, probe states, next actions, events)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	names, err := podArgs(rest, "describe", "described")
	if err == nil && *output != "" && *output != "json" {
		err = fmt.Errorf("-o %q: only json is supported", *output)
	}
	if err == nil && len(names) > 0 {
		switch {
		case *selector != "":
			err = fmt.Errorf("selectors and the all flag cannot be used when passing resource/name arguments")
		case *all:
			err = fmt.Errorf("a resource cannot be retrieved by name across all namespaces")
		}
	}
	sel := kubectl.Selection{Names: names, Namespace: *ns}
	if *all {
		sel.Namespace = ""
	}
	if err == nil && *selector != "" {
		if sel.Selector, err = labels.Parse(*selector); err != nil {
			err = fmt.Errorf("-l %q: %v", *selector, err)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		if len(rest) == 0 {
			fs.Usage()
		}
		return 2
	}
	base := serverURL(*srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var list v1.PodList
	fleet, err := getJSON(ctx, base, "/pods", &list, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	pods, missing := kubectl.Select(list.Items, sel)
	if len(names) == 1 && len(pods) == 0 { // kubectl's fallback: the pods whose names begin with it
		for _, p := range list.Items {
			if p.Namespace == sel.Namespace && strings.HasPrefix(p.Name, names[0]) {
				pods = append(pods, p)
			}
		}
		if len(pods) > 0 {
			missing = nil
		}
	}
	code := 0
	if len(missing) > 0 {
		code = 1
	}
	if len(pods) == 0 {
		switch {
		case len(missing) > 0:
		case *all:
			fmt.Fprintln(stderr, "No resources found")
		default:
			fmt.Fprintf(stderr, "No resources found in %s namespace.\n", sel.Namespace)
		}
	}
	var events v1.EventList
	var results aggregator.ResultList
	if len(pods) > 0 {
		if _, err := getJSON(ctx, base, "/events", &events, stderr); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
		if fleet {
			if _, err := getJSON(ctx, base, "/results", &results, stderr); err != nil {
				fmt.Fprintf(stderr, "error: %v\n", err)
				return 1
			}
		}
	}
	settings := describe.Settings{ShowEvents: *showEvents && (len(pods) == 1 || flagSet(fs, "show-events"))}
	now := time.Now()
	for i, pod := range pods {
		var probes []describe.Probe
		if fleet {
			probes = published(pod, results.Items)
		} else {
			var states describe.List
			if _, err := getJSON(ctx, base, "/probes/"+url.PathEscape(pod.Namespace)+"/"+url.PathEscape(pod.Name), &states, stderr); err != nil {
				fmt.Fprintf(stderr, "error: %v\n", err)
				return 1
			}
			probes = states.Items
		}
		doc := describe.NewDocument(base, pod, probes, events.Items, now)
		if *output == "json" {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(doc); err != nil {
				fmt.Fprintf(stderr, "error: %v\n", err)
				return 1
			}
			continue
		}
		if i > 0 {
			fmt.Fprint(stdout, "\n\n") // kubectl's separator
		}
		if err := describe.PrintWith(stdout, doc, now, settings); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
	}
	for _, name := range missing {
		fmt.Fprintf(stderr, "Error from server (NotFound): pods %q not found\n", name)
	}
	return code
}

// podArgs reads kubectl's two forms of naming pods, `pod[s] [NAME...]` and `pod/NAME...`, into
// the names; what the command (describe, wait) does to them says its error.
func podArgs(rest []string, command, done string) ([]string, error) {
	only := fmt.Sprintf("only pods can be %s: `node %s pod[s] [NAME...]` or `node %s pod/NAME...`", done, command, command)
	if len(rest) == 0 {
		return nil, errors.New(only)
	}
	isPod := func(kind string) bool { return kind == "pod" || kind == "pods" || kind == "po" }
	if isPod(rest[0]) {
		return rest[1:], nil
	}
	var names []string
	for _, arg := range rest {
		kind, name, ok := strings.Cut(arg, "/")
		if !ok || !isPod(kind) || name == "" {
			if ok || len(names) > 0 {
				return nil, fmt.Errorf("%q: %s", arg, only)
			}
			return nil, errors.New(only)
		}
		names = append(names, name)
	}
	return names, nil
}

// getJSON decodes path's answer into v and says whether a fleet aggregator answered; Warning
// headers are printed as kubectl prints them.
func getJSON(ctx context.Context, base, path string, v any, stderr io.Writer) (fleet bool, err error) {
	resp, err := apiGet(ctx, base, path)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	printWarnings(resp.Header, stderr)
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return false, fmt.Errorf("decode %s: %w", path, err)
	}
	return resp.Header.Get(aggregator.ServerHeader) == aggregator.ServerName, nil
}

// published is what a fleet aggregator knows of a pod's probes: each one's published result and
// the node that published it.
func published(pod v1.Pod, results []aggregator.Result) []describe.Probe {
	var out []describe.Probe
	for _, r := range results {
		if r.PodUID == pod.UID && r.Node == pod.Spec.NodeName {
			out = append(out, describe.Probe{Container: r.Container, Type: r.Type, Node: r.Node, ContainerID: r.ContainerID, Published: r.Result})
		}
	}
	return out
}
