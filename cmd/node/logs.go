package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/probeactor/probeactor/cmd/node/internal/server"
	"github.com/probeactor/probeactor/internal/kubectl"
)

const logsSynopsis = "logs POD [CONTAINER] | -l SELECTOR [-c CONTAINER | --all-containers] [-n NAMESPACE] [-p] [--tail N] [--since D | --since-time T] [--limit-bytes N] [-f] [--max-log-requests N] [--prefix] [--server ADDR]"

// selectorTail is kubectl's --tail when pods are chosen by a selector and --tail is not given.
const selectorTail = 10

// logStream is one container's log that `node logs` reads.
type logStream struct{ pod, container string }

// logsCommand is `kubectl logs POD` (or `-l SELECTOR`) against a running node: kubectl 1.37's
// flags and its choice of container (internal/kubectl.LogsContainer), each stream one GET of
// kubelet's /containerLogs with v1.PodLogOptions' query parameters.
func logsCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("logs", logsSynopsis, stderr)
	srv := fs.String("server", server.DefaultListen, "address of a running node's HTTP API")
	ns := fs.String("n", "default", "the pod's `NAMESPACE`")
	container := fs.String("c", "", "the `CONTAINER`; omitted: the pod's kubectl.kubernetes.io/default-container annotation's, else its first container")
	all := fs.Bool("all-containers", false, "every container's log in turn: init containers, then app containers")
	selector := fs.String("l", "", "every pod whose labels match this `SELECTOR` instead of POD (--tail then defaults to 10)")
	fs.StringVar(selector, "selector", "", "same as -l `SELECTOR`")
	previous := fs.Bool("previous", false, "the log of the container's previous run")
	fs.BoolVar(previous, "p", false, "short for --previous")
	tail := fs.Int64("tail", -1, "only the last `N` lines (-1: all; 10 with a selector)")
	since := fs.Duration("since", 0, "only the runs that wrote within this `duration` (e.g. 5m; rounded up to seconds; node's logs carry no per-line times)")
	sinceTime := fs.String("since-time", "", "only the runs that wrote since this RFC 3339 `time`")
	limitBytes := fs.Int64("limit-bytes", 0, "at most `N` bytes of log (0: no limit)")
	follow := fs.Bool("f", false, "keep streaming new output")
	fs.BoolVar(follow, "follow", false, "same as -f")
	maxFollow := fs.Int("max-log-requests", 5, "with -f, the most logs followed at once (`N`)")
	prefix := fs.Bool("prefix", false, "begin each line with its source, [pod/NAME/CONTAINER]")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	var sel labels.Selector
	if *selector != "" {
		if !flagSet(fs, "tail") {
			*tail = selectorTail
		}
		if sel, err = labels.Parse(*selector); err != nil {
			err = fmt.Errorf("-l %q: %v", *selector, err)
		}
	}
	var q url.Values
	if err == nil {
		q, err = logsQuery(*previous, *follow, *tail, *since, *sinceTime, *limitBytes)
	}
	if err == nil {
		err = logsArgs(rest, container, *all, flagSet(fs, "c"), sel != nil)
	}
	if err == nil && *maxFollow < 1 {
		err = fmt.Errorf("--max-log-requests %d: must be at least 1", *maxFollow)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		if sel == nil && (len(rest) == 0 || len(rest) > 2) {
			fs.Usage()
		}
		return 2
	}
	base := serverURL(*srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// kubectl reads the pod first to choose the container; so does node logs, even with -c, so that
	// a wrong name lists the pod's containers.
	var list v1.PodList
	fleet, err := getJSON(ctx, base, "/pods", &list, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	selection := kubectl.Selection{Namespace: *ns, Selector: sel}
	if sel == nil {
		selection.Names = rest[:1]
	}
	pods, missing := kubectl.Select(list.Items, selection)
	switch {
	case fleet:
		fmt.Fprintf(stderr, "error: %s is a fleet aggregator, which keeps no container logs: ask the node that runs the pod%s, "+
			"node logs POD --server <that node's --listen>\n", base, runsOn(pods))
		return 1
	case len(missing) > 0:
		fmt.Fprintf(stderr, "Error from server (NotFound): pods %q not found\n", missing[0])
		return 1
	case len(pods) == 0:
		fmt.Fprintf(stderr, "No resources found in %s namespace.\n", *ns)
		return 0
	}
	var streams []logStream
	for i := range pods {
		p := &pods[i]
		if *all {
			for _, c := range kubectl.LogsContainers(p) {
				streams = append(streams, logStream{p.Name, c})
			}
			continue
		}
		name, notes, err := kubectl.LogsContainer(p, *container)
		for _, n := range notes {
			fmt.Fprintln(stderr, n)
		}
		if err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
		streams = append(streams, logStream{p.Name, name})
	}
	if *follow && len(streams) > *maxFollow {
		fmt.Fprintf(stderr, "error: you are attempting to follow %d log streams, but maximum allowed concurrency is %d, use --max-log-requests to increase the limit\n",
			len(streams), *maxFollow)
		return 1
	}
	out := &lineWriter{w: stdout}
	read := func(s logStream) error {
		path := "/containerLogs/" + url.PathEscape(*ns) + "/" + url.PathEscape(s.pod) + "/" + url.PathEscape(s.container)
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		resp, err := apiGet(ctx, base, path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var linePrefix string
		if *prefix {
			linePrefix = "[pod/" + s.pod + "/" + s.container + "] "
		}
		if err := out.copyLines(resp.Body, linePrefix); err != nil && !*follow {
			return err
		}
		return nil
	}
	if *follow && len(streams) > 1 {
		// Every stream at once, whole lines, as kubectl follows them; the first error ends them
		// all, as it ends kubectl's (a container that has not run yet has no log to follow).
		var first error
		var once sync.Once
		var wg sync.WaitGroup
		for _, s := range streams {
			wg.Go(func() {
				if err := read(s); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			})
		}
		wg.Wait()
		if first != nil {
			fmt.Fprintf(stderr, "error: %v\n", first)
			return 1
		}
		return 0
	}
	for _, s := range streams { // one after the other: pods in the list's order, containers in LogsContainers'
		if err := read(s); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
	}
	_ = os.Stdout.Sync()
	return 0
}

// runsOn says which node runs each pod, for a message: " (default/web runs on n1; default/web
// runs on n2)" (an aggregator lists a pod once per node that runs it).
func runsOn(pods []v1.Pod) string {
	if len(pods) == 0 {
		return ""
	}
	var where []string
	for _, p := range pods {
		where = append(where, fmt.Sprintf("%s/%s runs on %s", p.Namespace, p.Name, p.Spec.NodeName))
	}
	return " (" + strings.Join(where, "; ") + ")"
}

// logsArgs checks POD [CONTAINER] (or a selector) against -c and --all-containers, as kubectl
// does, and takes an inline CONTAINER into container.
func logsArgs(rest []string, container *string, all, cGiven, selector bool) error {
	switch {
	case selector && len(rest) > 0:
		return fmt.Errorf("only a selector (-l) or a POD name is allowed")
	case selector:
	case len(rest) == 0 || len(rest) > 2:
		return fmt.Errorf("expected POD [CONTAINER] or -l SELECTOR, got %d arguments", len(rest))
	case len(rest) == 2 && cGiven:
		return fmt.Errorf("only one of -c or an inline [CONTAINER] arg is allowed")
	case len(rest) == 2:
		*container = rest[1]
	}
	if all && *container != "" {
		return fmt.Errorf("--all-containers=true should not be specified with container name %s", *container)
	}
	return nil
}

// logsQuery is the v1.PodLogOptions query of the flags, refused as kubectl's Validate refuses them.
func logsQuery(previous, follow bool, tail int64, since time.Duration, sinceTime string, limitBytes int64) (url.Values, error) {
	q := url.Values{}
	if previous {
		q.Set("previous", "true")
	}
	if follow {
		q.Set("follow", "true")
	}
	switch {
	case tail < -1:
		return nil, fmt.Errorf("--tail %d: use a number of lines, or -1 for all", tail)
	case tail >= 0:
		q.Set("tailLines", strconv.FormatInt(tail, 10))
	}
	switch {
	case limitBytes < 0:
		return nil, fmt.Errorf("--limit-bytes %d: must be greater than 0 (0: no limit)", limitBytes)
	case limitBytes > 0:
		q.Set("limitBytes", strconv.FormatInt(limitBytes, 10))
	}
	switch {
	case since != 0 && sinceTime != "":
		return nil, fmt.Errorf("at most one of --since-time or --since may be given")
	case since < 0:
		return nil, fmt.Errorf("--since %v: must be greater than 0", since)
	case since > 0:
		secs := int64(math.Ceil(since.Seconds())) // a whole second at least: sinceSeconds=0 is invalid
		q.Set("sinceSeconds", strconv.FormatInt(secs, 10))
	case sinceTime != "":
		t, err := parseRFC3339(sinceTime)
		if err != nil {
			return nil, fmt.Errorf("--since-time %q: want an RFC 3339 time such as 2006-01-02T15:04:05Z", sinceTime)
		}
		q.Set("sinceTime", t.UTC().Format(time.RFC3339))
	}
	return q, nil
}

// parseRFC3339 accepts what kubectl's util.ParseRFC3339 does: RFC 3339 with or without fractions
// of a second.
func parseRFC3339(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, s)
}

// lineWriter writes whole lines, so that streams followed at once never interleave within a line.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// copyLines copies r to the writer line by line, each line after prefix (kubectl's
// DefaultConsumeRequest and prefixingWriter).
func (lw *lineWriter) copyLines(r io.Reader, prefix string) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			lw.mu.Lock()
			_, werr := lw.w.Write(append([]byte(prefix), line...))
			lw.mu.Unlock()
			if werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
