package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/probeactor/probeactor/cmd/node/internal/explain"
	"github.com/probeactor/probeactor/features"
)

// explainCommand is `node explain -f FILE...`: what each probe's numbers mean in time, and the
// classic mistakes. It exits 0 with warnings, 1 only for invalid manifests (node validate's own
// checks and messages), 2 for a usage error.
func explainCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("explain", "explain -f FILE|DIR... [-R] [-o json] [--feature-gates NAME=BOOL,...]   (\"-\" reads stdin)", stderr)
	var files fileList
	var gates features.Gates
	recursive := addManifestFlags(fs, &files)
	addFeatureGatesFlag(fs, &gates, "the manifests are validated as node run with the same gates does")
	output := fs.String("o", "", "output format: json prints the reports (times in seconds)")
	if !parseManifestArgs(fs, &files, args, stderr) {
		return 2
	}
	if *output != "" && *output != "json" {
		fmt.Fprintf(stderr, "error: -o %q: only json is supported\n", *output)
		return 2
	}
	if !expandRecursive(&files, *recursive, stderr) {
		return 1
	}
	pods, err := loadPods(files, stdin, stderr, time.Now(), gates)
	if err != nil {
		return 1
	}
	reports := make([]explain.Report, 0, len(pods))
	for _, p := range pods {
		reports = append(reports, explain.Pod(p))
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
		return 0
	}
	if err := explain.Print(stdout, reports); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}
