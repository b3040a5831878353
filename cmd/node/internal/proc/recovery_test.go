package proc

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/messages"
)

// newRuntimeAt is a runtime of the test binary's shim on root with a re-attach timeout, one "node"
// of several that may share root; newTestRuntime is it on a fresh root with none. It returns the
// runtime's log too.
func newRuntimeAt(t *testing.T, root string, clk clock.Clock, reattach time.Duration) (*Runtime, *recorder, *logtest.Buffer) {
	t.Helper()
	rec := &recorder{}
	logs := &logtest.Buffer{}
	rt, err := New(Options{
		RootDir:         root,
		Shim:            []string{os.Args[0], ShimArg},
		Clock:           clk,
		Events:          rec,
		Logger:          hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info}),
		InitialBackoff:  10 * time.Second,
		MaxBackoff:      40 * time.Second,
		ReattachTimeout: reattach,
	})
	require.NoError(t, err)
	rt.ReportStatus(rec.status)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
		require.NoError(t, rt.Stop(ctx))
	})
	return rt, rec, logs
}

// readPIDs waits until file lists n pids, and returns them.
func readPIDs(t *testing.T, file string, n int) []int {
	t.Helper()
	var pids []int
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(file)
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil && p > 0 {
				pids = append(pids, p)
			}
		}
		return len(pids) == n
	}, settle, tick)
	return pids
}

func assertGone(t *testing.T, pids []int) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, p := range pids {
			if alive(p) {
				return false
			}
		}
		return true
	}, settle, tick, "pids %v", pids)
}

// shimOf is the shim of a container's main process: its parent. A shim an earlier runtime started
// is that runtime's child until it exits, so a test waits for it to be gone (and reaped: goleak).
func shimOf(t *testing.T, pid int) int {
	t.Helper()
	ppid, ok := parentPID(pid)
	require.True(t, ok, "pid %d", pid)
	return ppid
}

func startRecovered(t *testing.T, rt *Runtime) {
	t.Helper()
	require.NoError(t, rt.Start(context.Background()))
}

