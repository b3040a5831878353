package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// reported is a pod as node reports it: Running, its container running and started, ready as
// given, the version with edits edits.
func reported(name string, ready bool, edits string) v1.Pod {
	started := true
	cond := v1.ConditionFalse
	if ready {
		cond = v1.ConditionTrue
	}
	return v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{EditAnnotation: edits}},
		Status: v1.PodStatus{
			Phase:      v1.PodRunning,
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: cond}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: ready, Started: &started,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
		},
	}
}

func TestLost(t *testing.T) {
	want := map[string]Expected{
		"a": {Name: "a", Ready: true, Edits: 0},
		"b": {Name: "b", Ready: false, Edits: 1},
	}
	cases := []struct {
		name    string
		pods    []v1.Pod
		reasons []string
	}{
		{"all as the schedule implies", []v1.Pod{reported("a", true, "0"), reported("b", false, "1")}, nil},
		{"readiness differs", []v1.Pod{reported("a", false, "0"), reported("b", false, "1")}, []string{"a: container ready=false, want true"}},
		{"an old version", []v1.Pod{reported("a", true, "0"), reported("b", false, "0")}, []string{"b: version with 0 edits, want 1"}},
		{"missing and stale", []v1.Pod{reported("a", true, "0"), reported("old", true, "0")}, []string{
			"b: missing", "old: stale: removed by the schedule, still reported (phase Running)"}},
		{"waiting in back-off", []v1.Pod{reported("a", true, "0"), func() v1.Pod {
			p := reported("b", false, "1")
			p.Status.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			return p
		}()}, []string{"b: container not running (waiting: CrashLoopBackOff)"}},
		{"the Ready condition disagrees", []v1.Pod{func() v1.Pod {
			p := reported("a", true, "0")
			p.Status.Conditions[0].Status = v1.ConditionFalse
			return p
		}(), reported("b", false, "1")}, []string{"a: Ready condition False, want True"}},
		{"not started", []v1.Pod{reported("a", true, "0"), func() v1.Pod {
			p := reported("b", false, "1")
			p.Status.ContainerStatuses[0].Started = nil
			return p
		}()}, []string{"b: container not started"}},
		{"pending", []v1.Pod{reported("a", true, "0"), func() v1.Pod {
			p := reported("b", false, "1")
			p.Status.Phase = v1.PodPending
			return p
		}()}, []string{`b: phase "Pending", want Running`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, reasons := Lost(want, tc.pods)
			assert.Equal(t, tc.reasons, reasons)
			assert.Equal(t, len(tc.reasons), n)
		})
	}
}
