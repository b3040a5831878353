package proc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/messages"
)

func TestMain(m *testing.M) {
	RunHelper(os.Args) // the test binary doubles as the container shim and the exec-probe guard
	goleak.VerifyTestMain(m)
}

// recorder collects events and statuses.
type recorder struct {
	mu       sync.Mutex
	events   []messages.Event
	statuses map[types.UID]v1.PodStatus
}

func (r *recorder) Event(e messages.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) status(pod *v1.Pod, st v1.PodStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.statuses == nil {
		r.statuses = map[types.UID]v1.PodStatus{}
	}
	r.statuses[pod.UID] = st
}

func (r *recorder) reasons(container string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if podapi.FieldPathContainer(e.FieldPath) == container {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

func (r *recorder) container(uid types.UID, name string) (v1.ContainerStatus, v1.PodPhase) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.statuses[uid]
	cs, _ := podapi.ContainerStatus(&st, name)
	return cs, st.Phase
}

func newTestRuntime(t *testing.T, clk clock.Clock) (*Runtime, *recorder) {
	t.Helper()
	rt, rec, _ := newRuntimeAt(t, t.TempDir(), clk, 0)
	return rt, rec
}

func shPod(name string, policy v1.RestartPolicy, script string) *v1.Pod {
	grace := int64(1)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid")},
		Spec: v1.PodSpec{
			RestartPolicy:                 policy,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []v1.Container{{Name: "c", Command: []string{"sh", "-c", script}}},
		},
	}
	return pod
}

const tick = 10 * time.Millisecond

// settle bounds how long a test waits for real processes (each a race-instrumented re-exec of the
// test binary as the shim) to reach a state: a liveness bound, not a timing assertion — generous,
// because a loaded CI machine (load 50+) once needed more than 10 s for two starts.
const settle = 30 * time.Second

// alive reports whether pid is a live process; a zombie (dead, not yet reaped by whoever inherited
// it) is not.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// waitRunning waits until the pod's container runs and returns its status.
func waitRunning(t *testing.T, rec *recorder, uid types.UID, name string) v1.ContainerStatus {
	t.Helper()
	var cs v1.ContainerStatus
	require.Eventually(t, func() bool {
		cs, _ = rec.container(uid, name)
		return cs.State.Running != nil
	}, settle, tick)
	return cs
}

func TestContainerRunsToCompletionWithItsLog(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	pod := shPod("done", v1.RestartPolicyNever, `echo "hello $GREETING from $(pwd)"; echo oops >&2; exit 3`)
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "GREETING", Value: "world"}}
	dir := t.TempDir()
	pod.Spec.Containers[0].WorkingDir = dir
	require.NoError(t, rt.Run(pod))

	require.Eventually(t, func() bool {
		cs, _ := rec.container(pod.UID, "c")
		return cs.State.Terminated != nil
	}, settle, tick)
	cs, phase := rec.container(pod.UID, "c")
	assert.Equal(t, int32(3), cs.State.Terminated.ExitCode)
	assert.Equal(t, "Error", cs.State.Terminated.Reason)
	assert.True(t, strings.HasPrefix(cs.ContainerID, "proc://"), cs.ContainerID)
	assert.Equal(t, v1.PodFailed, phase)

	path, err := rt.LogPath(pod.UID, "c", false)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("pods", "default_done_done-uid", "c", "0.log"), strings.TrimPrefix(path, rt.opts.RootDir+"/"))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "hello world from "+dir+"\noops\n", string(b))
	assert.Contains(t, rec.reasons("c"), "Started: Container started")
}

func TestStartErrorIsReported(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	pod := shPod("missing", v1.RestartPolicyNever, "")
	pod.Spec.Containers[0].Command = []string{"/no/such/binary"}
	require.NoError(t, rt.Run(pod))
	require.Eventually(t, func() bool {
		cs, _ := rec.container(pod.UID, "c")
		return cs.State.Terminated != nil
	}, settle, tick)
	cs, phase := rec.container(pod.UID, "c")
	assert.Equal(t, "StartError", cs.State.Terminated.Reason)
	assert.Contains(t, cs.State.Terminated.Message, "/no/such/binary")
	assert.Equal(t, v1.PodFailed, phase)
}

