package upstream

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
	"k8s.io/component-base/version"
)

// TestMain refuses to run without kubelet's version stamped into the binary: upstream's probes take
// their User-Agent ("kube-probe/<major>.<minor>") from k8s.io/component-base/version, which kubelet's
// build sets with -ldflags; unset, upstream would send "kube-probe/." and every header case would
// differ for a reason that is not a difference. `make test` sets it (UPSTREAM_LDFLAGS).
func TestMain(m *testing.M) {
	if v := version.Get(); v.Major != "1" || v.Minor != "37" {
		fmt.Fprintf(os.Stderr, "tests/upstream: kubelet's version is not stamped (got major %q minor %q); run it with\n"+
			"  go test -ldflags '-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37' ./...\n"+
			"or `make test` from the repository root\n", v.Major, v.Minor)
		os.Exit(2)
	}
	if port := os.Getenv(exhaustEnv); port != "" {
		runExhausted(port)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m,
		// klog's flush daemon, started by its init and never stopped.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	)
}
