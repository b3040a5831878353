package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/probeactor/probeactor/cmd/node/internal/explain"
)

// explainCommand is `node explain -f FILE...`: what each probe's numbers mean in time, and the
// classic mistakes. It exits 0 with warnings, 1 only for invalid manifests (node validate's own
// checks and messages), 2 for a usage error.
func explainCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("explain", "explain -f FILE... [-o json]   (\"-\" reads stdin)", stderr)
	var files fileList
	fs.Var(&files, "f", "a manifest file (YAML or JSON, several documents allowed; \"-\" = stdin); repeatable")
	output := fs.String("o", "", "output format: json prints the reports (times in seconds)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	files = append(files, rest...)
	if len(files) == 0 {
		fmt.Fprintln(stderr, "error: no manifests: use -f FILE")
		fs.Usage()
		return 2
	}
	if *output != "" && *output != "json" {
		fmt.Fprintf(stderr, "error: -o %q: only json is supported\n", *output)
		return 2
	}
	pods, err := loadPods(files, stdin, stderr, time.Now())
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