func TestKillForLivenessRestartsWithANewID(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	pod := shPod("live", v1.RestartPolicyAlways, "exec sleep 300")
	require.NoError(t, rt.Run(pod))
	var first v1.ContainerStatus
	require.Eventually(t, func() bool {
		first, _ = rec.container(pod.UID, "c")
		return first.State.Running != nil
	}, settle, tick)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, rt.KillContainer(ctx, messages.KillContainer{
		Pod: pod, Container: "c", ContainerID: messages.ContainerID(first.ContainerID), Probe: messages.Liveness,
		Message: "Container c failed liveness probe, will be restarted", GracePeriod: time.Second, Restart: true,
	}))
	require.Eventually(t, func() bool {
		cs, _ := rec.container(pod.UID, "c")
		return cs.State.Running != nil && cs.RestartCount == 1
	}, settle, tick)
	cs, phase := rec.container(pod.UID, "c")
	assert.NotEqual(t, first.ContainerID, cs.ContainerID)
	require.NotNil(t, cs.LastTerminationState.Terminated)
	assert.Equal(t, int32(143), cs.LastTerminationState.Terminated.ExitCode, "SIGTERM")
	assert.Equal(t, first.ContainerID, cs.LastTerminationState.Terminated.ContainerID)
	assert.Equal(t, v1.PodRunning, phase)
	assert.NotContains(t, rec.reasons("c"), "Killing: Container c failed liveness probe, will be restarted", "the syncLoop records it")

	// A stale kill (old ID) is a no-op.
	require.NoError(t, rt.KillContainer(ctx, messages.KillContainer{Pod: pod, Container: "c", ContainerID: messages.ContainerID(first.ContainerID)}))
	cs2, _ := rec.container(pod.UID, "c")
	assert.Equal(t, cs.ContainerID, cs2.ContainerID)
}

func TestGracePeriodThenSIGKILLAndNothingForkedSurvives(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	rt, rec := newTestRuntime(t, clk)
	dir := t.TempDir()
	// Ignores SIGTERM, forks a child in its group and one that escapes into its own session.
	pod := shPod("stubborn", v1.RestartPolicyNever, `trap "" TERM; sleep 300 & echo $! >> pids; setsid sleep 301 & echo $! >> pids; echo $$$$ >> pids; wait`)
	pod.Spec.Containers[0].WorkingDir = dir
	require.NoError(t, rt.Run(pod))
	var pids []int
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "pids"))
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil && p > 0 {
				pids = append(pids, p)
			}
		}
		return len(pids) == 3
	}, settle, tick)
	cs := waitRunning(t, rec, pod.UID, "c")

	killed := make(chan error, 1)
	go func() {
		killed <- rt.KillContainer(context.Background(), messages.KillContainer{Pod: pod, Container: "c", ContainerID: messages.ContainerID(cs.ContainerID), GracePeriod: 5 * time.Second})
	}()
	// The SIGKILL timer is armed; SIGTERM was ignored, so everything still runs.
	waitCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, clk.WaitPending(waitCtx, 1))
	for _, p := range pids {
		assert.True(t, alive(p), "pid %d before the grace period ended", p)
	}
	clk.Advance(5 * time.Second)
	require.NoError(t, <-killed)
	for _, p := range pids {
		assert.False(t, alive(p), "pid %d survived", p)
	}
	require.Eventually(t, func() bool {
		cs, _ := rec.container(pod.UID, "c")
		return cs.State.Terminated != nil
	}, settle, tick)
	cs, _ = rec.container(pod.UID, "c")
	assert.Equal(t, int32(137), cs.State.Terminated.ExitCode)
}

