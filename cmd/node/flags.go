package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/probeactor/probeactor/features"
)

// fileList is a repeatable -f flag.
type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// newFlagSet returns a FlagSet that reports errors to stderr and does not exit.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: node %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseInterspersed parses flags that may come before or after positional arguments
// (`node logs web -c app`), returning the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// addFeatureGatesFlag adds kubelet's --feature-gates to fs (repeatable, merged as kubelet merges
// it); a bad value is a usage error naming the gate (exit 2). purpose ends the help text.
func addFeatureGatesFlag(fs *flag.FlagSet, g *features.Gates, purpose string) {
	fs.Var(g, "feature-gates", "kubelet's feature gates, `NAME=BOOL,...` (default: kubelet 1.37.2's); "+purpose+". Gates:\n"+
		strings.TrimRight(features.Describe(), "\n"))
}

// Kubelet 1.37.2's CrashLoopBackOff (pkg/kubelet/kubelet.go, newCrashLoopBackOff, and the
// configuration's limits).
const (
	kubeletInitialBackoff        = 10 * time.Second
	kubeletMaxBackoff            = 300 * time.Second
	kubeletReducedInitialBackoff = 1 * time.Second
	kubeletReducedMaxBackoff     = 60 * time.Second
	kubeletMinMaxBackoff         = 1 * time.Second
)

// crashLoopBackOff is kubelet 1.37.2's newCrashLoopBackOff with node's two flags: 10 s doubling up
// to 300 s; 1 s up to 60 s with ReduceDefaultCrashLoopBackOffDecay; with KubeletCrashLoopBackOffMax
// (on by default) the maximum is --crashloop-backoff-max (default 300 s, kubelet's configuration
// default, which overrides the reduced 60 s as it does in kubelet), between 1 s and 300 s, and the
// initial delay is never above it; with that gate off --crashloop-backoff-max may not be set.
// --crashloop-backoff-initial is node's own (kubelet has no such setting): when set it replaces the
// initial delay. maxSet and initialSet say whether the flags were given.
func crashLoopBackOff(g features.Gates, initial time.Duration, initialSet bool, maxBackoff time.Duration, maxSet bool) (time.Duration, time.Duration, error) {
	boInitial, boMax := kubeletInitialBackoff, kubeletMaxBackoff
	if g.Enabled(features.ReduceDefaultCrashLoopBackOffDecay) {
		boInitial, boMax = kubeletReducedInitialBackoff, kubeletReducedMaxBackoff
	}
	switch {
	case g.Enabled(features.KubeletCrashLoopBackOffMax):
		if maxBackoff < kubeletMinMaxBackoff || maxBackoff > kubeletMaxBackoff {
			return 0, 0, fmt.Errorf("--crashloop-backoff-max %v: must be between 1s and 300s (kubelet's CrashLoopBackOff.MaxContainerRestartPeriod)", maxBackoff)
		}
		boMax = maxBackoff
		boInitial = min(boInitial, boMax)
	case maxSet:
		return 0, 0, fmt.Errorf("--crashloop-backoff-max: FeatureGate KubeletCrashLoopBackOffMax not enabled, CrashLoopBackOff.MaxContainerRestartPeriod must not be set")
	default:
	}
	if initialSet {
		if initial <= 0 {
			return 0, 0, fmt.Errorf("--crashloop-backoff-initial %v: must be a positive duration (e.g. 10s)", initial)
		}
		boInitial = initial
	}
	return boInitial, boMax, nil
}

// flagsSet returns the names of the flags given on fs's command line.
func flagsSet(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}
