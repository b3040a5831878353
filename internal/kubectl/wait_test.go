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
	_, err = ParseWaitFor("jsonpath={.status.phase}=Running")
	assert.ErrorContains(t, err, "no jsonpath")
}

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