func TestCrashLoopBackOffWithRealProcesses(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	rt, rec := newTestRuntime(t, clk)
	pod := shPod("crash", v1.RestartPolicyAlways, "echo run; exit 1")
	require.NoError(t, rt.Run(pod))
	// Started, exited, restarted at once, exited again: now in back-off.
	require.Eventually(t, func() bool {
		cs, _ := rec.container(pod.UID, "c")
		return cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	}, settle, tick)
	cs, phase := rec.container(pod.UID, "c")
	assert.Equal(t, int32(1), cs.RestartCount)
	assert.Equal(t, int32(1), cs.LastTerminationState.Terminated.ExitCode)
	assert.Contains(t, cs.State.Waiting.Message, "back-off 10s restarting failed container=c pod=crash_default(crash-uid)")
	assert.Equal(t, v1.PodRunning, phase)
	assert.Contains(t, rec.reasons("c"), "BackOff: Back-off restarting failed container c in pod crash_default(crash-uid)")

	clk.Advance(10 * time.Second)
	require.Eventually(t, func() bool {
		cs, _ := rec.container(pod.UID, "c")
		return cs.RestartCount == 2 && cs.State.Waiting != nil
	}, settle, tick)
	cs, _ = rec.container(pod.UID, "c")
	assert.Contains(t, cs.State.Waiting.Message, "back-off 20s")

	path, err := rt.LogPath(pod.UID, "c", false)
	require.NoError(t, err)
	assert.Equal(t, "2.log", filepath.Base(path), "one log per restart")
}

func TestInitContainersThenApp(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	dir := t.TempDir()
	pod := shPod("init", v1.RestartPolicyNever, "cat step1 step2")
	pod.Spec.Containers[0].WorkingDir = dir
	pod.Spec.InitContainers = []v1.Container{
		{Name: "i1", Command: []string{"sh", "-c", "echo one > step1"}, WorkingDir: dir},
		{Name: "i2", Command: []string{"sh", "-c", "test -f step1 && echo two > step2"}, WorkingDir: dir},
	}
	require.NoError(t, rt.Run(pod))
	require.Eventually(t, func() bool {
		_, phase := rec.container(pod.UID, "c")
		return phase == v1.PodSucceeded
	}, settle, tick)
	path, err := rt.LogPath(pod.UID, "c", false)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\n", string(b))
}

func TestRunInContainerUsesTheContainersEnvAndDir(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	dir := t.TempDir()
	pod := shPod("exec", v1.RestartPolicyAlways, "exec sleep 300")
	pod.Spec.Containers[0].WorkingDir = dir
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "FOO", Value: "bar"}}
	require.NoError(t, rt.Run(pod))
	cs := waitRunning(t, rec, pod.UID, "c")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, rt.RunInContainer(ctx, cs.ContainerID, []string{"sh", "-c", "echo $FOO; pwd"}, &out))
	assert.Equal(t, "bar\n"+dir+"\n", out.String())

	err := rt.RunInContainer(ctx, cs.ContainerID, []string{"sh", "-c", "exit 4"}, &out)
	var coded interface{ ExitCode() int }
	require.ErrorAs(t, err, &coded)
	assert.Equal(t, 4, coded.ExitCode())

	assert.Error(t, rt.RunInContainer(ctx, "proc://unknown", []string{"true"}, &out))
}

func TestShutdownKillsEverything(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	dir := t.TempDir()
	pod := shPod("shutdown", v1.RestartPolicyAlways, `sleep 300 & echo $! >> pids; echo $$$$ >> pids; wait`)
	pod.Spec.Containers[0].WorkingDir = dir
	always := v1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []v1.Container{{Name: "side", Command: []string{"sleep", "300"}, RestartPolicy: &always}}
	require.NoError(t, rt.Run(pod))
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "pids"))
		return len(strings.Fields(string(b))) == 2
	}, settle, tick)
	b, _ := os.ReadFile(filepath.Join(dir, "pids"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, rt.Shutdown(ctx))
	for _, f := range strings.Fields(string(b)) {
		p, _ := strconv.Atoi(f)
		assert.False(t, alive(p), "pid %d survived", p)
	}
	cs, _ := rec.container(pod.UID, "c")
	assert.NotNil(t, cs.State.Terminated, "no restart during shutdown")
	assert.Contains(t, rec.reasons("c"), "Killing: Stopping container c")
	assert.Contains(t, rec.reasons("side"), "Killing: Stopping container side")
	side, _ := rec.container(pod.UID, "side")
	assert.NotNil(t, side.State.Terminated)
	assert.ErrorIs(t, rt.Run(shPod("late", v1.RestartPolicyAlways, "true")), ErrClosed)
}

