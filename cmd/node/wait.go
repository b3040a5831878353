package main

import (
	"context"
	"fmt"
	"io"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cmd/node/internal/server"
	"github.com/probeactor/probeactor/internal/kubectl"
)

// waitPollInterval is how often `node wait` reads the pods again (node has no watch API).
var waitPollInterval = 500 * time.Millisecond

const waitSynopsis = "wait pod/NAME... | pods NAME... | pods -l SELECTOR | pods --all --for condition=NAME[=VALUE]|jsonpath=PATH[=VALUE]|delete|create [--timeout D] [-n NAMESPACE] [--server ADDR]"

// waitCommand is `kubectl wait` for pods against a running node or a fleet aggregator: until every
// pod asked for meets every --for (kubectl.ConditionMet), printing "pod/NAME condition met" for
// each, or --timeout passes ("timed out waiting for the condition on pods/NAME", exit 1).
func waitCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("wait", waitSynopsis, stderr)
	srv := fs.String("server", server.DefaultListen, "address of a running node's (or a fleet aggregator's) HTTP API")
	ns := fs.String("n", "default", "the pods' `NAMESPACE`")
	selector := fs.String("l", "", "every pod whose labels match this `SELECTOR`")
	fs.StringVar(selector, "selector", "", "same as -l `SELECTOR`")
	all := fs.Bool("all", false, "every pod of the namespace")
	var fors fileList
	fs.Var(&fors, "for", "what to wait for, `CONDITION`: condition=Ready (condition=NAME[=VALUE], VALUE true by default), jsonpath='{.status.phase}'=Running (jsonpath=PATH[=VALUE]; no VALUE: the field exists), delete or create; repeatable, all must hold")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait before giving up (0: check once; negative: a week)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	names, err := podArgs(rest, "wait", "waited for")
	var conds []kubectl.WaitFor
	if err == nil {
		if len(fors) == 0 {
			err = fmt.Errorf("--for is required: condition=NAME[=VALUE], jsonpath=PATH[=VALUE], delete or create")
		}
		for _, f := range fors {
			c, ferr := kubectl.ParseWaitFor(f)
			if ferr != nil && err == nil {
				err = ferr
			}
			conds = append(conds, c)
		}
	}
	var sel labels.Selector
	switch {
	case err != nil:
	case len(names) > 0 && (*selector != "" || *all):
		err = fmt.Errorf("selectors and the all flag cannot be used when passing resource/name arguments")
	case len(names) == 0 && *selector == "" && !*all:
		err = fmt.Errorf("resource(s) were provided, but no name was specified: name pods, or use -l SELECTOR or --all")
	case *selector != "":
		if sel, err = labels.Parse(*selector); err != nil {
			err = fmt.Errorf("-l %q: %v", *selector, err)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	if *timeout < 0 {
		*timeout = 7 * 24 * time.Hour // kubectl's "a week"
	}
	base := serverURL(*srv)
	deadline := time.Now().Add(*timeout)
	read := func() ([]v1.Pod, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var list v1.PodList
		_, err := getJSON(ctx, base, "/pods", &list, stderr)
		return list.Items, err
	}
	pods, err := read()
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	creating, deleting := false, false
	for _, c := range conds {
		creating, deleting = creating || c.Create, deleting || c.Delete
	}
	selection := kubectl.Selection{Names: names, Namespace: *ns, Selector: sel}
	for creating && len(names) > 0 { // --for=create: first every named pod exists
		if _, missing := kubectl.Select(pods, selection); len(missing) == 0 {
			break
		}
		if !time.Now().Before(deadline) {
			fmt.Fprintln(stderr, "error: timed out waiting for the condition")
			return 1
		}
		time.Sleep(waitPollInterval)
		if pods, err = read(); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
	}
	targets, missing := kubectl.Select(pods, selection)
	if len(missing) > 0 && !deleting {
		fmt.Fprintf(stderr, "Error from server (NotFound): pods %q not found\n", missing[0])
		return 1
	}
	if len(targets) == 0 && !deleting {
		fmt.Fprintln(stderr, "error: no matching resources found")
		return 1
	}
	for _, target := range targets { // one after the other, as kubectl visits them
		uid := target.UID
		for {
			current := findPod(pods, target.Namespace, target.Name)
			done, err := waitDone(current, target.Name, uid, conds)
			if err != nil {
				fmt.Fprintf(stderr, "%v\n", err)
				return 1
			}
			if done {
				fmt.Fprintf(stdout, "pod/%s condition met\n", target.Name)
				break
			}
			if !time.Now().Before(deadline) {
				if *timeout == 0 {
					fmt.Fprintf(stderr, "error: condition not met for pods/%s\n", target.Name)
				} else {
					fmt.Fprintf(stderr, "error: timed out waiting for the condition on pods/%s\n", target.Name)
				}
				return 1
			}
			time.Sleep(min(waitPollInterval, time.Until(deadline)))
			if pods, err = read(); err != nil {
				fmt.Fprintf(stderr, "error: %v\n", err)
				return 1
			}
		}
	}
	return 0
}

func findPod(pods []v1.Pod, namespace, name string) *v1.Pod {
	for i := range pods {
		if pods[i].Namespace == namespace && pods[i].Name == name {
			return &pods[i]
		}
	}
	return nil
}

// waitDone says whether pod (nil: gone) meets every --for: deleted (gone, or replaced by a pod
// of another UID than the one first seen), created (there), or a condition met. A pod that goes
// while a condition is awaited is kubectl's NotFound.
func waitDone(pod *v1.Pod, name string, uid types.UID, conds []kubectl.WaitFor) (bool, error) {
	for _, c := range conds {
		switch {
		case c.Delete:
			if pod != nil && pod.UID == uid {
				return false, nil
			}
		case c.Create:
			if pod == nil {
				return false, nil
			}
		case pod == nil:
			return false, fmt.Errorf("Error from server (NotFound): pods %q not found", name)
		case c.JSONPath != nil:
			met, err := kubectl.JSONPathMet(pod, c)
			if err != nil {
				return false, fmt.Errorf("error: %v", err)
			}
			if !met {
				return false, nil
			}
		case !kubectl.ConditionMet(pod, c):
			return false, nil
		}
	}
	return true, nil
}
