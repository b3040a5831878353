package link

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func uids(s ...string) []types.UID {
	var out []types.UID
	for _, u := range s {
		out = append(out, types.UID(u))
	}
	return out
}

func TestPodSyncPlansReadsAndRemovals(t *testing.T) {
	report := func(s *podSync, us ...string) {
		for _, u := range us {
			s.Changed(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(u)}})
		}
	}
	cases := []struct {
		name        string
		reported    []string // pods handed over before
		mark        []string
		all         bool
		running     []string
		wantRead    []types.UID
		wantRemoved []types.UID
	}{
		{name: "nothing marked: nothing to do", reported: []string{"a"}, running: []string{"a", "b"}},
		{name: "a dirty running pod is read", mark: []string{"b", "b"}, running: []string{"a", "b"}, wantRead: uids("b")},
		{name: "a dirty pod gone is removed", reported: []string{"a"}, mark: []string{"a"}, running: []string{"b"}, wantRemoved: uids("a")},
		{name: "a late result of a pod never reported is removed (drops the result)", mark: []string{"x"}, running: []string{"b"}, wantRemoved: uids("x")},
		{name: "all: every running pod read, every reported pod gone removed", reported: []string{"a", "c"}, mark: []string{"z"}, all: true,
			running: []string{"b", "a"}, wantRead: uids("a", "b"), wantRemoved: uids("c", "z")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newPodSync()
			report(s, tc.reported...)
			for _, u := range tc.mark {
				s.Mark(types.UID(u))
			}
			if tc.all {
				s.MarkAll()
			}
			read, removed := s.Plan(uids(tc.running...))
			assert.Equal(t, tc.wantRead, read)
			assert.Equal(t, tc.wantRemoved, removed)
			read, removed = s.Plan(uids(tc.running...))
			assert.Empty(t, read, "marks are cleared")
			assert.Empty(t, removed, "marks are cleared")
			for _, u := range tc.wantRemoved {
				assert.NotContains(t, s.sent, u, "a removed pod is forgotten: it is reported again if it comes back")
			}
		})
	}
}

func TestPodSyncChangedComparesStatusSemantically(t *testing.T) {
	s := newPodSync()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pod := func(ready v1.ConditionStatus, ts time.Time) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: v1.PodSpec{NodeName: "n1"},
			Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: ready, LastTransitionTime: metav1.NewTime(ts)}}}}
	}
	assert.True(t, s.Changed(pod(v1.ConditionFalse, at)), "the first report is a change")
	assert.False(t, s.Changed(pod(v1.ConditionFalse, at.In(time.Local))), "the same status (a time in another zone) is no change")
	assert.True(t, s.Changed(pod(v1.ConditionTrue, at)), "readiness changed")
	p := pod(v1.ConditionTrue, at)
	p.Spec.NodeName = "n2"
	assert.True(t, s.Changed(p), "the node name changed")
}

// TestPodSyncSchedulesOneRefreshAtATime: the first mark asks for a refresh, later marks ride on it
// until it fired; a failed read keeps its pods dirty without asking for another.
func TestPodSyncSchedulesOneRefreshAtATime(t *testing.T) {
	type step struct {
		op   string // "mark", "due", "all", "failed", "plan"
		uid  string
		want bool     // mark: a refresh must be scheduled
		read []string // plan: the pods read
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{name: "the first mark schedules, the next ones ride on it", steps: []step{
			{op: "mark", uid: "a", want: true}, {op: "mark", uid: "b"}, {op: "mark", uid: "a"},
			{op: "due"}, {op: "plan", read: []string{"a", "b"}},
			{op: "mark", uid: "a", want: true}}},
		{name: "a plan that ran before the refresh (a flush) does not schedule another", steps: []step{
			{op: "mark", uid: "a", want: true}, {op: "all"}, {op: "plan", read: []string{"a", "b"}},
			{op: "mark", uid: "b"}, {op: "due"}, {op: "plan", read: []string{"b"}}}},
		{name: "a failed read stays dirty for the next refresh", steps: []step{
			{op: "mark", uid: "a", want: true}, {op: "due"}, {op: "plan", read: []string{"a"}}, {op: "failed", uid: "a"},
			{op: "mark", uid: "b", want: true}, {op: "due"}, {op: "plan", read: []string{"a", "b"}}}},
	}
	running := []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{UID: "a"}}, {ObjectMeta: metav1.ObjectMeta{UID: "b"}}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newPodSync()
			for i, st := range tc.steps {
				switch st.op {
				case "mark":
					assert.Equal(t, st.want, s.Mark(types.UID(st.uid)), "step %d: mark %s", i, st.uid)
				case "due":
					s.Due()
				case "all":
					s.MarkAll()
				case "failed":
					s.Failed([]*v1.Pod{{ObjectMeta: metav1.ObjectMeta{UID: types.UID(st.uid)}}})
				case "plan":
					read, removed := s.PlanPods(running)
					var got []string
					for _, p := range read {
						got = append(got, string(p.UID))
					}
					assert.Equal(t, st.read, got, "step %d: read", i)
					assert.Empty(t, removed, "step %d: removed", i)
				default:
					t.Fatalf("step %d: unknown op %q", i, st.op)
				}
			}
		})
	}
}
