package podhost

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors"
	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/cmd/node/internal/proc"
	"github.com/probeactor/probeactor/internal/logtest"
)

func TestMain(m *testing.M) {
	proc.RunHelper(os.Args) // the test binary doubles as the container shim and the exec-probe guard
	goleak.VerifyTestMain(m)
}

// fixture is a started probe tree over a process runtime, and a Host over both.
type fixture struct {
	root string
	rt   *proc.Runtime
	tree *actors.Tree
}

func newFixture(t *testing.T) *fixture { return newFixtureReattach(t, 0) }

// newFixtureReattach is newFixture whose containers outlive their runtime by reattach.
func newFixtureReattach(t *testing.T, reattach time.Duration) *fixture {
	t.Helper()
	log := logtest.New(t)
	root := t.TempDir()
	rt, err := proc.New(proc.Options{RootDir: root, Shim: []string{os.Args[0], proc.ShimArg}, Logger: log, ReattachTimeout: reattach})
	require.NoError(t, err)
	sys := actor.NewActorSystem(logging.SystemOption(log), actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
	tree, err := actors.Start(sys.Root, actors.WithRuntime(rt), actors.WithLogger(log))
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, tree.Stop(context.Background()))
		assert.NoError(t, rt.Stop(context.Background()))
		sys.Shutdown()
	})
	return &fixture{root: root, rt: rt, tree: tree}
}

func (f *fixture) host(initial ...*v1.Pod) *Host {
	return New(Options{Tree: f.tree, Runtime: f.rt, NodeName: "node-a", Initial: initial})
}

func sleeper(name string) *v1.Pod {
	grace := int64(1)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []v1.Container{{
			Name: "app", Command: []string{"sleep", "300"},
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1},
		}}},
	}
}

func running(rt *proc.Runtime, uid types.UID) bool {
	st, ok := rt.Status(uid)
	return ok && len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].State.Running != nil
}

// TestStartIsAllOrNone: the initial pods start in order; when one cannot start, Start returns its
// error naming the pod, and the pods it had started are terminated again (nothing runs).
func TestStartIsAllOrNone(t *testing.T) {
	f := newFixture(t)
	a, b := sleeper("a"), sleeper("b")
	// b's log directory cannot be made: the runtime refuses it.
	require.NoError(t, os.MkdirAll(filepath.Join(f.root, "pods"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.root, "pods", proc.PodDirName(b)), nil, 0o600))
	h := f.host(a, b)
	err := h.Start(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "start pod default/b: ")
	st, ok := f.rt.Status(a.UID)
	require.True(t, ok, "a was started")
	for _, cs := range st.ContainerStatuses {
		assert.NotNil(t, cs.State.Terminated, "a's containers were terminated again")
	}
	assert.ErrorIs(t, f.rt.Run(sleeper("c")), proc.ErrClosed, "nothing starts after the host stopped")
}

