package statusbook

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/actors/internal/podrecord"
)

// A container whose liveness kill waits for the restart budget is not ready, and the pod's
// conditions follow; unmarked, or replaced by a new container, readiness decides again.
func TestDeferredKillIsNotReady(t *testing.T) {
	pod := testPod("u1", v1.Container{Name: "app", LivenessProbe: execProbe()}) // no readiness probe: ready once started
	rec := podrecord.New(pod)
	b := New()
	assert.False(t, b.SetDeferred("u1", "x://1", true), "an unknown pod is not marked")
	b.AddPod(rec, podrecord.Probes(rec))
	b.SetRuntime(rec.UID, rec, runningStatus("x://1"))
	b.Recompute("u1", t0)
	status := func() v1.PodStatus {
		st, ok := b.Status("u1")
		require.True(t, ok)
		return st
	}
	cond := func(st v1.PodStatus, ct v1.PodConditionType) v1.ConditionStatus {
		for _, c := range st.Conditions {
			if c.Type == ct {
				return c.Status
			}
		}
		return ""
	}
	require.True(t, status().ContainerStatuses[0].Ready)

	assert.True(t, b.SetDeferred("u1", "x://1", true))
	assert.True(t, b.SetDeferred("u1", "x://0", true), "the pod is known; a container it does not list is not marked")
	b.Recompute("u1", t0)
	st := status()
	assert.False(t, st.ContainerStatuses[0].Ready)
	assert.Equal(t, v1.ConditionFalse, cond(st, v1.ContainersReady))
	assert.Equal(t, v1.ConditionFalse, cond(st, v1.PodReady))

	b.SetDeferred("u1", "x://1", false)
	b.Recompute("u1", t0)
	assert.True(t, status().ContainerStatuses[0].Ready)

	b.SetDeferred("u1", "x://1", true)
	b.SetRuntime(rec.UID, rec, runningStatus("x://2")) // replaced: the mark goes with the old container
	b.Recompute("u1", t0)
	assert.True(t, status().ContainerStatuses[0].Ready)
	assert.False(t, slices.ContainsFunc(b.pods["u1"].containers, func(c container) bool { return c.deferred }),
		"no container is marked")
}
