package podrecord

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func execProbe(period int32) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
		TimeoutSeconds: 1, PeriodSeconds: period, SuccessThreshold: 1, FailureThreshold: 1}
}

func testPod(uid string, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-" + uid, Namespace: "ns", UID: types.UID(uid)},
		Spec: v1.PodSpec{Containers: containers, RestartPolicy: v1.RestartPolicyAlways}}
}

// The tree's copy of a pod is deep (the caller may change its pod afterwards) and keeps what probing
// and the runtime's kill request need; Pod() gives the runtime exactly that.
func TestPodRecord(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	grace, deletion := int64(12), int64(3)
	now := metav1.NewTime(t0)
	pod := testPod("rec", v1.Container{Name: "app", LivenessProbe: execProbe(1),
		Env: []v1.EnvVar{{Name: "A", Value: "1"}}, Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}})
	pod.Labels = map[string]string{"not": "kept"}
	pod.Spec.InitContainers = []v1.Container{{Name: "side", RestartPolicy: &always, ReadinessProbe: execProbe(2)}}
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "gate"}}
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &now, &deletion
	pod.Status.Phase = v1.PodRunning

	rec := New(pod)
	want := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
			DeletionTimestamp: &now, DeletionGracePeriodSeconds: &deletion},
		Spec: v1.PodSpec{Containers: pod.Spec.Containers, InitContainers: pod.Spec.InitContainers,
			ReadinessGates: pod.Spec.ReadinessGates, RestartPolicy: v1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace},
	}
	assert.Equal(t, want, rec.Pod(), "identity and the spec fields probing reads; no labels, no status")

	pod.Spec.Containers[0].LivenessProbe.PeriodSeconds = 99
	pod.Spec.Containers[0].Env[0].Value = "changed"
	pod.Spec.InitContainers[0].Name = "changed"
	pod.Spec.ReadinessGates[0].ConditionType = "changed"
	*pod.Spec.TerminationGracePeriodSeconds = 99
	*pod.DeletionGracePeriodSeconds = 99
	pod.DeletionTimestamp.Time = t0.Add(1)
	got := rec.Pod()
	assert.Equal(t, int32(1), got.Spec.Containers[0].LivenessProbe.PeriodSeconds, "deep copy")
	assert.Equal(t, "1", got.Spec.Containers[0].Env[0].Value)
	assert.Equal(t, "side", got.Spec.InitContainers[0].Name)
	assert.Equal(t, v1.PodConditionType("gate"), got.Spec.ReadinessGates[0].ConditionType)
	assert.Equal(t, int64(12), *got.Spec.TerminationGracePeriodSeconds)
	assert.Equal(t, int64(3), *got.DeletionGracePeriodSeconds)
	assert.Equal(t, t0, got.DeletionTimestamp.Time)
}