// A container outlives its node (here: Detach, node's planned restart) and the next node on the
// same root dir adopts it as it is — the same process, container ID, restart count and start
// time, its log continued, ready and started as the last node saw it, no Started event — and
// controls it fully: a liveness kill restarts it, Remove stops it.
func TestNextNodeAdoptsARunningContainer(t *testing.T) {
	t.Parallel()
	root, work := t.TempDir(), t.TempDir()
	rt1, rec1, _ := newRuntimeAt(t, root, clock.Real(), time.Minute)
	pod := shPod("adopt", v1.RestartPolicyAlways,
		`echo $$$$ > pid; echo before; while [ ! -f go ]; do sleep 0.05; done; echo after; exec sleep 300`)
	pod.Spec.Containers[0].WorkingDir = work
	require.NoError(t, rt1.Run(pod))
	first := waitRunning(t, rec1, pod.UID, "c")
	pid := readPIDs(t, filepath.Join(work, "pid"), 1)[0]
	shim := shimOf(t, pid)
	rt1.ProbeResult(pod.UID, "c", first.ContainerID, messages.Readiness, true)
	rt1.ProbeResult(pod.UID, "c", first.ContainerID, messages.Startup, true)
	rt1.ProbeResult(pod.UID, "c", "proc://stale", messages.Readiness, false) // ignored

	rt1.Detach()
	assert.ErrorIs(t, rt1.Run(shPod("late", v1.RestartPolicyAlways, "true")), ErrClosed)
	assert.ErrorIs(t, rt1.Remove(context.Background(), pod.UID), ErrClosed, "Detach leaves the pod to the next node")
	assert.True(t, alive(pid), "the container outlives its node")
	assert.FileExists(t, recordPath(filepath.Join(root, "state"), pod.UID))

	rt2, rec2, _ := newRuntimeAt(t, root, clock.Real(), time.Minute)
	var events []PodEventKind
	var mu sync.Mutex
	rt2.Subscribe(func(e PodEvent) { mu.Lock(); events = append(events, e.Kind); mu.Unlock() })
	startRecovered(t, rt2)
	assert.Empty(t, rt2.Pods(), "a recovered pod is listed once Run claims it")
	require.NoError(t, rt2.Run(pod))
	cs := waitRunning(t, rec2, pod.UID, "c")
	assert.Equal(t, first.ContainerID, cs.ContainerID)
	assert.Equal(t, int32(0), cs.RestartCount)
	assert.True(t, first.State.Running.StartedAt.Equal(&cs.State.Running.StartedAt), "%v %v", first.State.Running.StartedAt, cs.State.Running.StartedAt)
	assert.True(t, cs.Ready, "ready as the last node saw it (KEP-4781)")
	require.NotNil(t, cs.Started)
	assert.True(t, *cs.Started, "started as the last node saw it (KEP-4781)")
	assert.True(t, alive(pid), "the same process")
	assert.NotContains(t, rec2.reasons("c"), "Started: Container started", "no new process, no Started event")
	assert.NotContains(t, rec2.reasons("c"), "Created: Container created", "nor a Created one")
	mu.Lock()
	assert.Equal(t, PodStarted, events[0])
	mu.Unlock()

	require.NoError(t, os.WriteFile(filepath.Join(work, "go"), nil, 0o644))
	path, err := rt2.LogPath(pod.UID, "c", false)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(path)
		return string(b) == "before\nafter\n"
	}, settle, tick, "one log, lines from before and after")

	// A liveness kill restarts it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, rt2.KillContainer(ctx, messages.KillContainer{Pod: pod, Container: "c", ContainerID: messages.ContainerID(cs.ContainerID),
		Probe: messages.Liveness, GracePeriod: time.Second, Restart: true}))
	assertGone(t, []int{pid})
	require.Eventually(t, func() bool {
		cs, _ := rec2.container(pod.UID, "c")
		return cs.State.Running != nil && cs.RestartCount == 1
	}, settle, tick)
	cs, _ = rec2.container(pod.UID, "c")
	assert.NotEqual(t, first.ContainerID, cs.ContainerID)
	assert.False(t, cs.Ready, "a new instance is not ready until probed")
	assert.Equal(t, first.ContainerID, cs.LastTerminationState.Terminated.ContainerID)
	pid2 := readPIDs(t, filepath.Join(work, "pid"), 1)[0]

	// Remove stops it, and forgets its record.
	require.NoError(t, rt2.Remove(ctx, pod.UID))
	assertGone(t, []int{pid2, shim})
	assert.NoFileExists(t, recordPath(filepath.Join(root, "state"), pod.UID))
	entries, _ := os.ReadDir(filepath.Join(root, "shims"))
	assert.Empty(t, entries, "every shim removed its socket")
}

// With no node back within the re-attach timeout, the shim stops the container's whole tree (a
// setsid'd child included) itself: alive just before the timeout, gone after.
func TestReattachTimeoutStopsTheTree(t *testing.T) {
	t.Parallel()
	const window = 1500 * time.Millisecond
	root, work := t.TempDir(), t.TempDir()
	rt, rec, _ := newRuntimeAt(t, root, clock.Real(), window)
	pod := shPod("window", v1.RestartPolicyAlways, `setsid sleep 301 & echo $! >> pids; echo $$$$ >> pids; wait`)
	pod.Spec.Containers[0].WorkingDir = work
	require.NoError(t, rt.Run(pod))
	waitRunning(t, rec, pod.UID, "c")
	pids := readPIDs(t, filepath.Join(work, "pids"), 2)
	pids = append(pids, shimOf(t, pids[1]))

	detached := time.Now()
	rt.Detach()
	time.Sleep(time.Until(detached.Add(window - 400*time.Millisecond))) // the shims' own clock: real time
	for _, p := range pids {
		assert.True(t, alive(p), "pid %d before the re-attach timeout", p)
	}
	assertGone(t, pids)
	require.Eventually(t, func() bool {
		entries, _ := os.ReadDir(filepath.Join(root, "shims"))
		return len(entries) == 0
	}, settle, tick, "the shim is gone with its socket")
}

