package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cmd/node/internal/manifest"
	"github.com/probeactor/probeactor/cmd/node/internal/proc"
	"github.com/probeactor/probeactor/features"
)

// errInvalid marks manifest errors (already printed one per line); the exit code is 1.
var errInvalid = errors.New("invalid manifests")

// loadPods reads, defaults and validates every manifest under node's feature gates. On any problem
// it writes every error, one per line, to stderr and returns errInvalid.
func loadPods(files []string, stdin io.Reader, stderr io.Writer, now time.Time, gates features.Gates) ([]*v1.Pod, error) {
	return loadPodsWith(files, stdin, stderr, now, gates, nil)
}

// loadPodsWith is loadPods with assignUID (when not nil) called on every pod before its defaults,
// to set a UID the manifest did not give (else a random one is).
func loadPodsWith(files []string, stdin io.Reader, stderr io.Writer, now time.Time, gates features.Gates, assignUID func(*v1.Pod)) ([]*v1.Pod, error) {
	loaded, err := manifest.ReadFiles(files, stdin)
	if err != nil {
		for _, e := range flatten(err) {
			fmt.Fprintf(stderr, "error: %s\n", manifest.OneLine(e.Error()))
		}
		return nil, errInvalid
	}
	var pods []*v1.Pod
	var problems []string
	seen := map[string]string{}
	seenUID := map[types.UID]string{}
	for _, l := range loaded {
		pod := l.Pod
		if assignUID != nil {
			assignUID(pod)
		}
		for _, e := range proc.Prepare(pod, now, gates) {
			problems = append(problems, fmt.Sprintf("%s: %s", l.Origin, e.Error()))
		}
		key := pod.Namespace + "/" + pod.Name
		if first, ok := seen[key]; ok && pod.Name != "" {
			problems = append(problems, fmt.Sprintf("%s: metadata.name: Duplicate value: pod %q is also defined in %s", l.Origin, key, first))
		}
		seen[key] = l.Origin
		if first, ok := seenUID[pod.UID]; ok {
			problems = append(problems, fmt.Sprintf("%s: metadata.uid: Duplicate value: %q is also the UID of the pod in %s", l.Origin, pod.UID, first))
		}
		seenUID[pod.UID] = l.Origin
		pods = append(pods, pod)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stderr, "error: %s\n", manifest.OneLine(p))
		}
		return nil, errInvalid
	}
	return pods, nil
}

// flatten unwraps errors.Join trees into their leaves.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

func validateCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("validate", "validate -f FILE|DIR... [-R] [--feature-gates NAME=BOOL,...] (\"-\" reads stdin)", stderr)
	var files fileList
	var gates features.Gates
	recursive := addManifestFlags(fs, &files)
	addFeatureGatesFlag(fs, &gates, "validate as node run with the same gates does")
	if !parseManifestArgs(fs, &files, args, stderr) {
		return 2
	}
	if !expandRecursive(&files, *recursive, stderr) {
		return 1
	}
	pods, err := loadPods(files, stdin, stderr, time.Now(), gates)
	if err != nil {
		return 1
	}
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	fmt.Fprintf(stdout, "valid: %d pod(s): %s\n", len(pods), strings.Join(names, ", "))
	return 0
}

// addManifestFlags adds -f and -R (--recursive) to fs; it returns -R's value.
func addManifestFlags(fs *flag.FlagSet, files *fileList) *bool {
	fs.Var(files, "f", "a manifest `FILE` (YAML or JSON, several documents allowed; \"-\" = stdin; a directory: its .json, .yaml and .yml files; an http(s) URL: what a GET returns; as kubectl); repeatable")
	recursive := fs.Bool("R", false, "with -f DIR, also the manifests in DIR's subdirectories (kubectl's -R)")
	fs.BoolVar(recursive, "recursive", false, "the same as -R")
	return recursive
}

// expandRecursive replaces the directories among files with their manifests and those of their
// subdirectories, if recursive (-R). It reports false, having printed every error, when a
// directory cannot be read or holds no manifest (exit 1, as a file that cannot be read).
func expandRecursive(files *fileList, recursive bool, stderr io.Writer) bool {
	if !recursive {
		return true
	}
	expanded, err := manifest.ExpandDirs(*files)
	if err != nil {
		for _, e := range flatten(err) {
			fmt.Fprintf(stderr, "error: %s\n", manifest.OneLine(e.Error()))
		}
		return false
	}
	*files = expanded
	return true
}

// parseManifestArgs parses args with fs (flags and file names in any order) into files: the -f
// files, then the positional ones. It reports false, having printed why and the usage, when the
// flags are bad or no manifest is named (a usage error: exit 2).
func parseManifestArgs(fs *flag.FlagSet, files *fileList, args []string, stderr io.Writer) bool {
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return false
	}
	*files = append(*files, rest...)
	if len(*files) == 0 {
		fmt.Fprintln(stderr, "error: no manifests: use -f FILE")
		fs.Usage()
		return false
	}
	return true
}
