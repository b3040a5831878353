package kubectl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

func TestParseWaitFor(t *testing.T) {
	for in, want := range map[string]WaitFor{
		"delete":                         {Delete: true},
		"DELETE":                         {Delete: true},
		"create":                         {Create: true},
		"condition=Ready":                {Condition: "Ready", Status: "true"},
		"condition=Ready=false":          {Condition: "Ready", Status: "false"},
		"condition=ContainersReady=True": {Condition: "ContainersReady", Status: "True"},
	} {
		got, err := ParseWaitFor(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseWaitFor("ready")
	assert.EqualError(t, err, `unrecognized condition: "ready"`)
	for in, want := range map[string]string{
		"jsonpath=":                 "jsonpath expression cannot be empty",
		"jsonpath={.status.phase}=": "jsonpath wait has to have a value after equal sign",
		"jsonpath={.a}=b=c":         "jsonpath wait format must be",
		"jsonpath={.status.phase":   "unexpected path string",
	} {
		_, err := ParseWaitFor(in)
		assert.ErrorContains(t, err, want, in)
	}
}

func TestJSONPathMet(t *testing.T) {
	p := &v1.Pod{Spec: v1.PodSpec{Priority: ptr(int32(2000001000))}, Status: v1.PodStatus{Phase: v1.PodRunning,
		ContainerStatuses: []v1.ContainerStatus{{Name: "a", RestartCount: 2}, {Name: "b"}},
		Conditions:        []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}}
	for in, want := range map[string]bool{
		"jsonpath={.status.phase}=Running":                              true,
		"jsonpath=.status.phase='Running'":                              true, // relaxed path, quoted value
		"jsonpath={.status.phase}=Pending":                              false,
		"jsonpath={.spec.priority}=2000001000":                          true, // an integer, not 2.000001e+09
		`jsonpath={.status.conditions[?(@.type=="Ready")].status}=True`: true, // "==" is the filter's, not a split
		"jsonpath={.status.containerStatuses[0].restartCount}=2":        true,
		"jsonpath={.status.podIP}":                                      false, // no value: the field must exist
		"jsonpath={.status.phase}":                                      true,
	} {
		w, err := ParseWaitFor(in)
		require.NoError(t, err, in)
		got, err := JSONPathMet(p, w)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for in, want := range map[string]string{
		"jsonpath={.status.containerStatuses[*].name}=a": "matches more than one value",
		"jsonpath={.status.conditions[0]}=x":             "nested object or list which is not supported",
	} {
		w, err := ParseWaitFor(in)
		require.NoError(t, err, in)
		_, err = JSONPathMet(p, w)
		assert.ErrorContains(t, err, want, in)
	}
}

func ptr[T any](v T) *T { return &v }

func TestConditionMet(t *testing.T) {
	pod := func(generation, observed int64, status v1.ConditionStatus) *v1.Pod {
		p := &v1.Pod{Status: v1.PodStatus{Conditions: []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue},
			{Type: v1.PodReady, Status: status, ObservedGeneration: observed},
		}}}
		p.Generation = generation
		return p
	}
	ready := WaitFor{Condition: "ready", Status: "true"}
	assert.True(t, ConditionMet(pod(0, 0, v1.ConditionTrue), ready), "type and status in any case")
	assert.False(t, ConditionMet(pod(0, 0, v1.ConditionFalse), ready))
	assert.True(t, ConditionMet(pod(0, 0, v1.ConditionFalse), WaitFor{Condition: "Ready", Status: "False"}))
	assert.True(t, ConditionMet(pod(3, 3, v1.ConditionTrue), ready))
	assert.False(t, ConditionMet(pod(3, 2, v1.ConditionTrue), ready), "observed for an older generation: not yet")
	older := pod(3, 0, v1.ConditionTrue)
	older.Status.ObservedGeneration = 2
	assert.False(t, ConditionMet(older, ready), "the status' observed generation, when the condition has none")
	assert.False(t, ConditionMet(pod(0, 0, v1.ConditionTrue), WaitFor{Condition: "Initialized", Status: "true"}), "no such condition")
}
