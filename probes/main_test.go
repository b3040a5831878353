package probes

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// helperEnv makes the test binary a stand-in prober: it runs the command in the variable's value
// (space-separated) with RunLocal and exits when it ends (see TestExecCommandDiesWithProber).
const helperEnv = "PROBES_TEST_RUNLOCAL"

func TestMain(m *testing.M) {
	if cmd := os.Getenv(helperEnv); cmd != "" {
		_ = RunLocal(context.Background(), strings.Fields(cmd), LocalOptions{}, io.Discard)
		os.Exit(0)
	}
	if port := os.Getenv(exhaustEnv); port != "" {
		runExhausted(port)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
