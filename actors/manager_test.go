package actors

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/fakeruntime"
	"github.com/probeactor/probeactor/actors/internal/podrecord"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

func (h *harness) keys(uid types.UID) []messages.ProbeKey {
	var out []messages.ProbeKey
	for _, c := range []string{"no_probe1", "no_probe2", "no_probe3", "readiness", "liveness", "startup", "restartable-init", "init", "main", "c"} {
		for _, pt := range messages.ProbeTypes {
			k := messages.ProbeKey{PodUID: uid, Container: c, Type: pt}
			if h.inspect(k).Exists {
				out = append(out, k)
			}
		}
	}
	return out
}

// kubelet's TestAddRemovePods.
func TestAddRemovePods(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		noProbe := testPod("no-probe-pod", v1.Container{Name: "no-probe1"}, v1.Container{Name: "no-probe2"})
		require.NoError(t, h.tree.AddPod(noProbe))
		h.sync()
		assert.Equal(t, 0, h.workerCount())

		probePod := testPod("probe-pod",
			v1.Container{Name: "no-probe1"},
			v1.Container{Name: "readiness", ReadinessProbe: execProbe(1, 3)},
			v1.Container{Name: "no-probe2"},
			v1.Container{Name: "liveness", LivenessProbe: execProbe(1, 3)},
			v1.Container{Name: "no-probe3"},
			v1.Container{Name: "startup", StartupProbe: execProbe(1, 3)})
		require.NoError(t, h.tree.AddPod(probePod))
		synctest.Wait()
		require.True(t, h.workerCount() == 3)
		assert.ElementsMatch(t, []messages.ProbeKey{
			{PodUID: "probe-pod", Container: "readiness", Type: messages.Readiness},
			{PodUID: "probe-pod", Container: "liveness", Type: messages.Liveness},
			{PodUID: "probe-pod", Container: "startup", Type: messages.Startup},
		}, h.keys("probe-pod"))

		h.tree.RemovePod(noProbe)
		h.sync()
		assert.Equal(t, 3, h.workerCount())
		h.tree.RemovePod(probePod)
		synctest.Wait()
		require.True(t, h.workerCount() == 0)
		h.tree.RemovePod(probePod)
		h.sync()
		assert.Equal(t, 0, h.workerCount())
	})
}

// kubelet's TestAddRemovePodsWithRestartableInitContainer. A regular init container with probes,
// which kubelet skips, is refused by AddPod as the API server would refuse it: nothing starts.
func TestAddRemovePodsWithRestartableInitContainer(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	for _, tc := range []struct {
		name   string
		policy *v1.ContainerRestartPolicy
		want   int
	}{{"regular init container", nil, 0}, {"sidecar", &always, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				h := newHarness(t)
				pod := testPod("p", v1.Container{Name: "main"})
				pod.Spec.InitContainers = []v1.Container{{Name: "init"}, {Name: "restartable-init", RestartPolicy: tc.policy,
					LivenessProbe: execProbe(1, 3), ReadinessProbe: execProbe(1, 3), StartupProbe: execProbe(1, 3)}}
				if err := h.tree.AddPod(pod); tc.policy == nil {
					require.ErrorContains(t, err, "spec.initContainers[1].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always")
				} else {
					require.NoError(t, err)
				}
				h.sync()
				synctest.Wait()
				require.True(t, h.workerCount() == tc.want)
				for _, k := range h.keys("p") {
					assert.Equal(t, "restartable-init", k.Container)
				}
				h.tree.RemovePod(pod)
				synctest.Wait()
				require.True(t, h.workerCount() == 0)
				h.tree.RemovePod(pod)
			})
		})
	}
}

