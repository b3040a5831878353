package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/cmd/node/internal/server"
	"github.com/probeactor/probeactor/fleet/aggregator"
	"github.com/probeactor/probeactor/internal/kubectl"
)

// serverURL turns --server (host:port or a URL) into a base URL.
func serverURL(s string) string {
	if strings.Contains(s, "://") {
		return strings.TrimRight(s, "/")
	}
	return "http://" + s
}

// apiClient bounds connecting and waiting for an answer, so a node that accepts but never answers
// (or an address that drops packets) is an error, not a hang, even for `node logs -f`.
var apiClient = &http.Client{Transport: &http.Transport{
	Proxy:                 nil, // the node is local; a proxy from the environment would only get in the way
	DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	ResponseHeaderTimeout: 10 * time.Second,
}}

// apiGet fetches path from a running node; a non-2xx answer becomes an error carrying its message.
func apiGet(ctx context.Context, base, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("--server %s: %w", base, err)
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		if path == "/nodes" {
			return nil, fmt.Errorf("cannot reach a fleet aggregator at %s (is `node fleet` running? see --server): %w", base, err)
		}
		return nil, fmt.Errorf("cannot reach node at %s (is `node run` running? see --server): %w", base, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return resp, nil
}

// printWarnings prints the answer's Warning headers as kubectl does ("Warning: <text>" on stderr):
// a cluster member that runs no pods says why.
func printWarnings(h http.Header, stderr io.Writer) {
	for _, v := range h.Values("Warning") {
		text := v
		if _, quoted, ok := strings.Cut(v, " - "); ok {
			if unq, err := strconv.Unquote(quoted); err == nil {
				text = unq
			}
		}
		fmt.Fprintf(stderr, "Warning: %s\n", text)
	}
}

func getCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("get", "get pods|nodes [--server ADDR] [-n NAMESPACE | -A] [-o json|wide]", stderr)
	srv := fs.String("server", server.DefaultListen, "address of a running node's (or, for nodes, a fleet aggregator's) HTTP API")
	ns := fs.String("n", "", "only pods in this namespace (default: all)")
	all := fs.Bool("A", false, "show the NAMESPACE column (and NODE, from a fleet aggregator)")
	output := fs.String("o", "", "output format: json prints the v1.PodList (v1.NodeList); wide adds kubectl's IP, NODE, NOMINATED NODE and READINESS GATES columns to pods")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	resource := ""
	if len(rest) == 1 {
		switch rest[0] {
		case "pods", "pod", "po":
			resource = "pods"
		case "nodes", "node", "no":
			resource = "nodes"
		}
	}
	if resource == "" {
		fmt.Fprintln(stderr, "error: only `node get pods` and `node get nodes` are supported")
		return 2
	}
	switch {
	case *output == "wide" && resource == "nodes":
		fmt.Fprintln(stderr, `error: -o "wide": only for pods (nodes: json)`)
		return 2
	case *output != "" && *output != "json" && *output != "wide":
		fmt.Fprintf(stderr, "error: -o %q: use json or wide\n", *output)
		return 2
	}
	if resource == "nodes" && !flagSet(fs, "server") {
		*srv = aggregator.DefaultListen // nodes are what a fleet aggregator knows
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := apiGet(ctx, serverURL(*srv), "/"+resource)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	printWarnings(resp.Header, stderr)
	if resource == "nodes" {
		return printNodes(resp.Body, *output, stdout, stderr)
	}
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		fmt.Fprintf(stderr, "error: decode pod list: %v\n", err)
		return 1
	}
	pods := list.Items[:0]
	for _, p := range list.Items {
		if *ns == "" || p.Namespace == *ns {
			pods = append(pods, p)
		}
	}
	if *output == "json" {
		list.Items = pods
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(list)
		return 0
	}
	if len(pods) == 0 {
		fmt.Fprintln(stderr, "No resources found")
		return 0
	}
	cols := kubectl.Columns{Namespace: *all, Node: *all && resp.Header.Get(aggregator.ServerHeader) == aggregator.ServerName,
		Wide: *output == "wide"}
	if err := kubectl.PrintPodColumns(stdout, pods, time.Now(), cols); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}

// printNodes prints a fleet aggregator's /nodes as `kubectl get nodes` does (or as JSON).
func printNodes(body io.Reader, output string, stdout, stderr io.Writer) int {
	var list v1.NodeList
	if err := json.NewDecoder(body).Decode(&list); err != nil {
		fmt.Fprintf(stderr, "error: decode node list: %v\n", err)
		return 1
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(list)
		return 0
	}
	if len(list.Items) == 0 {
		fmt.Fprintln(stderr, "No resources found")
		return 0
	}
	if err := kubectl.PrintNodes(stdout, list.Items, time.Now()); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}

// flagSet says whether the flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
