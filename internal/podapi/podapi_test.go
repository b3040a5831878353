package podapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/messages"
)

func i64(v int64) *int64 { return &v }

func TestGracePeriod(t *testing.T) {
	five := int64(5)
	zero := int64(0)
	assert.Equal(t, 30*time.Second, GracePeriod(&v1.Pod{}))
	assert.Equal(t, 5*time.Second, GracePeriod(&v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: &five}}))
	assert.Equal(t, time.Duration(0), GracePeriod(&v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: &zero}}), "the floor is the kill's business")
}

func TestContainerStatuses(t *testing.T) {
	st := &v1.PodStatus{
		InitContainerStatuses: []v1.ContainerStatus{{Name: "init", RestartCount: 1}, {Name: "side", RestartCount: 2}},
		ContainerStatuses:     []v1.ContainerStatus{{Name: "app", RestartCount: 3}},
	}
	var names []string
	for _, s := range AllContainerStatuses(st) {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"init", "side", "app"}, names)
	assert.Empty(t, AllContainerStatuses(&v1.PodStatus{}))

	for name, restarts := range map[string]int32{"init": 1, "side": 2, "app": 3} {
		s, ok := ContainerStatus(st, name)
		assert.True(t, ok, name)
		assert.Equal(t, restarts, s.RestartCount, name)
	}
	_, ok := ContainerStatus(st, "nope")
	assert.False(t, ok)
	_, ok = FindStatus(st.ContainerStatuses, "init")
	assert.False(t, ok, "FindStatus looks in the list it is given only")
}

func TestFieldPath(t *testing.T) {
	for _, tc := range []struct {
		container string
		init      bool
		path      string
	}{
		{"app", false, "spec.containers{app}"},
		{"side", true, "spec.initContainers{side}"},
	} {
		assert.Equal(t, tc.path, FieldPath(tc.container, tc.init))
		assert.Equal(t, tc.container, FieldPathContainer(tc.path))
	}
	for _, other := range []string{"", "spec", "spec.containers{app", "metadata.name"} {
		assert.Empty(t, FieldPathContainer(other), other)
	}
}

// §4.3: deletionGracePeriodSeconds wins, then the probe's terminationGracePeriodSeconds, then the
// pod's (30 s default), never below 2 s.
func TestKillGracePeriod(t *testing.T) {
	withProbe := func(p, l *int64) *v1.Container {
		return &v1.Container{StartupProbe: &v1.Probe{TerminationGracePeriodSeconds: p},
			LivenessProbe: &v1.Probe{TerminationGracePeriodSeconds: l}}
	}
	cases := []struct {
		name     string
		podTGPS  *int64
		deletion *int64
		c        *v1.Container
		pt       messages.ProbeType
		want     time.Duration
	}{
		{"default", nil, nil, withProbe(nil, nil), messages.Liveness, 30 * time.Second},
		{"pod", i64(60), nil, withProbe(nil, nil), messages.Liveness, 60 * time.Second},
		{"liveness probe", i64(60), nil, withProbe(i64(7), i64(9)), messages.Liveness, 9 * time.Second},
		{"startup probe", i64(60), nil, withProbe(i64(7), i64(9)), messages.Startup, 7 * time.Second},
		{"deletion wins", i64(60), i64(4), withProbe(i64(7), i64(9)), messages.Liveness, 4 * time.Second},
		{"floor", i64(0), nil, withProbe(nil, nil), messages.Liveness, 2 * time.Second},
		{"unknown container", i64(12), nil, nil, messages.Liveness, 12 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: tc.podTGPS}}
			pod.DeletionGracePeriodSeconds = tc.deletion
			assert.Equal(t, tc.want, KillGracePeriod(pod, tc.c, tc.pt))
		})
	}
}

func TestStatusByName(t *testing.T) {
	list := []v1.ContainerStatus{{Name: "a"}, {Name: "b"}}
	assert.Equal(t, 1, StatusIndex(list, "b"))
	assert.Equal(t, -1, StatusIndex(list, "c"))
	s, ok := StatusByName(list, "b")
	require.True(t, ok)
	s.Ready = true
	assert.True(t, list[1].Ready, "in place")
	_, ok = StatusByName(nil, "a")
	assert.False(t, ok)
}

func TestFieldRefValue(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", UID: "u1"}, Spec: v1.PodSpec{NodeName: "n1"},
		Status: v1.PodStatus{PodIP: "10.0.0.2", HostIP: "10.0.0.1"}}
	for path, want := range map[string]string{"metadata.name": "web", "metadata.namespace": "prod", "metadata.uid": "u1",
		"spec.nodeName": "n1", "status.podIP": "10.0.0.2", "status.hostIP": "10.0.0.1", "spec.serviceAccountName": ""} {
		assert.Equal(t, want, FieldRefValue(pod, path), path)
	}
}