// With ReattachTimeout 0, containers die with node's connection (as before issue 20).
func TestNoReattachTimeoutDetachKills(t *testing.T) {
	t.Parallel()
	root, work := t.TempDir(), t.TempDir()
	rt, rec, _ := newRuntimeAt(t, root, clock.Real(), 0)
	pod := shPod("no-window", v1.RestartPolicyAlways, `setsid sleep 301 & echo $! >> pids; echo $$$$ >> pids; wait`)
	pod.Spec.Containers[0].WorkingDir = work
	require.NoError(t, rt.Run(pod))
	waitRunning(t, rec, pod.UID, "c")
	pids := readPIDs(t, filepath.Join(work, "pids"), 2)
	pids = append(pids, shimOf(t, pids[1]))
	rt.Detach()
	assertGone(t, pids)
}

// A container that exits while no node is attached: its shim keeps the exit for the next node,
// which applies it and goes on with the carried restart count and CrashLoopBackOff.
func TestExitWhileDetachedIsSeenByTheNextNode(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	root, work := t.TempDir(), t.TempDir()
	rt1, rec1, _ := newRuntimeAt(t, root, clk, time.Minute)
	// Run 0 exits at once (restarted at once: the back-off is now 10 s); run 1 waits for "go".
	pod := shPod("crash-detached", v1.RestartPolicyAlways,
		`n=$(cat n 2>/dev/null || echo 0); echo $((n+1)) > n; echo $$$$ > pid; [ $n -ge 1 ] || exit 1; while [ ! -f go ]; do sleep 0.05; done; exit 1`)
	pod.Spec.Containers[0].WorkingDir = work
	require.NoError(t, rt1.Run(pod))
	require.Eventually(t, func() bool {
		cs, _ := rec1.container(pod.UID, "c")
		return cs.State.Running != nil && cs.RestartCount == 1
	}, settle, tick)
	run1, _ := rec1.container(pod.UID, "c")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(work, "n"))
		return strings.TrimSpace(string(b)) == "2"
	}, settle, tick)
	pid := readPIDs(t, filepath.Join(work, "pid"), 1)[0]
	shim := shimOf(t, pid)
	rt1.Detach()

	require.NoError(t, os.WriteFile(filepath.Join(work, "go"), nil, 0o644))
	assertGone(t, []int{pid})

	rt2, rec2, _ := newRuntimeAt(t, root, clk, time.Minute)
	startRecovered(t, rt2)
	require.NoError(t, rt2.Run(pod))
	require.Eventually(t, func() bool {
		cs, _ := rec2.container(pod.UID, "c")
		return cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	}, settle, tick)
	cs, _ := rec2.container(pod.UID, "c")
	assert.Equal(t, int32(1), cs.RestartCount)
	assert.Contains(t, cs.State.Waiting.Message, "back-off 10s", "the back-off carried over")
	require.NotNil(t, cs.LastTerminationState.Terminated)
	assert.Equal(t, int32(1), cs.LastTerminationState.Terminated.ExitCode)
	assert.Equal(t, run1.ContainerID, cs.LastTerminationState.Terminated.ContainerID)

	clk.Advance(10 * time.Second)
	require.Eventually(t, func() bool {
		cs, _ := rec2.container(pod.UID, "c")
		return cs.RestartCount == 2 && cs.State.Waiting != nil && strings.Contains(cs.State.Waiting.Message, "back-off 20s")
	}, settle, tick)
	assertGone(t, []int{shim})
}

