package link

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// podSync holds every decision of the feed (pure, table-tested): which pods to read and report,
// which to report removed, whether a read pod changed, and whether a refresh must be scheduled.
// The feed only performs what it decides.
//
// Its memory is bounded by the pods: a mark per dirty UID and the last pod reported per UID, which
// a removal forgets.
type podSync struct {
	dirty map[types.UID]struct{}
	all   bool
	sent  map[types.UID]*v1.Pod // the last pod handed over, per UID
	// scheduled says a refresh is scheduled and has not run yet (Mark asks for one only then).
	scheduled bool
}

func newPodSync() *podSync {
	return &podSync{dirty: map[types.UID]struct{}{}, sent: map[types.UID]*v1.Pod{}}
}

// Mark says a pod may have changed (or appeared, or gone). It returns true when no refresh is
// scheduled: the caller schedules one (after fleetRefreshDelay) and calls Due when it fires.
func (s *podSync) Mark(uid types.UID) (schedule bool) {
	s.dirty[uid] = struct{}{}
	if s.scheduled {
		return false
	}
	s.scheduled = true
	return true
}

// Due says the scheduled refresh fired (the caller refreshes now): the next Mark schedules again.
func (s *podSync) Due() { s.scheduled = false }

// MarkAll says every pod may have changed (a full sync, a flush, a restarted feed); the caller
// refreshes at once.
func (s *podSync) MarkAll() { s.all = true }

// Failed says the pods of a plan could not be read: they stay dirty, and are read again at the next
// refresh (the next Mark's, or the next full sync).
func (s *podSync) Failed(read []*v1.Pod) {
	for _, p := range read {
		s.dirty[p.UID] = struct{}{}
	}
}

// Plan returns, given the pods the runtime runs, the ones to read (dirty and running; all running
// ones after MarkAll) and the ones to report removed (dirty and not running; after MarkAll every
// pod reported and not running), both sorted, and clears the marks.
func (s *podSync) Plan(running []types.UID) (read, removed []types.UID) {
	run := make(map[types.UID]struct{}, len(running))
	for _, uid := range running {
		run[uid] = struct{}{}
	}
	gone := func(uid types.UID) {
		if _, ok := run[uid]; !ok {
			removed = append(removed, uid)
			delete(s.sent, uid)
		}
	}
	if s.all {
		read = append(read, running...)
		for uid := range s.sent {
			gone(uid)
		}
	} else {
		for uid := range s.dirty {
			if _, ok := run[uid]; ok {
				read = append(read, uid)
			}
		}
	}
	for uid := range s.dirty {
		gone(uid) // a never-reported pod too: a late result of it must be dropped
	}
	s.dirty, s.all = map[types.UID]struct{}{}, false
	slices.Sort(read)
	slices.Sort(removed)
	return slices.Compact(read), slices.Compact(removed)
}

// PlanPods is Plan over the runtime's pods: it returns the pods to read, in UID order.
func (s *podSync) PlanPods(running []*v1.Pod) (read []*v1.Pod, removed []types.UID) {
	byUID := make(map[types.UID]*v1.Pod, len(running))
	uids := make([]types.UID, 0, len(running))
	for _, p := range running {
		byUID[p.UID] = p
		uids = append(uids, p.UID)
	}
	readUIDs, removed := s.Plan(uids)
	read = make([]*v1.Pod, len(readUIDs))
	for i, uid := range readUIDs {
		read[i] = byUID[uid]
	}
	return read, removed
}

// Changed records pod as reported and says whether it differs from the last one reported.
func (s *podSync) Changed(pod *v1.Pod) bool {
	prev, ok := s.sent[pod.UID]
	s.sent[pod.UID] = pod
	return !ok || !apiequality.Semantic.DeepEqual(prev.Status, pod.Status) || prev.Spec.NodeName != pod.Spec.NodeName
}
