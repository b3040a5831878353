package actors

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/fakeruntime"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

func TestLivenessFailureKillsAndRestarts(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		pod := testPod("u1", v1.Container{Name: "app", LivenessProbe: execProbe(1, 2)})
		key := messages.ProbeKey{PodUID: pod.UID, Container: "app", Type: messages.Liveness}
		h.run(pod)
		id1, info := h.settled(pod, "app", messages.Liveness)
		assert.Equal(t, 1, info.ResultRun)
		assert.Equal(t, 1, h.prober.count("app"), "first probe at once")

		h.prober.result("app", probes.Failure)
		info = h.tick(key, time.Second)
		assert.Equal(t, 1, info.ResultRun)
		r, _ := h.result(id1, messages.Liveness)
		assert.Equal(t, messages.Success, r, "one failure is below the threshold")
		info = h.tick(key, time.Second)
		assert.True(t, info.OnHold, "held after a liveness failure")
		synctest.Wait()
		require.True(t, len(h.rt.Kills()) == 1)
		k := h.rt.Kills()[0]
		assert.Equal(t, "Container app failed liveness probe, will be restarted", k.Message)
		assert.Equal(t, id1, k.ContainerID)
		assert.Equal(t, 30*time.Second, k.GracePeriod)
		assert.True(t, k.Restart)
		kill := h.events.find(messages.ReasonKilling)
		require.Len(t, kill, 1)
		assert.Equal(t, "spec.containers{app}", kill[0].FieldPath)
		assert.Equal(t, v1.EventTypeNormal, kill[0].Type)
		unhealthy := h.events.find(messages.ReasonUnhealthy)
		require.Len(t, unhealthy, 2, "one event per failed attempt")
		assert.Equal(t, "Liveness probe failed: out", unhealthy[0].Message)
		assert.Equal(t, v1.EventTypeWarning, unhealthy[0].Type)

		// The restarted container gets the initial value and is probed again at the next tick.
		id2 := h.rt.ContainerID(pod.UID, "app")
		require.NotEqual(t, id1, id2)
		h.prober.result("app", probes.Success)
		h.settle(pod.UID, "app", key) // the new container's view reached the worker
		info = h.tick(key, time.Second)
		assert.Equal(t, id2, info.ContainerID)
		assert.False(t, info.OnHold)
		assert.Equal(t, 1, info.ResultRun, "run restarted from 0 after the hold")
		h.settledResult(id2, messages.Liveness, messages.Success)
		_, ok := h.result(id1, messages.Liveness)
		assert.False(t, ok, "the old container's result is removed")
		assert.Len(t, h.rt.Kills(), 1)
	})
}

func TestRestartPolicyNeverAndProbeGracePeriod(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		grace := int64(5)
		p := execProbe(1, 1)
		p.TerminationGracePeriodSeconds = &grace
		pod := testPod("u2", v1.Container{Name: "app", StartupProbe: p})
		pod.Spec.RestartPolicy = v1.RestartPolicyNever
		h.prober.result("app", probes.Failure)
		h.run(pod)
		// The first probe runs at once and fails (threshold 1).
		synctest.Wait()
		require.True(t, len(h.rt.Kills()) == 1)
		k := h.rt.Kills()[0]
		assert.Equal(t, "Container app failed startup probe", k.Message)
		assert.Equal(t, 5*time.Second, k.GracePeriod)
		assert.False(t, k.Restart)
	})
}

