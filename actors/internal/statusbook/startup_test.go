package statusbook

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
