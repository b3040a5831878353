package podstatus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/messages"
)

type fakeProbes struct {
	results map[messages.ContainerID]map[messages.ProbeType]messages.Result
	workers map[string]map[messages.ProbeType]bool
}

func (f fakeProbes) Result(id messages.ContainerID, t messages.ProbeType) (messages.Result, bool) {
	r, ok := f.results[id][t]
	return r, ok
}

func (f fakeProbes) HasWorker(c string, t messages.ProbeType) bool { return f.workers[c][t] }

func runningStatus(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, ContainerID: "test://" + name,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

// kubelet's TestUpdatePodStatus.
func TestUpdatePodStatus(t *testing.T) {
	type R = map[messages.ProbeType]messages.Result
	type W = map[messages.ProbeType]bool
	terminated := v1.ContainerStatus{Name: "terminated", ContainerID: "test://terminated",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}
	statuses := []v1.ContainerStatus{runningStatus("unprobed"), runningStatus("probed_ready"),
		runningStatus("probed_unready"), runningStatus("probed_failed"), runningStatus("started_no_result"),
		runningStatus("started_success"), terminated}
	p := fakeProbes{
		results: map[messages.ContainerID]map[messages.ProbeType]messages.Result{
			"test://probed_ready":    R{messages.Readiness: messages.Success},
			"test://probed_failed":   R{messages.Readiness: messages.Failure},
			"test://started_success": R{messages.Startup: messages.Success},
			"test://terminated":      R{messages.Readiness: messages.Success},
		},
		workers: map[string]map[messages.ProbeType]bool{
			"unprobed":          W{messages.Liveness: true},
			"probed_ready":      W{messages.Readiness: true},
			"probed_unready":    W{messages.Readiness: true},
			"probed_failed":     W{messages.Readiness: true},
			"started_no_result": W{messages.Startup: true},
			"started_success":   W{messages.Startup: true},
			"terminated":        W{messages.Readiness: true},
		},
	}
	status := v1.PodStatus{ContainerStatuses: statuses}
	trig := UpdatePodStatus(&v1.Pod{}, &status, p)
	want := map[string]bool{"unprobed": true, "probed_ready": true, "probed_unready": false, "probed_failed": false,
		"started_no_result": false, "started_success": true, "terminated": false}
	for _, cs := range status.ContainerStatuses {
		assert.Equal(t, want[cs.Name], cs.Ready, cs.Name)
		require.NotNil(t, cs.Started, cs.Name)
	}
	assert.Equal(t, []string{"probed_unready", "probed_failed"}, trig)
}

// kubelet's TestUpdatePodStatusWithInitContainers.
func TestUpdatePodStatusWithInitContainers(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	for _, sidecar := range []bool{false, true} {
		var rp *v1.ContainerRestartPolicy
		if sidecar {
			rp = &always
		}
		pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{
			{Name: "not_started", RestartPolicy: rp}, {Name: "started", RestartPolicy: rp}, {Name: "terminated", RestartPolicy: rp}}}}
		p := fakeProbes{
			results: map[messages.ContainerID]map[messages.ProbeType]messages.Result{
				"test://started": {messages.Startup: messages.Success}},
			workers: map[string]map[messages.ProbeType]bool{
				"not_started": {messages.Startup: true}, "started": {messages.Startup: true}},
		}
		status := v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{runningStatus("not_started"), runningStatus("started"),
			{Name: "terminated", ContainerID: "test://terminated", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}}}
		UpdatePodStatus(pod, &status, p)
		var started, ready []bool
		for _, cs := range status.InitContainerStatuses {
			started = append(started, *cs.Started)
			ready = append(ready, cs.Ready)
		}
		assert.Equal(t, []bool{false, true, false}, started, "sidecar=%v", sidecar)
		if sidecar {
			assert.Equal(t, []bool{false, true, false}, ready)
		} else {
			assert.Equal(t, []bool{false, false, true}, ready)
		}
	}
}

