package proc

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/messages"
)

func execHook(script string) *v1.LifecycleHandler {
	return &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", script}}}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func waitFile(t *testing.T, path, want string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(readFile(path), want) }, settle, tick, "%s never held %q: %q", path, want, readFile(path))
}

// kill starts a kill of the pod's container c with grace on a goroutine; the channel yields its error.
func kill(rt *Runtime, pod *v1.Pod, cs v1.ContainerStatus, grace time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- rt.KillContainer(context.Background(), messages.KillContainer{Pod: pod, Container: "c",
			ContainerID: messages.ContainerID(cs.ContainerID), GracePeriod: grace})
	}()
	return done
}

// TestPreStopRunsBeforeSIGTERM: a kill runs the preStop hook in the container first and sends
// SIGTERM once it ended; a failed hook is kubelet's FailedPreStopHook event (no detail), and
// SIGTERM follows all the same.
func TestPreStopRunsBeforeSIGTERM(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		hook, want string
		failed     bool
	}{
		{"echo prestop >> events", "prestop\nterm\n", false},
		{"echo prestop >> events; exit 3", "prestop\nterm\n", true},
	} {
		rt, rec := newTestRuntime(t, clock.Real())
		dir := t.TempDir()
		pod := shPod("prestop", v1.RestartPolicyNever, `trap 'echo term >> events; exit 0' TERM; while :; do sleep 0.05; done`)
		pod.Spec.Containers[0].WorkingDir = dir
		pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: execHook(tc.hook)}
		require.NoError(t, rt.Run(pod))
		cs := waitRunning(t, rec, pod.UID, "c")
		require.NoError(t, <-kill(rt, pod, cs, 10*time.Second))
		assert.Equal(t, tc.want, readFile(filepath.Join(dir, "events")), tc.hook)
		if tc.failed {
			assert.Contains(t, rec.reasons("c"), "FailedPreStopHook: PreStopHook failed")
		} else {
			assert.NotContains(t, rec.reasons("c"), "FailedPreStopHook: PreStopHook failed")
		}
	}
}

// TestPreStopTimeComesOutOfTheGracePeriod: SIGTERM follows the hook with the grace period less the
// whole seconds the hook took (a 3 s sleep hook, a 60 s grace period: SIGKILL 57 s after SIGTERM;
// the shim's own deadline, on real time, is as far away, so only node's SIGKILL ends it in time);
// a hook that outlasts the grace period is cut short there, SIGTERM then gets kubelet's 2 s floor,
// and the hook itself ends with the container.
func TestPreStopTimeComesOutOfTheGracePeriod(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	rt, rec := newTestRuntime(t, clk)
	dir := t.TempDir()
	pod := shPod("slow-prestop", v1.RestartPolicyNever, `trap 'echo term >> events' TERM; echo $$$$ > pid; while :; do sleep 0.05; done`)
	pod.Spec.Containers[0].WorkingDir = dir
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 3}}}
	require.NoError(t, rt.Run(pod))
	cs := waitRunning(t, rec, pod.UID, "c")
	waitFile(t, filepath.Join(dir, "pid"), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(filepath.Join(dir, "pid"))))
	require.NoError(t, err)

	killed := kill(rt, pod, cs, 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	require.NoError(t, clk.WaitPending(ctx, 2)) // the sleep hook and the grace period's end
	assert.Empty(t, readFile(filepath.Join(dir, "events")), "no SIGTERM while the hook runs")
	clk.Advance(3 * time.Second) // the hook ends: SIGTERM, SIGKILL armed for 60 s - 3 s
	waitFile(t, filepath.Join(dir, "events"), "term")
	require.NoError(t, clk.WaitPending(ctx, 1))
	clk.Advance(56 * time.Second)
	assert.True(t, alive(pid), "SIGKILL comes 57 s after SIGTERM, not 56")
	clk.Advance(time.Second)
	select {
	case err := <-killed:
		require.NoError(t, err)
	case <-time.After(settle):
		t.Fatal("no SIGKILL 57 s after SIGTERM")
	}
	assert.False(t, alive(pid))

	// A hook longer than the grace period.
	dir = t.TempDir()
	pod = shPod("stuck-prestop", v1.RestartPolicyNever, `trap 'echo term >> events; exit 0' TERM; while :; do sleep 0.05; done`)
	pod.Spec.Containers[0].WorkingDir = dir
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: execHook("echo $$ > hookpid; exec sleep 300")}
	require.NoError(t, rt.Run(pod))
	cs = waitRunning(t, rec, pod.UID, "c")
	killed = kill(rt, pod, cs, 5*time.Second)
	waitFile(t, filepath.Join(dir, "hookpid"), "\n")
	hookPID, err := strconv.Atoi(strings.TrimSpace(readFile(filepath.Join(dir, "hookpid"))))
	require.NoError(t, err)
	require.NoError(t, clk.WaitPending(ctx, 1)) // the grace period's end
	clk.Advance(5 * time.Second)
	require.NoError(t, <-killed)
	assert.Equal(t, "term\n", readFile(filepath.Join(dir, "events")))
	require.Eventually(t, func() bool { return !alive(hookPID) }, settle, tick, "the hook ends with its container")
}

