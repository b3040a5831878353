package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func versionCommand(stdout io.Writer) int {
	actor := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/asynkron/protoactor-go" {
				actor = d.Version
			}
		}
	}
	fmt.Fprintf(stdout, "node %s (probeactor; %s %s/%s; protoactor-go %s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH, actor)
	return 0
}
