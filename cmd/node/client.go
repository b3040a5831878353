package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/probeactor/probeactor/fleet/aggregator"
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
			return nil, fmt.Errorf("cannot reach a fleet aggregator or node at %s (is `node fleet` or `node run` running? see --server): %w", base, err)
		}
		return nil, fmt.Errorf("cannot reach node at %s (is `node run` running? see --server): %w", base, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, &statusError{code: resp.StatusCode, status: resp.Status, message: strings.TrimSpace(string(b)),
			fleet: resp.Header.Get(aggregator.ServerHeader) == aggregator.ServerName}
	}
	return resp, nil
}

// statusError is a non-2xx answer: its status and message, and whether a fleet aggregator gave it.
type statusError struct {
	code            int
	status, message string
	fleet           bool
}

func (e *statusError) Error() string { return e.status + ": " + e.message }

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

// flagSet says whether the flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