// TestPostStartHoldsTheNextContainer: the next container starts only once the postStart hook of
// the one before it has ended (an httpGet hook here, answered after a while), as kubelet's SyncPod
// runs the hook before it starts the next.
func TestPostStartHoldsTheNextContainer(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	dir := t.TempDir()
	var hooked atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		assert.Equal(t, "/ready", r.URL.Path)
		assert.Equal(t, "kube-lifecycle/1.37", r.UserAgent())
		hooked.Store(true)
		assert.NoError(t, os.WriteFile(filepath.Join(dir, "hooked"), nil, 0o600)) // not require: the handler runs on the server's goroutine
	}))
	defer srv.Close()
	_, portStr, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	port, err := strconv.Atoi(portStr)
	require.NoError(t, err)

	pod := shPod("poststart", v1.RestartPolicyNever, "exec sleep 300")
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{
		Path: "/ready", Port: intstr.FromInt(port), Scheme: v1.URISchemeHTTP}}}
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "next", WorkingDir: dir,
		Command: []string{"sh", "-c", "if test -f hooked; then echo after > order; else echo before > order; fi; exec sleep 300"}})
	require.NoError(t, rt.Run(pod))
	waitRunning(t, rec, pod.UID, "next")
	waitFile(t, filepath.Join(dir, "order"), "\n")
	assert.Equal(t, "after\n", readFile(filepath.Join(dir, "order")))
	assert.True(t, hooked.Load())
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	require.NoError(t, rt.Shutdown(ctx))
}

// TestAFailedPostStartKillsTheContainer: kubelet's FailedPostStartHook event (no detail), then a
// kill with the message FailedPostStartHook, which runs the preStop hook as any kill does.
func TestAFailedPostStartKillsTheContainer(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	dir := t.TempDir()
	pod := shPod("bad-poststart", v1.RestartPolicyNever, `trap 'exit 0' TERM; while :; do sleep 0.05; done`)
	pod.Spec.Containers[0].WorkingDir = dir
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: execHook("echo secret; exit 7"), PreStop: execHook("echo prestop > prestop")}
	require.NoError(t, rt.Run(pod))
	require.Eventually(t, func() bool {
		cs, _ := rec.container(pod.UID, "c")
		return cs.State.Terminated != nil
	}, settle, tick)
	reasons := rec.reasons("c")
	assert.Contains(t, reasons, "FailedPostStartHook: PostStartHook failed")
	assert.Contains(t, reasons, "Killing: FailedPostStartHook")
	for _, r := range reasons {
		assert.NotContains(t, r, "secret", "the hook's output stays out of events")
	}
	assert.Equal(t, "prestop\n", readFile(filepath.Join(dir, "prestop")))
}