// TestRemoveForgetsThePodAndItsLogs: Remove kills the pod's processes, forgets it (the same UID may
// run again) and deletes its log directory; other pods are untouched.
func TestRemoveForgetsThePodAndItsLogs(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	dir := t.TempDir()
	gone := shPod("gone", v1.RestartPolicyAlways, `echo $$$$ > pid; exec sleep 300`)
	gone.Spec.Containers[0].WorkingDir = dir
	stays := shPod("stays", v1.RestartPolicyAlways, `exec sleep 300`)
	require.NoError(t, rt.Run(gone))
	require.NoError(t, rt.Run(stays))
	first := waitRunning(t, rec, gone.UID, "c")
	kept := waitRunning(t, rec, stays.UID, "c")
	var pid int
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	}, settle, tick)
	logDir := filepath.Join(rt.opts.RootDir, "pods", PodDirName(gone))
	require.DirExists(t, logDir)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	removed := make(chan error, 1)
	go func() { removed <- rt.Remove(ctx, gone.UID) }() // ends when the pod is removed (or at ctx's 10 s)
	// Watch as an API client would: once the pod is no longer listed, its logs are gone.
	for {
		if _, listed := rt.Status(gone.UID); !listed {
			assert.NoDirExists(t, logDir, "an unlisted pod has no logs left")
			break
		}
		runtime.Gosched()
	}
	require.NoError(t, <-removed)
	assert.False(t, alive(pid), "the container process is gone")
	assert.NoDirExists(t, logDir)
	_, listed := rt.Status(gone.UID)
	assert.False(t, listed, "the pod is forgotten")
	require.Len(t, rt.Pods(), 1)
	assert.Equal(t, "stays", rt.Pods()[0].Name)
	assert.ErrorIs(t, rt.Remove(ctx, gone.UID), ErrUnknownPod)
	cs, _ := rec.container(stays.UID, "c")
	assert.Equal(t, kept.ContainerID, cs.ContainerID, "the other pod was not touched")

	require.NoError(t, rt.Run(gone), "the same UID may run again")
	require.Eventually(t, func() bool {
		cs, _ := rec.container(gone.UID, "c")
		return cs.State.Running != nil && cs.ContainerID != first.ContainerID
	}, settle, tick)
}

// A sidecar with a startup probe has started only when the runtime is told its startup probe
// passed (node: from its subscription to the tree's startup results); the app waits for it. No
// polling: a stale or unknown report changes nothing.
func TestSidecarStartsOnStartupSucceeded(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	pod := shPod("sidecar-startup", v1.RestartPolicyAlways, "exec sleep 300")
	always := v1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []v1.Container{{Name: "side", Command: []string{"sleep", "300"}, RestartPolicy: &always,
		StartupProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}}}
	require.NoError(t, rt.Run(pod))
	side := waitRunning(t, rec, pod.UID, "side")
	rt.StartupSucceeded(pod.UID, "side", "proc://stale")         // not the running instance
	rt.StartupSucceeded("unknown-uid", "side", side.ContainerID) // not a pod it runs
	rt.StartupSucceeded(pod.UID, "side", "")                     // nothing
	// The pod goroutine handles messages in order: once a later kill's reply is back, the stale
	// reports above were handled, and the app still has not started.
	require.NoError(t, rt.KillContainer(context.Background(), messages.KillContainer{Pod: pod, Container: "c", ContainerID: "proc://none"}))
	app, _ := rec.container(pod.UID, "c")
	assert.Nil(t, app.State.Running, "the app waits for the sidecar's startup probe")

	rt.StartupSucceeded(pod.UID, "side", side.ContainerID)
	waitRunning(t, rec, pod.UID, "c")
}