// kubelet's TestCleanupPods and TestCleanupRepeated.
func TestCleanupPods(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		mk := func(uid string) *v1.Pod {
			return testPod(uid, v1.Container{Name: "readiness", ReadinessProbe: execProbe(1, 3)},
				v1.Container{Name: "liveness", LivenessProbe: execProbe(1, 3)},
				v1.Container{Name: "startup", StartupProbe: execProbe(1, 3)})
		}
		require.NoError(t, h.tree.AddPod(mk("keep")))
		require.NoError(t, h.tree.AddPod(mk("cleanup")))
		synctest.Wait()
		require.True(t, h.workerCount() == 6)
		h.tree.CleanupPods(map[types.UID]struct{}{"keep": {}})
		synctest.Wait()
		require.True(t, h.workerCount() == 3)
		assert.Len(t, h.keys("keep"), 3)
		assert.Empty(t, h.keys("cleanup"))

		for i := 0; i < 100; i++ {
			require.NoError(t, h.tree.AddPod(mk(fmt.Sprint(i))))
		}
		for i := 0; i < 10; i++ {
			h.tree.CleanupPods(map[types.UID]struct{}{})
		}
		synctest.Wait()
		require.True(t, h.workerCount() == 0)
	})
}

// Unlike kubelet 1.30–1.33, AddPod continues past existing workers (post-1.35
// TestAddPodContinuesAfterExistingWorker).
func TestAddPodContinuesAfterExistingWorker(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		pod := testPod("p", v1.Container{Name: "readiness", ReadinessProbe: execProbe(1, 3)},
			v1.Container{Name: "liveness", LivenessProbe: execProbe(1, 3)})
		require.NoError(t, h.tree.AddPod(pod))
		synctest.Wait()
		require.True(t, h.workerCount() == 2)
		// Stop only the second worker, then add the pod again.
		h.tree.StopLivenessAndStartup(pod)
		synctest.Wait()
		require.True(t, h.workerCount() == 1)
		require.NoError(t, h.tree.AddPod(pod))
		synctest.Wait()
		require.True(t, h.workerCount() == 2)
	})
}

// Kubelet-start jitter applies only to workers created within one period of the tree's start
// (§7.12); WithStartupJitterWindow widens that to the window.
func TestRestartJitter(t *testing.T) {
	for name, tc := range map[string]struct {
		window, createdAt, wait time.Duration // wait: before the first probe (0: at once)
	}{
		"kubelet: created at the start waits rand×period":   {createdAt: 0, wait: 5 * time.Second},
		"kubelet: created a period after the start":         {createdAt: 10 * time.Second},
		"window: created three periods in, inside it waits": {window: time.Minute, createdAt: 30 * time.Second, wait: 5 * time.Second},
		"window: created when it has passed":                {window: time.Minute, createdAt: time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				h := newHarness(t, WithRand(func() float64 { return 0.5 }), WithStartupJitterWindow(tc.window))
				h.clk.Advance(tc.createdAt)
				h.run(testPod("p", v1.Container{Name: "c", LivenessProbe: execProbe(10, 1)}))
				key := messages.ProbeKey{PodUID: "p", Container: "c", Type: messages.Liveness}
				h.idle(key)
				if tc.wait == 0 {
					assert.Equal(t, 1, h.prober.count("c"), "probes at once")
					return
				}
				assert.Equal(t, 0, h.prober.count("c"), "first probe waits rand×period")
				h.tick(key, tc.wait-time.Millisecond)
				assert.Equal(t, 0, h.prober.count("c"))
				h.tick(key, time.Millisecond)
				assert.Equal(t, 1, h.prober.count("c"))
			})
		})
	}
}

func TestStartupJitterWindowMustNotBeNegative(t *testing.T) {
	sys := newSystem(t)
	_, err := NewTree(sys.Root, WithRuntime(fakeruntime.New(nil)), WithStartupJitterWindow(-time.Second))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "actors.Start: WithStartupJitterWindow: the window must not be negative")
}

