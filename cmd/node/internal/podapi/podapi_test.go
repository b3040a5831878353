package podapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

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
