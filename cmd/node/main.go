// Command node runs Kubernetes Pod manifests as local processes, probes them exactly as kubelet
// does (the probeactor actor core), restarts them on liveness/startup failure and serves their
// status on kubelet's read-only HTTP paths.
//
// `node run` is an ordered list of parts (internal/lifecycle): run.go parses flags and loads pods,
// node.go assembles the parts the flags ask for (a mode is which parts are in the list: single,
// static pods (--pod-manifest-path, --manifest-url), --fleet, --cluster) and runs them, started in order and stopped in reverse,
// each stop within its deadline. fleet.go and cluster.go hold those modes' flags; what each part
// does lives next to what it adapts (cmd/node/internal/podhost, fleet/link, cluster/membership,
// cluster/runner, ...). kubeletconfig.go applies kubelet's configuration file under the command
// line's flags. fleet_command.go is `node fleet`. Package main keeps flags, wiring and
// commands: no actor, no mutex, no state machine.
//
//	node run [--config FILE] [--config-dir DIR] [-f FILE|DIR]... [-R] [--listen ADDR] [--root-dir DIR] [--log-level LEVEL] [--log-format text|json]
//	         [--crashloop-backoff-initial D] [--crashloop-backoff-max D] [--profiling]
//	         [--pod-manifest-path DIR] [--file-check-frequency D]
//	         [--manifest-url URL [--manifest-url-header NAME:VALUE,...] [--http-check-frequency D]]
//	         [--node-name NAME --fleet ADDR [--fleet-listen ADDR] [--node-status-update-frequency D] [TLS flags]]
//	         [--node-name NAME --cluster NAME --cluster-listen ADDR --cluster-peers A,B,C [--cluster-failure-timeout D]]
//	node validate -f FILE|DIR... [-R]
//	node explain -f FILE|DIR... [-R] [-o json]
//	node describe pod[s] [NAME...] | pod/NAME... [-n NS | -A] [-l SELECTOR] [--show-events] [--server ADDR] [-o json]
//	node get pods [NAME...] [--server ADDR] [-n NS | -A] [-l SELECTOR] [--field-selector SELECTOR]
//	              [-o json|yaml|name|wide|jsonpath=T|custom-columns=C] [--sort-by PATH] [--show-labels] [--no-headers]
//	              [--ignore-not-found] [-w]
//	              (NODE column from a fleet aggregator with -A)
//	node logs POD [CONTAINER] | -l SELECTOR [-c CONTAINER | --all-containers] [-n NS] [-p] [--tail N]
//	          [--since D | --since-time T] [--limit-bytes N] [-f] [--max-log-requests N] [--prefix] [--server ADDR]
//	node top pod[s] [NAME... | -l SELECTOR] [-n NS | -A] [--containers] [--sum] [--sort-by cpu|memory] [--no-headers] [--window D] [--server ADDR]
//	node top node[s] [NAME... | -l SELECTOR] [--show-capacity] [--sort-by cpu|memory] [--no-headers] [--window D] [--server ADDR]
//	node events [--for pod/NAME|node/NAME] [--types T,...] [-n NS | -A] [-w] [-o json|yaml] [--no-headers] [--server ADDR]
//	node wait pod/NAME... | pods NAME... | pods -l SELECTOR | pods --all --for condition=NAME[=VALUE]|delete|create
//	          [--timeout D] [-n NS] [--server ADDR]
//	node fleet [--listen ADDR] [--remote-listen ADDR] [--node-monitor-grace-period D] [TLS flags]
//	node get nodes [NAME...] [--server ADDR] [-l SELECTOR] [-o json|yaml|name] [--show-labels] [-w]
//	              (a fleet aggregator's nodes, or a node's own Node object)
//	node version
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/probeactor/probeactor/cmd/node/internal/demo"
	"github.com/probeactor/probeactor/cmd/node/internal/proc"
)

const usage = `node runs Kubernetes Pod manifests as local processes, probed and restarted like kubelet does.

Usage:
  node run [-f FILE]... [flags]   run pods until SIGINT/SIGTERM (no -f, no --pod-manifest-path, no --manifest-url: the embedded demo)
  node validate -f FILE...        check manifests without running anything
  node explain -f FILE...         what each probe's numbers mean in time, and the classic mistakes
  node describe pod [NAME...]     pods as kubectl describe shows them, with each probe's live state
  node get pods [--server ADDR]   list the pods of a running node (or of a fleet aggregator: -A adds NODE)
  node get nodes [--server ADDR]  list the nodes of a fleet aggregator (default 127.0.0.1:10256), or a node itself
  node logs POD [CONTAINER]       print a container's log from a running node (kubectl logs' flags)
  node events [--for pod/NAME]    the events of a running node or fleet aggregator, as kubectl events prints them
  node top pods [NAME...]         each pod's CPU and memory on a running node (or a fleet's), as kubectl top pod
  node top node [NAME]            a running node's (or every fleet node's) CPU and memory, and their share, as kubectl top node
  node wait pod/NAME --for ...    wait until pods meet a condition (condition=Ready), or go, as kubectl wait
  node fleet [flags]              run the fleet aggregator (every node's pods; node get nodes)
  node version                    print version information

Run "node COMMAND -h" for a command's flags.
`

func main() {
	// Hidden subcommands: the node binary is also every container's shim, the exec-probe guard
	// and the demo's containers.
	proc.RunHelper(os.Args)
	if len(os.Args) > 1 && os.Args[1] == demo.Arg {
		os.Exit(demo.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(dispatch(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// dispatch runs one command and returns the process exit code.
func dispatch(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runCommand(args[1:], stdin, stdout, stderr)
	case "validate":
		return validateCommand(args[1:], stdin, stdout, stderr)
	case "explain":
		return explainCommand(args[1:], stdin, stdout, stderr)
	case "describe":
		return describeCommand(args[1:], stdout, stderr)
	case "get":
		return getCommand(args[1:], stdout, stderr)
	case "logs":
		return logsCommand(args[1:], stdout, stderr)
	case "top":
		return topCommand(args[1:], stdout, stderr)
	case "events":
		return eventsCommand(args[1:], stdout, stderr)
	case "wait":
		return waitCommand(args[1:], stdout, stderr)
	case "fleet":
		return fleetCommand(args[1:], stdout, stderr)
	case "version", "--version":
		return versionCommand(stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "node: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