// Every subscriber sees a pod's events in order — started, each status, removed — and each status
// before the tree's push does; a cancelled subscriber sees nothing more.
func TestSubscribersSeeEveryPodEventBeforeTheTree(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{RootDir: t.TempDir(), Shim: []string{os.Args[0], ShimArg}, Clock: clock.Real()})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
		require.NoError(t, rt.Stop(ctx))
	})
	var mu sync.Mutex
	var first, second []PodEvent
	var pushed []v1.PodStatus
	secondListens := true
	subscribe := func(into *[]PodEvent) func() {
		return rt.Subscribe(func(e PodEvent) { mu.Lock(); *into = append(*into, e); mu.Unlock() })
	}
	subscribe(&first)
	cancelSecond := subscribe(&second)
	rt.ReportStatus(func(_ *v1.Pod, st v1.PodStatus) {
		mu.Lock()
		defer mu.Unlock()
		// on the pod goroutine: no FailNow
		assert.Equal(t, PodStatusChanged, first[len(first)-1].Kind, "every subscriber first")
		assert.Equal(t, st, first[len(first)-1].Status, "every subscriber first")
		if secondListens {
			assert.Equal(t, st, second[len(second)-1].Status, "every subscriber first")
		}
		pushed = append(pushed, st)
	})

	pod := shPod("subscribe", v1.RestartPolicyNever, "true")
	require.NoError(t, rt.Run(pod))
	mu.Lock()
	require.Len(t, first, 1, "PodStarted before Run returns")
	assert.Equal(t, PodEvent{Kind: PodStarted, Pod: first[0].Pod}, first[0])
	assert.Equal(t, pod.UID, first[0].Pod.UID)
	mu.Unlock()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(pushed) > 0 && pushed[len(pushed)-1].Phase == v1.PodSucceeded
	}, settle, tick)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, rt.Remove(ctx, pod.UID))

	mu.Lock()
	require.GreaterOrEqual(t, len(first), 3)
	assert.Equal(t, first, second, "every subscriber sees the same events")
	assert.Equal(t, PodStarted, first[0].Kind)
	assert.Equal(t, PodRemoved, first[len(first)-1].Kind, "removed last, before Remove returns")
	assert.Equal(t, pod.UID, first[len(first)-1].Pod.UID)
	var statuses []v1.PodStatus
	for _, e := range first[1 : len(first)-1] {
		assert.Equal(t, PodStatusChanged, e.Kind)
		assert.Equal(t, pod.UID, e.Pod.UID)
		statuses = append(statuses, e.Status)
	}
	assert.Equal(t, pushed, statuses, "the subscribers see each status the tree does")
	seen := len(second)
	secondListens = false
	mu.Unlock()

	cancelSecond()
	cancelSecond() // again: nothing
	require.NoError(t, rt.Run(shPod("after-cancel", v1.RestartPolicyNever, "true")))
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first[len(first)-1].Kind == PodStatusChanged && first[len(first)-1].Status.Phase == v1.PodSucceeded
	}, settle, tick)
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, second, seen, "a cancelled subscriber hears nothing more")
}

// TestActiveDeadlineStopsThePod: a pod that outlives its activeDeadlineSeconds is Failed,
// DeadlineExceeded, with kubelet's event on the pod itself, and its container is stopped and not
// restarted (restartPolicy Always notwithstanding).
func TestActiveDeadlineStopsThePod(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	rt, rec := newTestRuntime(t, clk)
	pod := shPod("deadline", v1.RestartPolicyAlways, "exec sleep 300")
	deadline := int64(60)
	pod.Spec.ActiveDeadlineSeconds = &deadline
	require.NoError(t, rt.Run(pod))
	cs := waitRunning(t, rec, pod.UID, "c")
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	require.NoError(t, clk.WaitPending(ctx, 1)) // the deadline
	clk.Advance(time.Minute)
	require.Eventually(t, func() bool {
		clk.Advance(time.Second) // a timer armed for a time passed fires at the next Advance
		c, phase := rec.container(pod.UID, "c")
		return phase == v1.PodFailed && c.State.Terminated != nil
	}, settle, tick)
	rec.mu.Lock()
	st := rec.statuses[pod.UID]
	var podEvents []string
	for _, e := range rec.events {
		if e.FieldPath == "" {
			podEvents = append(podEvents, e.Reason+": "+e.Message)
		}
	}
	rec.mu.Unlock()
	assert.Equal(t, "DeadlineExceeded", st.Reason)
	assert.Equal(t, []string{"DeadlineExceeded: Pod was active on the node longer than the specified deadline"}, podEvents)
	assert.Contains(t, rec.reasons("c"), "Killing: Stopping container c")
	after, _ := rec.container(pod.UID, "c")
	assert.Equal(t, cs.ContainerID, after.ContainerID, "not restarted")
}
