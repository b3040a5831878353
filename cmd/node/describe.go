package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/cmd/node/internal/server"
	"github.com/probeactor/probeactor/fleet/aggregator"
	"github.com/probeactor/probeactor/internal/describe"
)

// describeCommand is `node describe pod NAME`: the pod in kubectl describe's layout with each
// probe's live state, from a node (its workers' streaks, last attempts, next actions) or a fleet
// aggregator (each probe's published result and the node; the pod on every node that runs one of
// that name).
func describeCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("describe", "describe pod NAME [-n NAMESPACE] [--server ADDR] [-o json]", stderr)
	srv := fs.String("server", server.DefaultListen, "address of a running node's (or a fleet aggregator's) HTTP API")
	ns := fs.String("n", "default", "the pod's namespace")
	output := fs.String("o", "", "output format: json prints the description (pod, probe states, next actions, events)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(rest) != 2 || (rest[0] != "pod" && rest[0] != "pods" && rest[0] != "po") {
		fmt.Fprintln(stderr, "error: only `node describe pod NAME` is supported")
		fs.Usage()
		return 2
	}
	if *output != "" && *output != "json" {
		fmt.Fprintf(stderr, "error: -o %q: only json is supported\n", *output)
		return 2
	}
	name, base := rest[1], serverURL(*srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var list v1.PodList
	fleet, err := getJSON(ctx, base, "/pods", &list, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	var pods []v1.Pod
	for _, p := range list.Items {
		if p.Namespace == *ns && p.Name == name {
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		fmt.Fprintf(stderr, "error: pod %s/%s not found at %s\n", *ns, name, base)
		return 1
	}
	var events v1.EventList
	if _, err := getJSON(ctx, base, "/events", &events, stderr); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	var results aggregator.ResultList
	if fleet {
		if _, err := getJSON(ctx, base, "/results", &results, stderr); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
	}
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
			fmt.Fprintln(stdout)
		}
		if err := describe.Print(stdout, doc, now); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
	}
	return 0
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
