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

// Each run's log is read back from the file it wrote: the run's number when it starts
// (podState.nextRun) is the one logRun finds in the status the pod shows afterwards, current and
// previous, through a first run, a crash and its back-off, a restart, a RestartAllContainers
// restart that removes the containers (their restarts counted before they start again), and the
// runs after it.
func TestEachRunsLogIsReadFromTheFileItWrote(t *testing.T) {
	s := newSim(t, restartAllPod(v1.RestartPolicyAlways))
	wrote := map[string]int{} // the log number of each container's latest run
	sync := func() {
		t.Helper()
		for _, name := range s.p.decide(s.now, false, false).Start {
			wrote[name] = s.p.nextRun(name)
			s.n++
			s.ids[name] = "proc://" + string(rune('a'+s.n))
			s.p.started(name, s.ids[name], s.now)
		}
	}
	read := func(name string, previous bool) (int, error) {
		cs := s.state(name)
		return logRun(&cs, previous)
	}
	run := func(name string, previous bool) int {
		t.Helper()
		n, err := read(name, previous)
		require.NoError(t, err, "%s previous=%v", name, previous)
		return n
	}

	sync()
	s.exit("init", 0)
	sync()
	assert.Equal(t, map[string]int{"init": 0, "app": 0, "other": 0}, wrote)
	assert.Equal(t, 0, run("other", false))
	_, err := read("other", true)
	assert.ErrorIs(t, err, errNoPrevious, "a first run has none before it")

	s.exit("other", 1)
	assert.Equal(t, 0, run("other", false), "exited: its run is current")
	_, err = read("other", true)
	assert.ErrorIs(t, err, errNoPrevious)
	sync() // the first restart is at once
	require.Equal(t, 1, wrote["other"])
	assert.Equal(t, 1, run("other", false))
	assert.Equal(t, 0, run("other", true))
	s.exit("other", 1)
	sync() // CrashLoopBackOff: its last run is current and previous
	require.NotNil(t, s.state("other").State.Waiting)
	assert.Equal(t, 1, run("other", false))
	assert.Equal(t, 1, run("other", true))
	s.advance(11 * time.Second)
	sync()
	require.Equal(t, 2, wrote["other"])
	assert.Equal(t, 2, run("other", false))
	assert.Equal(t, 1, run("other", true))

	s.exit("app", 42) // RestartAllContainers
	sync()
	s.exit("other", 137)
	sync()
	require.Equal(t, 1, wrote["init"], "initialization runs again")
	for name, n := range map[string]int{"app": 0, "other": 2} {
		assert.Equal(t, n, run(name, false), "%s: removed, not started again: the run the restart removed, as kubelet reads a waiting container's lastState", name)
		assert.Equal(t, n, run(name, true), "%s previous: the same", name)
	}

	s.exit("init", 0)
	sync()
	require.Equal(t, map[string]int{"init": 1, "app": 1, "other": 3}, wrote, "each run after the restart is the count it reports")
	for name, n := range wrote {
		assert.Equal(t, n, run(name, false), name)
		assert.Equal(t, n-1, run(name, true), name)
	}
}

// logRun's answers for each state a container's status can show, by kubelet's rule.
func TestLogRun(t *testing.T) {
	waiting := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	exited := func(id string) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, ContainerID: id}}
	}
	for _, tc := range []struct {
		name     string
		cs       v1.ContainerStatus
		previous bool
		want     int
		err      error
	}{
		{name: "first run", cs: v1.ContainerStatus{ContainerID: "proc://a", State: running}, want: 0},
		{name: "first run, previous", cs: v1.ContainerStatus{ContainerID: "proc://a", State: running}, previous: true, err: errNoPrevious},
		{name: "third run", cs: v1.ContainerStatus{ContainerID: "proc://c", RestartCount: 2, State: running, LastTerminationState: exited("proc://b")}, want: 2},
		{name: "third run, previous", cs: v1.ContainerStatus{ContainerID: "proc://c", RestartCount: 2, State: running, LastTerminationState: exited("proc://b")}, previous: true, want: 1},
		{name: "exited for good", cs: v1.ContainerStatus{ContainerID: "proc://b", RestartCount: 1, State: exited("proc://b"), LastTerminationState: exited("proc://a")}, want: 1},
		{name: "exited for good, previous", cs: v1.ContainerStatus{ContainerID: "proc://b", RestartCount: 1, State: exited("proc://b"), LastTerminationState: exited("proc://a")}, previous: true, want: 0},
		{name: "first run exited, previous", cs: v1.ContainerStatus{ContainerID: "proc://a", State: exited("proc://a")}, previous: true, err: errNoPrevious},
		{name: "back-off", cs: v1.ContainerStatus{ContainerID: "proc://b", RestartCount: 1, State: waiting, LastTerminationState: exited("proc://b")}, want: 1},
		{name: "back-off, previous", cs: v1.ContainerStatus{ContainerID: "proc://b", RestartCount: 1, State: waiting, LastTerminationState: exited("proc://b")}, previous: true, want: 1},
		{name: "creating", cs: v1.ContainerStatus{State: waiting}, err: errWaiting},
		{name: "creating, previous", cs: v1.ContainerStatus{State: waiting}, previous: true, err: errNoPrevious},
		{name: "no state", cs: v1.ContainerStatus{}, err: errWaiting},
		{name: "removed by RestartAllContainers", cs: v1.ContainerStatus{RestartCount: 2, State: waiting, LastTerminationState: exited("proc://b")}, want: 1},
		{name: "removed by RestartAllContainers, previous", cs: v1.ContainerStatus{RestartCount: 2, State: waiting, LastTerminationState: exited("proc://b")}, previous: true, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := logRun(&tc.cs, tc.previous)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