func TestReadinessDrivesPodConditions(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		pod := testPod("u3", v1.Container{Name: "web", ReadinessProbe: execProbe(10, 1)}, v1.Container{Name: "plain"})
		h.prober.result("web", probes.Failure)
		h.run(pod)
		id := h.rt.ContainerID(pod.UID, "web")
		h.settledResult(id, messages.Readiness, messages.Failure)
		h.sync()
		st := h.status(pod.UID)
		ready := condition(st, v1.PodReady)
		require.NotNil(t, ready)
		assert.Equal(t, v1.ConditionFalse, ready.Status)
		assert.Equal(t, "ContainersNotReady", ready.Reason)
		assert.Equal(t, "containers with unready status: [web]", ready.Message)
		since := ready.LastTransitionTime

		h.prober.result("web", probes.Success)
		h.clk.Advance(10 * time.Second)
		h.settledResult(id, messages.Readiness, messages.Success)
		synctest.Wait()
		st = h.status(pod.UID)
		require.NotNil(t, condition(st, v1.PodReady))
		require.Equal(t, v1.ConditionTrue, condition(st, v1.PodReady).Status)
		assert.True(t, st.ContainerStatuses[0].Ready)
		assert.True(t, *st.ContainerStatuses[0].Started)
		assert.Equal(t, v1.ConditionTrue, condition(st, v1.ContainersReady).Status)
		assert.True(t, condition(st, v1.PodReady).LastTransitionTime.After(since.Time))
	})
}

func condition(st v1.PodStatus, t v1.PodConditionType) *v1.PodCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// §7.12: startup success → readiness runs at once (manual trigger), without waiting for its period.
func TestStartupSuccessTriggersReadiness(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		pod := testPod("u4", v1.Container{Name: "app", StartupProbe: execProbe(1, 3), ReadinessProbe: execProbe(100, 1)})
		h.prober.result("app", probes.Failure)
		h.run(pod)
		id := h.rt.ContainerID(pod.UID, "app")
		h.settledResult(id, messages.Startup, messages.Unknown)
		h.settledResult(id, messages.Readiness, messages.Failure)
		h.idle(messages.ProbeKey{PodUID: pod.UID, Container: "app", Type: messages.Startup})
		h.idle(messages.ProbeKey{PodUID: pod.UID, Container: "app", Type: messages.Readiness})
		// statusManager knew the workers before they started, so the running container never looked
		// started: only the startup probe ran.
		assert.Equal(t, 1, h.prober.count("app/Startup"))
		assert.Equal(t, 0, h.prober.count("app/Readiness"))
		readinessBefore := h.prober.count("app/Readiness")
		h.prober.result("app", probes.Success)
		h.clk.Advance(time.Second)
		h.settledResult(id, messages.Startup, messages.Success)
		// No clock advance: readiness (period 100 s) is triggered by the status change.
		h.settledResult(id, messages.Readiness, messages.Success)
		assert.Greater(t, h.prober.count("app/Readiness"), readinessBefore)
		synctest.Wait()
		require.True(t, h.status(pod.UID).ContainerStatuses[0].Ready)
	})
}

func TestRemoveAndCleanupStopWorkers(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		a := testPod("a", v1.Container{Name: "c", LivenessProbe: execProbe(1, 1), ReadinessProbe: execProbe(1, 1)})
		b := testPod("b", v1.Container{Name: "c", ReadinessProbe: execProbe(1, 1)})
		for _, p := range []*v1.Pod{a, b} {
			h.run(p)
			require.NoError(t, h.tree.AddPod(p)) // idempotent
		}
		ida, idb := h.rt.ContainerID(a.UID, "c"), h.rt.ContainerID(b.UID, "c")
		h.settledResult(ida, messages.Liveness, messages.Success)
		h.settledResult(ida, messages.Readiness, messages.Success)
		h.settledResult(idb, messages.Readiness, messages.Success)
		assert.Equal(t, 3, h.workerCount())

		h.tree.StopLivenessAndStartup(a)
		synctest.Wait()
		require.True(t, h.workerCount() == 2)
		_, ok := h.result(ida, messages.Liveness)
		assert.False(t, ok, "an exiting worker removes its result")
		h.tree.RemovePod(a)
		h.tree.RemovePod(a)
		synctest.Wait()
		require.True(t, h.workerCount() == 1)
		h.tree.CleanupPods(map[types.UID]struct{}{})
		synctest.Wait()
		require.True(t, h.workerCount() == 0)
		_, ok = h.result(idb, messages.Readiness)
		assert.False(t, ok)
	})
}

