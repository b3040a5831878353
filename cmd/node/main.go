// Command node runs Kubernetes Pod manifests as local processes and probes them like kubelet.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "node: under construction (see issue 4)")
	os.Exit(1)
}