// Stopping the tree cancels in-flight attempts and waits for them: nothing is left behind
// (goleak checks the package at exit).
func TestStopCancelsInFlightAttempts(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		entered := make(chan struct{}, 10)
		h.prober.set("c", func(ctx context.Context) (probes.Outcome, error) {
			// As an HTTP probe does: a child context with the probe's timeout.
			child, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			entered <- struct{}{}
			<-child.Done()
			return probes.Outcome{Result: probes.Unknown}, child.Err()
		})
		pod := testPod("p", v1.Container{Name: "c", LivenessProbe: execProbe(1, 1), ReadinessProbe: execProbe(1, 1)})
		h.run(pod)
		<-entered
		<-entered
		require.NoError(t, h.tree.Stop(context.Background()))
		assert.Zero(t, h.tree.env.cfg.exec.Pending(), "every scheduler entry cancelled")
	})
}

// Which probes AddPod runs a worker for (kubelet's TestAddRemovePods and
// TestAddRemovePodsWithRestartableInitContainer, without an actor system).
func TestPodProbes(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	p := execProbe(1, 3)
	all := v1.Container{Name: "all", StartupProbe: p, ReadinessProbe: p, LivenessProbe: p}
	key := func(c string, pt messages.ProbeType) messages.ProbeKey {
		return messages.ProbeKey{PodUID: "uid", Container: c, Type: pt}
	}
	for _, tc := range []struct {
		name       string
		containers []v1.Container
		inits      []v1.Container
		want       []messages.ProbeKey
		sidecars   int
	}{
		{name: "no probes", containers: []v1.Container{{Name: "a"}, {Name: "b"}}},
		{name: "one of each among probe-less containers",
			containers: []v1.Container{{Name: "no_probe1"}, {Name: "readiness", ReadinessProbe: p}, {Name: "no_probe2"},
				{Name: "liveness", LivenessProbe: p}, {Name: "startup", StartupProbe: p}},
			want: []messages.ProbeKey{key("readiness", messages.Readiness), key("liveness", messages.Liveness),
				key("startup", messages.Startup)}},
		{name: "startup, readiness, liveness order", containers: []v1.Container{all},
			want: []messages.ProbeKey{key("all", messages.Startup), key("all", messages.Readiness), key("all", messages.Liveness)}},
		{name: "plain init container is not probed", containers: []v1.Container{{Name: "main"}},
			inits: []v1.Container{{Name: "init", LivenessProbe: p}}},
		{name: "sidecars after regular containers", containers: []v1.Container{{Name: "main", LivenessProbe: p}},
			inits: []v1.Container{{Name: "init"}, {Name: "side", RestartPolicy: &always, ReadinessProbe: p}},
			want:  []messages.ProbeKey{key("main", messages.Liveness), key("side", messages.Readiness)}, sidecars: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("uid", tc.containers...)
			pod.Spec.InitContainers = tc.inits
			var got []messages.ProbeKey
			sidecars := 0
			for _, pp := range podrecord.Probes(podrecord.New(pod)) {
				got = append(got, pp.Key)
				assert.Same(t, pp.Key.Type.Spec(pp.Container), pp.Spec)
				if pp.Sidecar {
					sidecars++
				}
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.sidecars, sidecars)
		})
	}
}

// kubelet's TestCleanUp: for each probe type, a worker that has published Success is stopped
// (RemovePod ten times: stopping is idempotent), exits, and its cached result is removed.
func TestCleanUp(t *testing.T) {
	for _, pt := range messages.ProbeTypes {
		t.Run(pt.String(), func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				h := newHarness(t)
				c := v1.Container{Name: "c"}
				switch pt {
				case messages.Liveness:
					c.LivenessProbe = execProbe(1, 1)
				case messages.Readiness:
					c.ReadinessProbe = execProbe(1, 1)
				case messages.Startup:
					c.StartupProbe = execProbe(1, 1)
				default:
				}
				pod := testPod("cleanup", c)
				h.run(pod)
				id := h.rt.ContainerID(pod.UID, "c")
				h.settledResult(id, pt, messages.Success)
				for i := 0; i < 10; i++ {
					h.tree.RemovePod(pod)
				}
				synctest.Wait()
				require.True(t, h.workerCount() == 0)
				_, ok := h.result(id, pt)
				assert.False(t, ok, "the exiting worker removed its result")
			})
		})
	}
}