func (h *harness) workerCount() int {
	res, err := h.sys.Root.RequestFuture(h.tree.env.manager, &countWorkers{}, 5*time.Second).Result()
	require.NoError(h.t, err)
	return res.(int)
}

func TestTerminalPhaseExitsWorkers(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		pod := testPod("u5", v1.Container{Name: "c", ReadinessProbe: execProbe(1, 1)})
		h.run(pod)
		h.settledResult(h.rt.ContainerID(pod.UID, "c"), messages.Readiness, messages.Success)
		h.rt.Update(pod.UID, func(st *v1.PodStatus) { st.Phase = v1.PodSucceeded })
		h.sync()
		// The view travelled statusManager → probeManager → worker ahead of this inspection (a manual
		// trigger may already have made the worker exit).
		h.settle(pod.UID, "c", messages.ProbeKey{PodUID: pod.UID, Container: "c", Type: messages.Readiness})
		h.clk.Advance(time.Second)
		synctest.Wait()
		require.True(t, h.workerCount() == 0)
	})
}

func TestProbeErrorDiscarded(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		pod := testPod("u6", v1.Container{Name: "c", LivenessProbe: execProbe(1, 1)})
		h.prober.set("c", func(context.Context) (probes.Outcome, error) {
			return probes.Outcome{Result: probes.Unknown}, assert.AnError
		})
		h.run(pod)
		id := h.rt.ContainerID(pod.UID, "c")
		h.settledResult(id, messages.Liveness, messages.Success)
		synctest.Wait()
		require.True(t, len(h.events.find(messages.ReasonUnhealthy)) == 1)
		assert.Equal(t, 3, h.prober.count("c"), "3 tries per attempt")
		assert.Contains(t, h.events.find(messages.ReasonUnhealthy)[0].Message, "Liveness probe errored and resulted in unknown state: ")
		h.clk.Advance(time.Second)
		synctest.Wait()
		require.True(t, len(h.events.find(messages.ReasonUnhealthy)) == 2)
		r, _ := h.result(id, messages.Liveness)
		assert.Equal(t, messages.Success, r, "liveness never fails on errors")
		assert.Empty(t, h.rt.Kills())
	})
}

func TestStartRequiresRuntime(t *testing.T) {
	sys := newSystem(t)
	_, err := Start(sys.Root)
	assert.ErrorContains(t, err, "WithRuntime is required")
}

// Liveness must not probe a running container before its startup probe succeeded, even when the
// runtime reported the container running before AddPod.
func TestLivenessWaitsForStartupOnAddPod(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		pod := testPod("u7", v1.Container{Name: "app", StartupProbe: execProbe(1, 30), LivenessProbe: execProbe(1, 1)})
		h.prober.result("app", probes.Failure)
		h.run(pod)
		startup := messages.ProbeKey{PodUID: pod.UID, Container: "app", Type: messages.Startup}
		h.idle(startup)
		for i := 0; i < 5; i++ {
			h.clk.Advance(time.Second)
			want := i + 2
			synctest.Wait()
			require.True(t, h.prober.count("app/Startup") == want)
			h.idle(startup)
			h.idle(messages.ProbeKey{PodUID: pod.UID, Container: "app", Type: messages.Liveness})
		}
		assert.Zero(t, h.prober.count("app/Liveness"))
		assert.Equal(t, 6, h.prober.count("app/Startup"))
		assert.Empty(t, h.rt.Kills())
	})
}