// A pod whose spec changed while node was down is replaced: its old container is stopped, the new
// spec starts afresh.
func TestChangedSpecIsReplaced(t *testing.T) {
	t.Parallel()
	root, work := t.TempDir(), t.TempDir()
	rt1, rec1, _ := newRuntimeAt(t, root, clock.Real(), time.Minute)
	pod := shPod("changed", v1.RestartPolicyAlways, `echo $$$$ > old; exec sleep 300`)
	pod.Spec.Containers[0].WorkingDir = work
	require.NoError(t, rt1.Run(pod))
	old := waitRunning(t, rec1, pod.UID, "c")
	oldPID := readPIDs(t, filepath.Join(work, "old"), 1)
	oldPID = append(oldPID, shimOf(t, oldPID[0]))
	rt1.Detach()

	changed := pod.DeepCopy()
	changed.Spec.Containers[0].Command = []string{"sh", "-c", `echo $$$$ > new; exec sleep 300`}
	rt2, rec2, _ := newRuntimeAt(t, root, clock.Real(), time.Minute)
	startRecovered(t, rt2)
	require.NoError(t, rt2.Run(changed))
	cs := waitRunning(t, rec2, pod.UID, "c")
	assertGone(t, oldPID)
	readPIDs(t, filepath.Join(work, "new"), 1)
	assert.NotEqual(t, old.ContainerID, cs.ContainerID)
	assert.Equal(t, int32(0), cs.RestartCount)
	assert.Nil(t, cs.LastTerminationState.Terminated)
	assert.Contains(t, rec2.reasons("c"), "Started: Container started")
}

// A recorded pod no Run claims is stopped by StopOrphans with its grace period (SIGTERM, then
// SIGKILL once it passed) and its record deleted; it is never listed.
func TestStopOrphansStopsUnclaimedPodsWithTheirGrace(t *testing.T) {
	t.Parallel()
	root, work := t.TempDir(), t.TempDir()
	rt1, rec1, _ := newRuntimeAt(t, root, clock.Real(), time.Minute)
	pod := shPod("gone-while-down", v1.RestartPolicyAlways, `trap "" TERM; sleep 300 & echo $! >> pids; setsid sleep 301 & echo $! >> pids; echo $$$$ >> pids; wait`)
	grace := int64(3)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.Containers[0].WorkingDir = work
	require.NoError(t, rt1.Run(pod))
	waitRunning(t, rec1, pod.UID, "c")
	pids := readPIDs(t, filepath.Join(work, "pids"), 3)
	pids = append(pids, shimOf(t, pids[2]))
	rt1.Detach()

	clk := clock.NewFake(time.Now())
	rt2, _, _ := newRuntimeAt(t, root, clk, time.Minute)
	startRecovered(t, rt2)
	stopped := make(chan error, 1)
	go func() { stopped <- rt2.StopOrphans(context.Background()) }() // ends once the pod is stopped
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	require.NoError(t, clk.WaitPending(ctx, 1), "the SIGKILL is armed")
	clk.Advance(3*time.Second - time.Millisecond)
	for _, p := range pids {
		assert.True(t, alive(p), "pid %d within the grace period", p)
	}
	assert.Empty(t, rt2.Pods())
	clk.Advance(time.Millisecond)
	require.NoError(t, <-stopped)
	assertGone(t, pids)
	assert.NoFileExists(t, recordPath(filepath.Join(root, "state"), pod.UID))

	again := pod.DeepCopy()
	again.Spec.Containers[0].Command = []string{"sleep", "300"} // dies on SIGTERM: no fake-clock grace to wait for
	require.NoError(t, rt2.Run(again), "its UID may run again, afresh")
	cs, _ := waitRunningCS(t, rt2, again)
	assert.Equal(t, int32(0), cs.RestartCount)
}