// TestPodsComeAndGoAndStopTerminatesTheRest: StartPod runs a pod (the tree knows it; View serves
// it with its node name and merged status), StopPod removes it from the runtime and the tree, and
// Stop terminates every pod still running, within a deadline from their grace periods.
func TestPodsComeAndGoAndStopTerminatesTheRest(t *testing.T) {
	f := newFixture(t)
	h := f.host()
	require.NoError(t, h.Start(context.Background()))
	a, b := sleeper("a"), sleeper("b")
	require.NoError(t, h.StartPod(a))
	require.NoError(t, h.StartPod(b))
	require.Eventually(t, func() bool {
		pods, err := h.Pods(context.Background())
		if err != nil || len(pods) != 2 {
			return false
		}
		for _, p := range pods {
			if p.Spec.NodeName != "node-a" || len(p.Status.ContainerStatuses) != 1 || !p.Status.ContainerStatuses[0].Ready {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "both pods run and are ready, as /pods serves them")
	assert.Equal(t, 70*time.Second, h.StopTimeout(), "twice the longest grace period (kubelet's default 30 s at least), plus slack")

	h.StopPod(a)
	assert.Len(t, f.rt.Pods(), 1, "the runtime forgot a")
	// The tree keeps a's last status until housekeeping, as kubelet's status manager does.
	h.Housekeeping(time.Hour).Cleanup()
	_, ok, err := f.tree.PodStatus(context.Background(), a.UID)
	require.NoError(t, err)
	assert.False(t, ok, "the tree forgot a at the next cleanup")

	require.NoError(t, h.Stop(context.Background()))
	assert.False(t, running(f.rt, b.UID), "b was terminated")
	assert.ErrorIs(t, h.StartPod(sleeper("c")), proc.ErrClosed, "nothing starts after Stop")
}

// TestHousekeepingForgetsWhatTheRuntimeDoesNotRun: a cleanup hands the tree and every retainer
// the pods the runtime runs, and Stop ends the loop.
func TestHousekeepingForgetsWhatTheRuntimeDoesNotRun(t *testing.T) {
	f := newFixture(t)
	h := f.host()
	a := sleeper("a")
	require.NoError(t, h.StartPod(a))
	got := make(chan map[types.UID]struct{}, 1)
	k := h.Housekeeping(time.Hour, func(desired map[types.UID]struct{}) { got <- desired })
	require.NoError(t, k.Start(context.Background()))
	k.Cleanup()
	assert.Equal(t, map[types.UID]struct{}{a.UID: {}}, <-got)
	require.NoError(t, k.Stop(context.Background()))
	require.NoError(t, h.Stop(context.Background()))
}

// TestLeaveDetachesInsteadOfStopping: after Leave (node's SIGUSR2), Stop leaves the containers
// running for the next node (here none comes: they end with the re-attach window) and removes
// the pods' workers all the same.
func TestLeaveDetachesInsteadOfStopping(t *testing.T) {
	f := newFixtureReattach(t, 2*time.Second)
	h := f.host()
	pod := sleeper("a")
	dir := t.TempDir()
	pod.Spec.Containers[0].WorkingDir = dir
	pod.Spec.Containers[0].Command = []string{"sh", "-c", "echo $$$$ > pid; exec sleep 300"} // $$ is $ in a manifest
	require.NoError(t, h.StartPod(pod))
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "the container runs")
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	shim, err := strconv.Atoi(strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))[1]) // ppid
	require.NoError(t, err)
	h.Leave()
	require.NoError(t, h.Stop(context.Background()))
	assert.NoError(t, syscall.Kill(pid, 0), "the container runs on")
	assert.ErrorIs(t, h.StartPod(sleeper("b")), proc.ErrClosed, "nothing starts after Stop")
	require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil && syscall.Kill(shim, 0) != nil }, 20*time.Second, 20*time.Millisecond,
		"no node came back: the window ends the container, then its shim")
}

// Housekeeping's health check fails while no pass completes (a pass stuck on the host's lock or
// on a store), names how long it has been, and passes again once a pass completes.
func TestHousekeepingCheckFailsWhileNoPassCompletes(t *testing.T) {
	f := newFixture(t)
	h := f.host()
	var stuck atomic.Bool
	release := make(chan struct{})
	k := h.Housekeeping(5*time.Millisecond, func(map[types.UID]struct{}) {
		if stuck.Load() {
			<-release
		}
	})
	assert.EqualError(t, k.Check(context.Background()), "housekeeping is not running")
	require.NoError(t, k.Start(context.Background()))
	require.NoError(t, k.Check(context.Background()))

	stuck.Store(true)
	var err error
	require.Eventually(t, func() bool { err = k.Check(context.Background()); return err != nil }, 10*time.Second, time.Millisecond)
	assert.Regexp(t, `^no housekeeping pass completed for \S+ \(one is due every 5ms\)$`, err.Error())

	stuck.Store(false)
	close(release)
	require.Eventually(t, func() bool { return k.Check(context.Background()) == nil }, 10*time.Second, time.Millisecond)
	require.NoError(t, k.Stop(context.Background()))
	require.NoError(t, h.Stop(context.Background()))
}