// statusManager forgets a restarted container's old results (kubelet's worker removes the old ID
// from its cache): a container restarted many times costs one mirrored result per probe, not one
// per restart.
func TestRestartsDoNotAccumulateMirroredResults(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		pod := testPod("restarts", v1.Container{Name: "c", ReadinessProbe: execProbe(1, 1), StartupProbe: execProbe(1, 1)})
		h.run(pod)
		for i := 0; i < 5; i++ {
			id := h.rt.ContainerID(pod.UID, "c")
			h.settledResult(id, messages.Startup, messages.Success)
			h.settledResult(id, messages.Readiness, messages.Success)
			require.NoError(t, h.rt.KillContainer(context.Background(),
				messages.KillContainer{Pod: pod, Container: "c", ContainerID: id, Restart: true}))
			h.settle(pod.UID, "c", messages.ProbeKey{PodUID: pod.UID, Container: "c", Type: messages.Startup})
			h.clk.Advance(time.Second)
		}
		h.settledResult(h.rt.ContainerID(pod.UID, "c"), messages.Readiness, messages.Success)
		h.sync()
		res, err := h.sys.Root.RequestFuture(h.tree.env.status, &countResults{}, 5*time.Second).Result()
		require.NoError(t, err)
		assert.LessOrEqual(t, res.(int), 2, "at most the current container's startup and readiness results")
		assert.True(t, h.status(pod.UID).ContainerStatuses[0].Ready)
	})
}

// §7.12: after the startup probe succeeds, liveness is not triggered: it probes at its own next tick.
func TestStartupSuccessLivenessWaitsForItsTick(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		pod := testPod("u8", v1.Container{Name: "app", StartupProbe: execProbe(1, 3), LivenessProbe: execProbe(10, 1)})
		startup := messages.ProbeKey{PodUID: pod.UID, Container: "app", Type: messages.Startup}
		liveness := messages.ProbeKey{PodUID: pod.UID, Container: "app", Type: messages.Liveness}
		h.prober.result("app", probes.Failure)
		h.run(pod)
		id := h.rt.ContainerID(pod.UID, "app")
		h.settledResult(id, messages.Startup, messages.Unknown)
		h.idle(startup)
		h.idle(liveness) // its first run (at t0) found the container not started

		h.prober.result("app", probes.Success)
		h.tick(startup, time.Second)
		h.settledResult(id, messages.Startup, messages.Success)
		synctest.Wait()
		require.True(t, *h.status(pod.UID).ContainerStatuses[0].Started)
		h.sync()
		h.idle(liveness)
		assert.Zero(t, h.prober.count("app/Liveness"), "not triggered by the startup success")

		h.tick(liveness, 8*time.Second) // t0+9s
		assert.Zero(t, h.prober.count("app/Liveness"))
		h.tick(liveness, time.Second) // t0+10s: liveness's next tick
		assert.Equal(t, 1, h.prober.count("app/Liveness"))
	})
}

// TestNewTreeRunsNothingUntilStart: the lifecycle form (NewTree, Start, Stop) spawns nothing before
// Start, stops a never-started tree without error, and makes a second Start a no-op.
func TestNewTreeRunsNothingUntilStart(t *testing.T) {
	sys := newSystem(t)
	rt := fakeruntime.New(nil)
	tree, err := NewTree(sys.Root, WithRuntime(rt), WithLogger(testLogger(t)))
	require.NoError(t, err)
	assert.Nil(t, tree.env, "nothing is spawned before Start")
	require.NoError(t, tree.Start(context.Background()))
	require.NotNil(t, tree.env)
	root := tree.env.root
	require.NoError(t, tree.Start(context.Background()), "a second Start returns the first's result")
	assert.Same(t, root, tree.env.root, "and spawns nothing more")
	require.NoError(t, tree.Stop(context.Background()))

	idle, err := NewTree(sys.Root, WithRuntime(rt))
	require.NoError(t, err)
	assert.NoError(t, idle.Stop(context.Background()), "a tree never started has nothing to stop")
	_, err = NewTree(sys.Root)
	assert.ErrorContains(t, err, "WithRuntime is required")
}
