package proc

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/clock"
)

// TestGuardKillsExecProbeGroupAtEOF: when the guard's stdin closes — what node's death, even by
// SIGKILL, does — it kills the whole process group of a running exec probe, including a child the
// probe command forked (Pdeathsig alone would kill only the command itself). Stop closes it the
// same way, so the test drives that path without killing node.
func TestGuardKillsExecProbeGroupAtEOF(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	dir := t.TempDir()
	pod := shPod("guarded", v1.RestartPolicyAlways, "exec sleep 300")
	pod.Spec.Containers[0].WorkingDir = dir
	require.NoError(t, rt.Run(pod))
	cs := waitRunning(t, rec, pod.UID, "c")

	probeDone := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() { // ends when the probe command is killed (or at the 60 s timeout)
		probeDone <- rt.RunInContainer(ctx, cs.ContainerID, []string{"sh", "-c", "sleep 600 & echo $! > child; echo $$ > parent; wait"}, io.Discard)
	}()
	var parent, child int
	require.Eventually(t, func() bool {
		parent, child = pidIn(filepath.Join(dir, "parent")), pidIn(filepath.Join(dir, "child"))
		return parent > 0 && child > 0
	}, settle, tick, "the exec probe never started")
	require.True(t, alive(child), "the forked child runs while the probe does")
	// The command runs (and wrote its pids) a moment before RunLocal registers its group; a Stop
	// in that window would leave the probe unguarded, as Stop's contract says, and prove nothing.
	require.Eventually(t, func() bool { return rt.guard.watching(parent) }, settle, tick,
		"the exec probe's group was never registered with the guard")

	require.NoError(t, rt.Stop(context.Background()))
	select {
	case err := <-probeDone:
		assert.Error(t, err, "the probe command was killed")
	case <-time.After(10 * time.Second): // a bound on a failure, not a wait for success
		t.Fatal("the exec probe was not killed when the guard saw end-of-file")
	}
	require.Eventually(t, func() bool { return !alive(parent) && !alive(child) }, settle, tick,
		"pids %d/%d outlived the guard's end-of-file", parent, child)
}

// pidIn reads a pid written by a test command; 0 until the file is complete.
func pidIn(path string) int {
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(string(b), "\n") {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
