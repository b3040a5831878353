package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/cmd/node/internal/server"
	"github.com/probeactor/probeactor/internal/kubectl"
)

const eventsSynopsis = "events [--for pod/NAME|node/NAME] [--types Normal,Warning] [-n NAMESPACE | -A] [-w] [-o json|yaml] [--no-headers] [--server ADDR]"

// eventsCommand is `kubectl events` against a running node or a fleet aggregator: the events of a
// namespace (or all, -A), of one object (--for) or of some types, oldest first, in kubectl's
// table (internal/kubectl.PrintEvents); -w goes on printing each event that is new or repeated.
func eventsCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("events", eventsSynopsis, stderr)
	srv := fs.String("server", server.DefaultListen, "address of a running node's (or a fleet aggregator's) HTTP API")
	ns := fs.String("n", "default", "only events in this `NAMESPACE`")
	all := fs.Bool("A", false, "events in every namespace (a NAMESPACE column)")
	forObject := fs.String("for", "", "only the events of this object, `KIND/NAME`: pod/NAME or node/NAME")
	types := fs.String("types", "", "only events of these `TYPES`, comma-separated: Normal, Warning")
	watch := fs.Bool("w", false, "after the list, print each event that is new or repeated, until interrupted")
	fs.BoolVar(watch, "watch", false, "same as -w")
	output := fs.String("o", "", "output `FORMAT`: json or yaml (the v1.EventList)")
	noHeaders := fs.Bool("no-headers", false, "print the table without its header line")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	filter, err := eventsFilter(rest, *ns, *all, *forObject, *types, *output, *watch)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	base := serverURL(*srv)
	ctx := context.Background()
	fetch := func() ([]v1.Event, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var list v1.EventList
		if _, err := getJSON(ctx, base, "/events", &list, stderr); err != nil {
			return nil, err
		}
		events := list.Items[:0]
		for _, e := range list.Items {
			if filter.match(&e) {
				events = append(events, e)
			}
		}
		kubectl.SortEvents(events)
		return events, nil
	}
	events, err := fetch()
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	if *output != "" {
		g := getter{output: *output, stdout: stdout, stderr: stderr}
		if err := g.encode(&v1.EventList{TypeMeta: eventListType, Items: orEmpty(events)}); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
		return 0
	}
	if len(events) == 0 && !*watch {
		if *all {
			fmt.Fprintln(stderr, "No events found.")
		} else {
			fmt.Fprintf(stderr, "No events found in %s namespace.\n", *ns)
		}
		return 0
	}
	tw := kubectl.NewTabWriter(stdout)
	header := !*noHeaders
	printRows := func(events []v1.Event) error {
		if len(events) == 0 {
			return nil // a watch of no events yet: the header comes with the first
		}
		err := kubectl.PrintEvents(tw, events, time.Now(), *all, header)
		header = false
		return err
	}
	if err := printRows(events); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	if !*watch {
		return 0
	}
	// An event that went was evicted (node keeps the newest MaxEvents): not printed, as kubectl
	// events -w does not print deletions.
	return watchRows(events, fetch, eventKey, eventVersion, printRows, false, stderr)
}

var eventListType = metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}

// eventKey names an event across reads; eventVersion changes when it repeats.
func eventKey(e *v1.Event) string { return e.Namespace + "/" + e.Name + "/" + string(e.UID) }
func eventVersion(e *v1.Event) string {
	return fmt.Sprintf("%d/%s/%s", e.Count, e.LastTimestamp.UTC().Format(time.RFC3339Nano), e.ResourceVersion)
}

// eventSelection is which events `node events` prints.
type eventSelection struct {
	namespace string          // "": every namespace
	kind      string          // "Pod" or "Node"; "": any object
	name      string          // with kind
	types     map[string]bool // lower-case; empty: every type
}

func (s eventSelection) match(e *v1.Event) bool {
	return (s.namespace == "" || e.Namespace == s.namespace) &&
		(s.kind == "" || (e.InvolvedObject.Kind == s.kind && e.InvolvedObject.Name == s.name)) &&
		(len(s.types) == 0 || s.types[strings.ToLower(e.Type)])
}

// eventsFilter checks `node events`' arguments as kubectl events does.
func eventsFilter(rest []string, ns string, all bool, forObject, types, output string, watch bool) (eventSelection, error) {
	var s eventSelection
	if len(rest) > 0 {
		return s, fmt.Errorf("unexpected arguments %q (the object goes in --for pod/NAME)", rest)
	}
	switch output {
	case "", "json", "yaml":
	default:
		return s, fmt.Errorf("-o %q: use json or yaml", output)
	}
	if output != "" && watch {
		return s, errors.New("-w prints the table only: leave out -o")
	}
	if !all {
		s.namespace = ns
	}
	if forObject != "" {
		kind, name, ok := strings.Cut(forObject, "/")
		if !ok || name == "" || strings.Contains(name, "/") {
			return s, errors.New("--for must be in resource/name form")
		}
		switch kind {
		case "pod", "pods", "po":
			s.kind = "Pod"
		case "node", "nodes", "no":
			s.kind = "Node"
		default:
			return s, fmt.Errorf("--for %q: node's events are about pods and nodes: use pod/NAME or node/NAME", forObject)
		}
		s.name = name
	}
	if types != "" {
		s.types = map[string]bool{}
		for _, t := range strings.Split(types, ",") {
			t = strings.TrimSpace(t)
			if !strings.EqualFold(t, v1.EventTypeNormal) && !strings.EqualFold(t, v1.EventTypeWarning) {
				return s, errors.New("valid --types are Normal or Warning")
			}
			s.types[strings.ToLower(t)] = true
		}
	}
	return s, nil
}
