package proc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/clock"
)

// TestLogThatCannotBeOpenedIsAStartError: a run whose log cannot be opened is not started, as with
// containerd (StartError, exit 128, a Failed event naming the log) and is retried with the usual
// back-off; the pod's other container keeps running untouched, and the retry that can open its
// log starts the container.
func TestLogThatCannotBeOpenedIsAStartError(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	rt, rec := newTestRuntime(t, clk)
	pod := shPod("nolog", v1.RestartPolicyAlways, "exec sleep 300")
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "ok", Command: []string{"sh", "-c", "exec sleep 300"}})
	// Runs 0 and 1 of c cannot open their logs (a directory is in the way).
	dir := filepath.Join(rt.opts.RootDir, "pods", PodDirName(pod), "c")
	for _, run := range []string{"0.log", "1.log"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, run), 0o755))
	}
	require.NoError(t, rt.Run(pod))
	ok := waitRunning(t, rec, pod.UID, "ok")

	require.Eventually(t, func() bool {
		cs, _ := rec.container(pod.UID, "c")
		return cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	}, settle, tick)
	cs, phase := rec.container(pod.UID, "c")
	require.NotNil(t, cs.LastTerminationState.Terminated)
	assert.Equal(t, "StartError", cs.LastTerminationState.Terminated.Reason)
	assert.Equal(t, int32(128), cs.LastTerminationState.Terminated.ExitCode)
	assert.Contains(t, cs.LastTerminationState.Terminated.Message, "open container log: ")
	assert.Contains(t, strings.Join(rec.reasons("c"), "\n"), "Failed: Error: open container log: open "+filepath.Join(dir, "0.log"))
	assert.Equal(t, v1.PodRunning, phase)

	// The back-off passes; run 2 can open its log.
	clk.Advance(10 * time.Second)
	cs = waitRunning(t, rec, pod.UID, "c")
	assert.Equal(t, int32(2), cs.RestartCount)
	now, _ := rec.container(pod.UID, "ok")
	assert.Equal(t, ok.ContainerID, now.ContainerID, "the other container was never touched")
	assert.Equal(t, int32(0), now.RestartCount)
	assert.NotNil(t, now.State.Running)
}

// TestRunningContainerSurvivesAnUnwritableLog: once running, a container whose log refuses every
// write (here the log is /dev/full: ENOSPC) keeps running and never sees the failure — its output
// goes through its shim, which drops what the log cannot take, as containerd's shim does.
func TestRunningContainerSurvivesAnUnwritableLog(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	work := t.TempDir()
	// Any failed write makes the container exit 3; after 200 lines it says so in a file.
	pod := shPod("full", v1.RestartPolicyAlways,
		`for i in $(seq 200); do echo line $i || exit 3; echo err $i >&2 || exit 3; done; touch wrote; exec sleep 300`)
	pod.Spec.Containers[0].WorkingDir = work
	dir := filepath.Join(rt.opts.RootDir, "pods", PodDirName(pod), "c")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, run := range []string{"0.log", "1.log", "2.log"} { // a restart would not escape it either
		require.NoError(t, os.Symlink("/dev/full", filepath.Join(dir, run)))
	}
	require.NoError(t, rt.Run(pod))

	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(work, "wrote"))
		return err == nil
	}, settle, tick, "the container's writes failed: %v", rec.reasons("c"))
	// Its status is published on its own schedule: the file can be there before the first
	// Running status is (a CI run read the status in between).
	cs := waitRunning(t, rec, pod.UID, "c")
	assert.Equal(t, int32(0), cs.RestartCount)
}

// TestLogHasAllOutputWhenTheExitIsReported: the shim reports the exit only after the container's
// last output reached the log.
func TestLogHasAllOutputWhenTheExitIsReported(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	pod := shPod("burst", v1.RestartPolicyNever, `seq 100000; exit 0`)
	require.NoError(t, rt.Run(pod))
	require.Eventually(t, func() bool {
		cs, _ := rec.container(pod.UID, "c")
		return cs.State.Terminated != nil
	}, settle, tick)
	path, err := rt.LogPath(pod.UID, "c", false)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 100000)
	assert.Equal(t, "100000", lines[len(lines)-1])
}
