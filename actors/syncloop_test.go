package actors

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

func i64(v int64) *int64 { return &v }

// A sidecar's liveness failure restarts it even with restartPolicy Never; its events name the init
// container.
func TestSidecarLivenessFailure(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		always := v1.ContainerRestartPolicyAlways
		pod := testPod("side", v1.Container{Name: "main"})
		pod.Spec.RestartPolicy = v1.RestartPolicyNever
		pod.Spec.InitContainers = []v1.Container{{Name: "proxy", RestartPolicy: &always, LivenessProbe: execProbe(1, 1)}}
		h.prober.result("proxy", probes.Failure)
		h.run(pod)
		synctest.Wait()
		require.True(t, len(h.rt.Kills()) == 1)
		k := h.rt.Kills()[0]
		assert.True(t, k.Restart)
		assert.Equal(t, "Container proxy failed liveness probe, will be restarted", k.Message)
		require.Len(t, h.events.find(messages.ReasonUnhealthy), 1)
		assert.Equal(t, "spec.initContainers{proxy}", h.events.find(messages.ReasonUnhealthy)[0].FieldPath)
		assert.Equal(t, "spec.initContainers{proxy}", h.events.find(messages.ReasonKilling)[0].FieldPath)
	})
}

// The syncLoop ignores updates for pods it does not know (kubelet's "ignore irrelevant update").
func TestSyncLoopIgnoresUnknownPods(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		h.sys.Root.Send(h.tree.env.cache, &protocol.SetResult{PodUID: "ghost", Container: "c",
			ContainerID: "fake://ghost/c/1", Type: messages.Liveness, Result: messages.Failure})
		h.settledResult("fake://ghost/c/1", messages.Liveness, messages.Failure)
		// The batch reached the syncLoop before this round trip.
		_, err := h.sys.Root.RequestFuture(h.tree.env.sync, &ping{}, 5*time.Second).Result()
		require.NoError(t, err)
		assert.Empty(t, h.rt.Kills())
		assert.Empty(t, h.events.find(messages.ReasonKilling))
	})
}

// The kill request and Killing event text for a liveness/startup failure (spec §6.2, §4.3).
func TestKillRequest(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	grace := int64(7)
	live := &v1.Probe{TerminationGracePeriodSeconds: &grace}
	never, onFailure := v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyOnFailure
	pod := func(policy v1.RestartPolicy) *v1.Pod {
		p := testPod("k", v1.Container{Name: "app", LivenessProbe: live, StartupProbe: &v1.Probe{}},
			// kubelet 1.37: a container's own restartPolicy decides a probe kill's restart (its
			// rules are not read: the container has not exited).
			v1.Container{Name: "stays-down", RestartPolicy: &never, LivenessProbe: &v1.Probe{},
				RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
					ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpNotIn}}}},
			v1.Container{Name: "comes-back", RestartPolicy: &onFailure, LivenessProbe: &v1.Probe{}})
		p.Spec.RestartPolicy = policy
		p.Spec.InitContainers = []v1.Container{{Name: "proxy", RestartPolicy: &always, LivenessProbe: &v1.Probe{}}}
		return p
	}
	for _, tc := range []struct {
		name      string
		policy    v1.RestartPolicy
		container string
		pt        messages.ProbeType
		msg       string
		restart   bool
		grace     time.Duration
		path      string
	}{
		{"liveness, Always", v1.RestartPolicyAlways, "app", messages.Liveness,
			"Container app failed liveness probe, will be restarted", true, 7 * time.Second, "spec.containers{app}"},
		{"startup, OnFailure", v1.RestartPolicyOnFailure, "app", messages.Startup,
			"Container app failed startup probe, will be restarted", true, 30 * time.Second, "spec.containers{app}"},
		{"liveness, Never", v1.RestartPolicyNever, "app", messages.Liveness,
			"Container app failed liveness probe", false, 7 * time.Second, "spec.containers{app}"},
		{"sidecar, Never", v1.RestartPolicyNever, "proxy", messages.Liveness,
			"Container proxy failed liveness probe, will be restarted", true, 30 * time.Second, "spec.initContainers{proxy}"},
		{"container Never under pod Always", v1.RestartPolicyAlways, "stays-down", messages.Liveness,
			"Container stays-down failed liveness probe", false, 30 * time.Second, "spec.containers{stays-down}"},
		{"container OnFailure under pod Never", v1.RestartPolicyNever, "comes-back", messages.Liveness,
			"Container comes-back failed liveness probe, will be restarted", true, 30 * time.Second, "spec.containers{comes-back}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(tc.policy)
			req, path := killRequest(p, messages.ResultChanged{PodUID: p.UID, Container: tc.container,
				ContainerID: "test://id", Type: tc.pt, Result: messages.Failure})
			assert.Equal(t, messages.KillContainer{Pod: p, Container: tc.container, ContainerID: "test://id", Probe: tc.pt,
				Message: tc.msg, GracePeriod: tc.grace, Restart: tc.restart}, req)
			assert.Equal(t, tc.path, path)
		})
	}
}

