package kubeletstyle

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/probeactor/probeactor/messages"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// statusManager is the part of kubelet's status manager (and pod manager) that probing touches: the
// cached, probe-adjusted pod status per pod, written by the runtime's SetPodStatus (kubelet's
// generateAPIPodStatus, which calls probeManager.UpdatePodStatus) and by SetContainerReadiness /
// SetContainerStartup from the syncLoop.
type statusManager struct {
	mu       sync.RWMutex
	pods     map[types.UID]*v1.Pod
	statuses map[types.UID]v1.PodStatus // replaced, never mutated in place: readers may keep a value
}

func newStatusManager() *statusManager {
	return &statusManager{pods: make(map[types.UID]*v1.Pod), statuses: make(map[types.UID]v1.PodStatus)}
}

// GetPodStatus is what workers read at the top of doProbe.
func (s *statusManager) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, ok := s.statuses[uid]
	return st, ok
}

func (s *statusManager) getPod(uid types.UID) (*v1.Pod, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.pods[uid]
	return p, ok
}

func (s *statusManager) addPod(pod *v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[pod.UID] = pod
}

// setPodStatus stores status (already overlaid with probe results) and regenerates the conditions.
func (s *statusManager) setPodStatus(pod *v1.Pod, status v1.PodStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[pod.UID] = pod
	old := s.statuses[pod.UID]
	status.ObservedGeneration = pod.Generation // updateStatusInternal (PodObservedGenerationTracking, GA in 1.35)
	setReadyConditions(pod, &status, &old)
	s.statuses[pod.UID] = status
}

func (s *statusManager) removePod(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pods, uid)
	delete(s.statuses, uid)
}

// SetContainerReadiness is kubelet's statusManager.SetContainerReadiness (§5.2).
func (s *statusManager) SetContainerReadiness(uid types.UID, id messages.ContainerID, ready bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pod, ok := s.pods[uid]
	if !ok {
		return // "Pod has been deleted, no need to update readiness"
	}
	old, ok := s.statuses[uid]
	if !ok {
		return // "Container readiness changed before pod has synced"
	}
	st := *old.DeepCopy()
	cs := findByID(&st, id)
	if cs == nil || cs.Ready == ready {
		return // unknown container, or unchanged
	}
	cs.Ready = ready
	st.ObservedGeneration = pod.Generation
	setReadyConditions(pod, &st, &old)
	s.statuses[uid] = st
}

// SetContainerStartup is kubelet's statusManager.SetContainerStartup (§5.2); conditions untouched.
func (s *statusManager) SetContainerStartup(uid types.UID, id messages.ContainerID, started bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pods[uid]; !ok {
		return
	}
	old, ok := s.statuses[uid]
	if !ok {
		return
	}
	st := *old.DeepCopy()
	cs := findByID(&st, id)
	if cs == nil || (cs.Started != nil && *cs.Started == started) {
		return
	}
	cs.Started = &started
	s.statuses[uid] = st
}

func findByID(st *v1.PodStatus, id messages.ContainerID) *v1.ContainerStatus {
	for i := range st.ContainerStatuses {
		if st.ContainerStatuses[i].ContainerID == string(id) {
			return &st.ContainerStatuses[i]
		}
	}
	for i := range st.InitContainerStatuses {
		if st.InitContainerStatuses[i].ContainerID == string(id) {
			return &st.InitContainerStatuses[i]
		}
	}
	return nil
}

// setReadyConditions regenerates ContainersReady and Ready (§5.3), keeping lastTransitionTime when the
// condition status did not change relative to old.
func setReadyConditions(pod *v1.Pod, st, old *v1.PodStatus) {
	cr := containersReadyCondition(pod, st)
	ready := podReadyCondition(pod, st, cr)
	for _, c := range []v1.PodCondition{cr, ready} {
		c.ObservedGeneration = pod.Generation // CalculatePodConditionObservedGeneration, its gate locked on
		c.LastTransitionTime = metav1.NewTime(time.Now())
		for _, o := range old.Conditions {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		replaced := false
		for i := range st.Conditions {
			if st.Conditions[i].Type == c.Type {
				st.Conditions[i] = c
				replaced = true
			}
		}
		if !replaced {
			st.Conditions = append(st.Conditions, c)
		}
	}
}

func isRestartable(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

func containersReadyCondition(pod *v1.Pod, st *v1.PodStatus) v1.PodCondition {
	cond := v1.PodCondition{Type: v1.ContainersReady}
	if st.InitContainerStatuses == nil && len(st.ContainerStatuses) == 0 { // kubelet's append(init, app...) == nil
		cond.Status, cond.Reason = v1.ConditionFalse, "UnknownContainerStatuses"
		return cond
	}
	byName := make(map[string]v1.ContainerStatus)
	for _, cs := range append(append([]v1.ContainerStatus{}, st.InitContainerStatuses...), st.ContainerStatuses...) {
		byName[cs.Name] = cs
	}
	var unknown, unready []string
	check := func(name string) {
		cs, ok := byName[name]
		switch {
		case !ok:
			unknown = append(unknown, name)
		case !cs.Ready:
			unready = append(unready, name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if isRestartable(&pod.Spec.InitContainers[i]) {
			check(pod.Spec.InitContainers[i].Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		check(c.Name)
	}
	switch {
	case st.Phase == v1.PodSucceeded && len(unknown) == 0:
		cond.Status, cond.Reason = v1.ConditionFalse, "PodCompleted"
	case st.Phase == v1.PodFailed:
		cond.Status, cond.Reason = v1.ConditionFalse, "PodFailed"
	case len(unknown) > 0 || len(unready) > 0:
		var parts []string
		if len(unknown) > 0 {
			parts = append(parts, fmt.Sprintf("containers with unknown status: %v", unknown))
		}
		if len(unready) > 0 {
			parts = append(parts, fmt.Sprintf("containers with unready status: %v", unready))
		}
		cond.Status, cond.Reason, cond.Message = v1.ConditionFalse, "ContainersNotReady", strings.Join(parts, ", ")
	default:
		cond.Status = v1.ConditionTrue
	}
	return cond
}

func podReadyCondition(pod *v1.Pod, st *v1.PodStatus, cr v1.PodCondition) v1.PodCondition {
	cond := v1.PodCondition{Type: v1.PodReady}
	if cr.Status != v1.ConditionTrue {
		cond.Status, cond.Reason, cond.Message = cr.Status, cr.Reason, cr.Message
		return cond
	}
	var msgs []string
	for _, g := range pod.Spec.ReadinessGates {
		found := false
		for _, c := range st.Conditions {
			if c.Type == g.ConditionType {
				found = true
				if c.Status != v1.ConditionTrue {
					msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, c.Status))
				}
			}
		}
		if !found {
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		}
	}
	if len(msgs) > 0 {
		cond.Status, cond.Reason, cond.Message = v1.ConditionFalse, "ReadinessGatesNotReady", strings.Join(msgs, ", ")
		return cond
	}
	cond.Status = v1.ConditionTrue
	return cond
}