// waitRunningCS waits for rt's own status of pod's container to run.
func waitRunningCS(t *testing.T, rt *Runtime, pod *v1.Pod) (v1.ContainerStatus, bool) {
	t.Helper()
	var cs v1.ContainerStatus
	require.Eventually(t, func() bool {
		st, _ := rt.Status(pod.UID)
		for _, c := range st.ContainerStatuses {
			if c.Name == "c" && c.State.Running != nil {
				cs = c
				return true
			}
		}
		return false
	}, settle, tick)
	return cs, true
}

// A corrupt record is reported once, with its path and why, and the containers it described are
// stopped as orphans (their shims are claimed by no record); nothing panics.
func TestCorruptRecordIsReportedOnceAndItsContainersStopped(t *testing.T) {
	t.Parallel()
	root, work := t.TempDir(), t.TempDir()
	rt1, rec1, _ := newRuntimeAt(t, root, clock.Real(), time.Minute)
	pod := shPod("corrupt", v1.RestartPolicyAlways, `echo $$$$ > pid; exec sleep 300`)
	pod.Spec.Containers[0].WorkingDir = work
	require.NoError(t, rt1.Run(pod))
	waitRunning(t, rec1, pod.UID, "c")
	pid := readPIDs(t, filepath.Join(work, "pid"), 1)
	pid = append(pid, shimOf(t, pid[0]))
	rt1.Detach()
	path := recordPath(filepath.Join(root, "state"), pod.UID)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b[:len(b)/2], 0o600)) // a partial write

	rt2, _, logs := newRuntimeAt(t, root, clock.Real(), time.Minute)
	startRecovered(t, rt2)
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	require.NoError(t, rt2.StopOrphans(ctx))
	assertGone(t, pid)
	assert.NoFileExists(t, path)
	out := logs.String()
	assert.Equal(t, 1, strings.Count(out, path), out)
	assert.Contains(t, out, "pod record unusable")
	assert.Contains(t, out, "decode: unexpected end of JSON input")
	require.NoError(t, rt2.StopOrphans(ctx), "again: nothing left")
	assert.Equal(t, 1, strings.Count(logs.String(), path), "reported once")
}

// A root dir longer than a unix socket address allows still works: the sockets are reached
// through a descriptor of their directory.
func TestLongRootDir(t *testing.T) {
	t.Parallel()
	root, work := filepath.Join(t.TempDir(), strings.Repeat("r", 120)), t.TempDir()
	rt, rec, _ := newRuntimeAt(t, root, clock.Real(), time.Minute)
	pod := shPod("long", v1.RestartPolicyAlways, `echo $$$$ > pid; exec sleep 300`)
	pod.Spec.Containers[0].WorkingDir = work
	require.NoError(t, rt.Run(pod))
	cs := waitRunning(t, rec, pod.UID, "c")
	pids := readPIDs(t, filepath.Join(work, "pid"), 1)
	pids = append(pids, shimOf(t, pids[0]))
	rt.Detach()
	rt2, rec2, _ := newRuntimeAt(t, root, clock.Real(), time.Minute)
	startRecovered(t, rt2)
	require.NoError(t, rt2.Run(pod))
	assert.Equal(t, cs.ContainerID, waitRunning(t, rec2, pod.UID, "c").ContainerID)
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	require.NoError(t, rt2.Shutdown(ctx))
	assertGone(t, pids)
}