// A liveness and a startup Failure of the same container ID kill it once; the restarted container
// (new ID) is killed again on its own failure.
func TestKillOncePerContainerID(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		pod := testPod("once", v1.Container{Name: "c", LivenessProbe: execProbe(100, 1)})
		h.run(pod)
		fail := func(id messages.ContainerID, pt messages.ProbeType) {
			h.sys.Root.Send(h.tree.env.cache, &protocol.SetResult{PodUID: pod.UID, Container: "c", ContainerID: id,
				Type: pt, Result: messages.Failure})
		}
		// Let the worker publish its own first result and go idle (its next probe is 100 s away), so
		// that only the injected results below change the cache.
		id1, _ := h.settled(pod, "c", messages.Liveness)
		fail(id1, messages.Startup)
		fail(id1, messages.Liveness)
		h.settledResult(id1, messages.Liveness, messages.Failure)
		_, err := h.sys.Root.RequestFuture(h.tree.env.sync, &ping{}, 5*time.Second).Result()
		require.NoError(t, err)
		synctest.Wait()
		require.True(t, h.rt.ContainerID(pod.UID, "c") != id1)
		assert.Len(t, h.rt.Kills(), 1)

		id2 := h.rt.ContainerID(pod.UID, "c")
		fail(id2, messages.Startup)
		synctest.Wait()
		require.True(t, len(h.rt.Kills()) == 2)
		assert.Equal(t, id2, h.rt.Kills()[1].ContainerID)
		assert.Len(t, h.events.find(messages.ReasonKilling), 2)
	})
}

// The syncLoop forgets a pod on RemovePod and on a CleanupPods that leaves it out: a later Failure
// of its container is ignored, as one of a pod it never knew.
func TestSyncLoopForgetsRemovedPods(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		removed := testPod("removed", v1.Container{Name: "c", LivenessProbe: execProbe(100, 1)})
		cleaned := testPod("cleaned", v1.Container{Name: "c", LivenessProbe: execProbe(100, 1)})
		h.run(removed)
		h.run(cleaned)
		removedID, _ := h.settled(removed, "c", messages.Liveness)
		cleanedID, _ := h.settled(cleaned, "c", messages.Liveness)
		h.tree.RemovePod(removed)
		h.tree.CleanupPods(map[types.UID]struct{}{removed.UID: {}}) // only RemovePod forgets removed
		h.sync()
		for _, p := range []struct {
			pod *v1.Pod
			id  messages.ContainerID
		}{{removed, removedID}, {cleaned, cleanedID}} {
			h.sys.Root.Send(h.tree.env.cache, &protocol.SetResult{PodUID: p.pod.UID, Container: "c", ContainerID: p.id,
				Type: messages.Liveness, Result: messages.Failure})
			h.settledResult(p.id, messages.Liveness, messages.Failure)
		}
		// The batches reached the syncLoop before this round trip.
		_, err := h.sys.Root.RequestFuture(h.tree.env.sync, &ping{}, 5*time.Second).Result()
		require.NoError(t, err)
		synctest.Wait()
		assert.Empty(t, h.rt.Kills())
		assert.Empty(t, h.events.find(messages.ReasonKilling))
	})
}
