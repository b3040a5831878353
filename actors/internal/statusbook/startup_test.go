package statusbook

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/actors/internal/podrecord"
	"github.com/probeactor/probeactor/messages"
)

func runningSince(id string, at time.Time) *v1.PodStatus {
	st := runningStatus(id)
	st.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(at)
	return st
}

// The first Started and the first Ready after each start are observed once, measured from the
// container's start; a restarted container is measured afresh; an adopted one is not measured.
func TestStartupObservations(t *testing.T) {
	pod := testPod("u1", v1.Container{Name: "app", ReadinessProbe: execProbe()})
	rec := podrecord.New(pod)
	b := New()
	b.SetRuntime(rec.UID, rec, runningSince("x://1", t0))
	b.Recompute("u1", t0)
	assert.Empty(t, b.TakeObservations(), "before AddPod the book does not know the probes: nothing is measured")
	b.AddPod(rec, podrecord.Probes(rec))
	b.Recompute("u1", t0.Add(200*time.Millisecond))
	// No startup probe: started as soon as it runs; a readiness worker without a result: not ready.
	assert.Equal(t, []Observation{{Namespace: "ns", Container: "app", After: 200 * time.Millisecond}}, b.TakeObservations())
	assert.Equal(t, []messages.ContainerStartup{{Container: "app", ContainerID: "x://1", Started: true, StartedAfter: 200 * time.Millisecond}},
		b.Startups("u1"))

	b.Apply([]messages.ResultChanged{readiness("x://1", messages.Success)})
	b.Recompute("u1", t0.Add(3*time.Second))
	assert.Equal(t, []Observation{{Namespace: "ns", Container: "app", Ready: true, After: 3 * time.Second}}, b.TakeObservations())
	// Not ready, then ready again: not a first readiness after this start.
	b.Apply([]messages.ResultChanged{readiness("x://1", messages.Failure)})
	b.Recompute("u1", t0.Add(5*time.Second))
	b.Apply([]messages.ResultChanged{readiness("x://1", messages.Success)})
	b.Recompute("u1", t0.Add(6*time.Second))
	assert.Empty(t, b.TakeObservations())

	// Restarted at 10 s: measured from that start.
	b.SetRuntime(rec.UID, rec, runningSince("x://2", t0.Add(10*time.Second)))
	b.Apply([]messages.ResultChanged{readiness("x://2", messages.Success)})
	b.Recompute("u1", t0.Add(11*time.Second))
	assert.Equal(t, []Observation{
		{Namespace: "ns", Container: "app", After: time.Second},
		{Namespace: "ns", Container: "app", Ready: true, After: time.Second},
	}, b.TakeObservations())
	assert.Len(t, b.Startups("u1"), 1, "the old instance is forgotten")

	// Adopted: running and reported ready when first seen.
	adopted := runningSince("x://3", t0)
	adopted.ContainerStatuses[0].Ready = true
	b.SetRuntime(rec.UID, rec, adopted)
	b.Recompute("u1", t0.Add(time.Hour))
	assert.Empty(t, b.TakeObservations(), "an hour is not its time to ready")
	assert.Equal(t, []messages.ContainerStartup{{Container: "app", ContainerID: "x://3", Adopted: true}}, b.Startups("u1"))
	assert.Nil(t, b.Startups("nope"))
}

// What the book keeps of a container (its start, a deferred kill) goes with the container's ID,
// not with its place in the status: the runtime may list the containers in another order, and a
// restarted container is a new instance, listed after the others in Startups however often
// containers restart.
func TestContainersAreFollowedByID(t *testing.T) {
	pod := testPod("u1", v1.Container{Name: "a", LivenessProbe: execProbe()}, v1.Container{Name: "b", LivenessProbe: execProbe()})
	rec := podrecord.New(pod)
	b := New()
	b.AddPod(rec, podrecord.Probes(rec))
	running := func(name, id string, at time.Time) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, ContainerID: id,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}
	}
	set := func(cs ...v1.ContainerStatus) {
		b.SetRuntime(rec.UID, rec, &v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: cs})
	}
	ready := func(name string) bool {
		st, ok := b.Status("u1")
		require.True(t, ok)
		for _, cs := range st.ContainerStatuses {
			if cs.Name == name {
				return cs.Ready
			}
		}
		t.Fatalf("no status of %s", name)
		return false
	}
	startup := func(name, id string, after time.Duration) messages.ContainerStartup {
		return messages.ContainerStartup{Container: name, ContainerID: messages.ContainerID(id),
			Started: true, StartedAfter: after, Ready: true, ReadyAfter: after}
	}

	set(running("a", "x://a1", t0), running("b", "x://b1", t0))
	b.Recompute("u1", t0.Add(time.Second)) // no startup or readiness probe: started and ready at once
	assert.Equal(t, []messages.ContainerStartup{startup("a", "x://a1", time.Second), startup("b", "x://b1", time.Second)},
		b.Startups("u1"))
	require.True(t, b.SetDeferred("u1", "x://b1", true))
	b.Recompute("u1", t0.Add(time.Second))
	require.False(t, ready("b"))

	// b listed first, a restarted at 10 s
	for round := range 3 {
		at := t0.Add(time.Duration(10*(round+1)) * time.Second)
		a := fmt.Sprintf("x://a%d", round+2)
		set(running("b", "x://b1", t0), running("a", a, at))
		b.Recompute("u1", at.Add(2*time.Second))
		assert.Equal(t, []messages.ContainerStartup{startup("b", "x://b1", time.Second), startup("a", a, 2*time.Second)},
			b.Startups("u1"), "round %d", round)
		assert.False(t, ready("b"), "round %d: b's kill is still deferred", round)
		assert.True(t, ready("a"), "round %d", round)
		set(running("a", a, at), running("b", "x://b1", t0)) // and back
		b.Recompute("u1", at.Add(3*time.Second))
		assert.Equal(t, []messages.ContainerStartup{startup("b", "x://b1", time.Second), startup("a", a, 2*time.Second)},
			b.Startups("u1"), "round %d", round)
		assert.False(t, ready("b"), "round %d", round)
	}
	for _, c := range b.pods["u1"].containers {
		assert.LessOrEqual(t, c.rank, uint16(2), "ranks are renumbered")
	}

	b.SetDeferred("u1", "x://b1", false)
	b.Recompute("u1", t0.Add(time.Minute))
	assert.True(t, ready("b"))
}

// A pod's entry is one allocation of the 352-byte size class (its runtime status inline), and a
// container's record 24 bytes. One field more, or one put where it does not pack, costs a size
// class per pod (32 bytes here) or 8 bytes per container: look at the padding first.
func TestAPodEntryFitsItsSizeClass(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(podEntry{}), uintptr(352), "podEntry")
	assert.LessOrEqual(t, unsafe.Sizeof(container{}), uintptr(24), "container")
}