// A kill under way when node goes away keeps its deadline: the shim holds it (TERM carries the
// grace period), so a container that ignores SIGTERM dies when its grace period ends, not a
// re-attach window plus a whole new grace period later.
func TestAKillUnderWayOutlivesNode(t *testing.T) {
	t.Parallel()
	root, work := t.TempDir(), t.TempDir()
	rt, rec, _ := newRuntimeAt(t, root, clock.Real(), time.Hour)
	pod := shPod("stubborn", v1.RestartPolicyAlways, `trap '' TERM; echo $$$$ > pid; while :; do sleep 0.05; done`)
	grace := int64(3)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.Containers[0].WorkingDir = work
	require.NoError(t, rt.Run(pod))
	pid := readPIDs(t, filepath.Join(work, "pid"), 1)[0]
	shim := shimOf(t, pid)
	terminated := make(chan error, 1)
	go func() { // ends when the runtime detaches (the wait is cut short) or the pod is gone
		ctx, cancel := context.WithTimeout(context.Background(), settle)
		defer cancel()
		terminated <- rt.Terminate(ctx, pod.UID)
	}()
	require.Eventually(t, func() bool { return slices.Contains(rec.reasons("c"), "Killing: Stopping container c") }, settle, tick, "the kill began")
	began := time.Now()
	rt.Detach() // node goes away within the grace period
	assert.True(t, alive(pid), "SIGTERM is ignored")
	assertGone(t, []int{pid})
	assert.Less(t, time.Since(began), 20*time.Second, "the grace period's end, not the hour-long window's")
	// The shim keeps the exit for a next node until the window ends; none comes here.
	require.NoError(t, syscall.Kill(shim, syscall.SIGTERM))
	assertGone(t, []int{shim})
	<-terminated
}

// A shim StopOrphans cannot stop (here: a socket that answers but not as a shim) is its error,
// and the next call tries it again, with its pod's grace period, until the shim is gone: a cluster
// member keeps the pods an earlier node left held while any call fails, so the shim must not be
// forgotten after the first. Both kinds: a shim no record claims, and a recorded pod's.
func TestStopOrphansTriesAgainAShimItCouldNotStop(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	shims := filepath.Join(root, "shims")
	require.NoError(t, os.MkdirAll(shims, 0o700))
	// mute answers every connection at path with something that is not a shim's hello.
	mute := func(path string) (stop func()) {
		l, err := net.Listen("unix", path)
		require.NoError(t, err)
		served := make(chan struct{})
		go func() {
			defer close(served)
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				_, _ = conn.Write([]byte("not a shim\n"))
				_ = conn.Close()
			}
		}()
		return func() { _ = l.Close(); <-served } // the shim is gone, its socket file too
	}
	stopUnrecorded := mute(filepath.Join(shims, "mute.sock"))
	recorded := filepath.Join(shims, "recorded.sock")
	stopRecorded := mute(recorded)
	rec := podRecord{Version: recordVersion, UID: "left-uid", Namespace: "default", Name: "left", SpecHash: "h", Grace: time.Second,
		Containers: []containerRecord{{Name: "c", Current: &instanceRecord{ID: "proc://left"}, Socket: recorded}}}
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "state"), 0o700))
	require.NoError(t, writeFileAtomic(recordPath(filepath.Join(root, "state"), rec.UID), b))

	rt, _, logs := newRuntimeAt(t, root, clock.Real(), time.Minute)
	startRecovered(t, rt)
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	count := func(s string) int { return strings.Count(logs.String(), s) }

	err = rt.StopOrphans(ctx)
	assert.ErrorContains(t, err, "mute.sock")
	assert.ErrorContains(t, err, "recorded.sock")
	assert.FileExists(t, recordPath(filepath.Join(root, "state"), rec.UID), "the record of what was not stopped stays")
	err = rt.StopOrphans(ctx)
	assert.ErrorContains(t, err, "mute.sock", "tried again")
	assert.ErrorContains(t, err, "recorded.sock", "tried again")
	assert.Equal(t, 2, count("stopping a container no pod record describes"))
	assert.Equal(t, 1, count("stopping again a container an earlier stop could not reach"))
	assert.Contains(t, logs.String(), "pod=default/left")

	stopUnrecorded()
	stopRecorded()
	require.NoError(t, rt.StopOrphans(ctx))
	require.NoError(t, rt.StopOrphans(ctx), "nothing left to stop")
	assert.Equal(t, 3, count("stopping a container no pod record describes"), "a stopped shim is not tried again")
	assert.Equal(t, 2, count("stopping again a container an earlier stop could not reach"))
}