func TestContainersReadyAndReadyConditions(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init"}, {Name: "side", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "a"}, {Name: "b"}, {Name: "c"}},
	}}
	cases := []struct {
		name   string
		status v1.PodStatus
		want   v1.PodCondition
	}{
		{"nil statuses", v1.PodStatus{}, v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: UnknownContainerStatuses}},
		{"unknown and unready", v1.PodStatus{Phase: v1.PodRunning,
			InitContainerStatuses: []v1.ContainerStatus{{Name: "init"}},
			ContainerStatuses:     []v1.ContainerStatus{{Name: "a", Ready: true}, {Name: "c"}}},
			v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ContainersNotReady,
				Message: "containers with unknown status: [side b], containers with unready status: [c]"}},
		{"all ready", v1.PodStatus{Phase: v1.PodRunning,
			InitContainerStatuses: []v1.ContainerStatus{{Name: "init"}, {Name: "side", Ready: true}},
			ContainerStatuses:     []v1.ContainerStatus{{Name: "a", Ready: true}, {Name: "b", Ready: true}, {Name: "c", Ready: true}}},
			v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue}},
		{"succeeded", v1.PodStatus{Phase: v1.PodSucceeded,
			InitContainerStatuses: []v1.ContainerStatus{{Name: "side"}},
			ContainerStatuses:     []v1.ContainerStatus{{Name: "a"}, {Name: "b"}, {Name: "c"}}},
			v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: PodCompleted}},
		{"failed", v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{{Name: "a"}}},
			v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: PodFailed}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ContainersReadyCondition(pod, &tc.status))
			r := ReadyCondition(pod, &tc.status)
			assert.Equal(t, v1.PodReady, r.Type)
			assert.Equal(t, tc.want.Status, r.Status)
			assert.Equal(t, tc.want.Reason, r.Reason)
			assert.Equal(t, tc.want.Message, r.Message)
			cr, ready := ProbeConditionStatuses(SpecOf(pod), &tc.status)
			assert.Equal(t, tc.want.Status, cr, "the statuses alone, by the same rules")
			assert.Equal(t, r.Status, ready)
		})
	}
}

func TestReadinessGates(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}},
		ReadinessGates: []v1.PodReadinessGate{{ConditionType: "x"}, {ConditionType: "y"}}}}
	status := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", Ready: true}},
		Conditions: []v1.PodCondition{{Type: "y", Status: v1.ConditionFalse}}}
	assert.Equal(t, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReadinessGatesNotReady,
		Message: `corresponding condition of pod readiness gate "x" does not exist., the status of pod readiness gate "y" is not "True", but False`},
		ReadyCondition(pod, &status))
	_, ready := ProbeConditionStatuses(SpecOf(pod), &status)
	assert.Equal(t, v1.ConditionFalse, ready)
	status.Conditions = []v1.PodCondition{{Type: "x", Status: v1.ConditionTrue}, {Type: "y", Status: v1.ConditionTrue}}
	assert.Equal(t, v1.ConditionTrue, ReadyCondition(pod, &status).Status)
	_, ready = ProbeConditionStatuses(SpecOf(pod), &status)
	assert.Equal(t, v1.ConditionTrue, ready)
}

func TestInitializedCondition(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	tr, fa := true, false
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init"}, {Name: "side", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "a"}}}}
	s := v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{{Name: "init"}, {Name: "side", Started: &fa}}}
	assert.Equal(t, v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionFalse, Reason: ContainersNotInitialized,
		Message: "containers with incomplete status: [init side]"}, InitializedCondition(pod, &s))
	s.InitContainerStatuses = []v1.ContainerStatus{{Name: "init", Ready: true}, {Name: "side", Started: &tr}}
	assert.Equal(t, v1.ConditionTrue, InitializedCondition(pod, &s).Status)
	s.InitContainerStatuses = []v1.ContainerStatus{{Name: "init"}}
	assert.Equal(t, "containers with unknown status: [side], containers with incomplete status: [init]",
		InitializedCondition(pod, &s).Message)
	s.ContainerStatuses = []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	assert.Equal(t, v1.ConditionTrue, InitializedCondition(pod, &s).Status, "a regular container started")
	assert.Equal(t, v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionFalse, Reason: UnknownContainerStatuses},
		InitializedCondition(pod, &v1.PodStatus{}))
}

func TestSetConditionTransitionTime(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t2 := metav1.NewTime(t1.Add(time.Minute))
	t3 := metav1.NewTime(t1.Add(2 * time.Minute))
	var s v1.PodStatus
	SetCondition(&s, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "A"}, t1)
	SetCondition(&s, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "B"}, t2)
	require.Len(t, s.Conditions, 1)
	assert.Equal(t, t1, s.Conditions[0].LastTransitionTime, "unchanged status keeps the time")
	assert.Equal(t, "B", s.Conditions[0].Reason)
	SetCondition(&s, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}, t3)
	assert.Equal(t, t3, s.Conditions[0].LastTransitionTime)
}

func TestSetContainerReadinessAndStartup(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}}
	s := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{runningStatus("a")}}
	assert.False(t, SetContainerReadiness(pod, &s, "test://unknown", true, now))
	assert.True(t, SetContainerReadiness(pod, &s, "test://a", true, now))
	assert.False(t, SetContainerReadiness(pod, &s, "test://a", true, now), "unchanged")
	assert.Equal(t, v1.ConditionTrue, FindCondition(s.Conditions, v1.PodReady).Status)
	assert.Equal(t, v1.ConditionTrue, FindCondition(s.Conditions, v1.ContainersReady).Status)
	assert.True(t, SetContainerReadiness(pod, &s, "test://a", false, now))
	assert.Equal(t, "containers with unready status: [a]", FindCondition(s.Conditions, v1.PodReady).Message)
	assert.True(t, SetContainerStartup(&s, "test://a", true))
	assert.False(t, SetContainerStartup(&s, "test://a", true))
	assert.True(t, *s.ContainerStatuses[0].Started)
}
