package podstatus

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/internal/podapi"
)

// Condition reasons kubelet uses (pkg/kubelet/status/generate.go).
const (
	UnknownContainerStatuses = "UnknownContainerStatuses"
	PodCompleted             = "PodCompleted"
	PodFailed                = "PodFailed"
	ContainersNotReady       = "ContainersNotReady"
	ReadinessGatesNotReady   = "ReadinessGatesNotReady"
	ContainersNotInitialized = "ContainersNotInitialized"
)

// ContainersReadyCondition is kubelet's GenerateContainersReadyCondition over sidecars and regular
// containers (LastTransitionTime is left zero; see SetCondition).
func ContainersReadyCondition(pod *v1.Pod, status *v1.PodStatus) v1.PodCondition {
	return containersReady(SpecOf(pod), status, true)
}

// ContainersReadyConditionOf is ContainersReadyCondition for a pod's Spec.
func ContainersReadyConditionOf(spec *Spec, status *v1.PodStatus) v1.PodCondition {
	return containersReady(spec, status, true)
}

// ProbeConditionStatuses returns the statuses of ContainersReadyCondition and ReadyCondition (by
// the same rules, without building their reasons and messages).
func ProbeConditionStatuses(spec *Spec, status *v1.PodStatus) (cr, ready v1.ConditionStatus) {
	c := containersReady(spec, status, false)
	return c.Status, readyFrom(spec, status, c, false).Status
}

// containersReady is ContainersReadyCondition; without describe, names are not collected and the
// message is left empty (the status and reason are the same).
func containersReady(spec *Spec, status *v1.PodStatus, describe bool) v1.PodCondition {
	if noStatuses(status) {
		return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: UnknownContainerStatuses}
	}
	var unknown, unready []string
	anyUnknown, anyUnready := false, false
	check := func(name string) {
		cs, ok := podapi.StatusByName(status.InitContainerStatuses, name) // kubelet looks in init statuses first
		if !ok {
			cs, ok = podapi.StatusByName(status.ContainerStatuses, name)
		}
		switch {
		case !ok:
			anyUnknown = true
			if describe {
				unknown = append(unknown, name)
			}
		case !cs.Ready:
			anyUnready = true
			if describe {
				unready = append(unready, name)
			}
		}
	}
	for i := range spec.InitContainers {
		if IsRestartable(&spec.InitContainers[i]) {
			check(spec.InitContainers[i].Name)
		}
	}
	for i := range spec.Containers {
		check(spec.Containers[i].Name)
	}
	if status.Phase == v1.PodSucceeded && !anyUnknown {
		return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: PodCompleted}
	}
	if status.Phase == v1.PodFailed {
		return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: PodFailed}
	}
	if !describe {
		if anyUnknown || anyUnready {
			return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ContainersNotReady}
		}
		return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue}
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(unready) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unready status: %s", unready))
	}
	if len(msgs) > 0 {
		return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ContainersNotReady,
			Message: strings.Join(msgs, ", ")}
	}
	return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue}
}

// ReadyCondition is kubelet's GeneratePodReadyCondition: ContainersReady, then readiness gates
// (looked up in status.Conditions).
func ReadyCondition(pod *v1.Pod, status *v1.PodStatus) v1.PodCondition {
	spec := SpecOf(pod)
	return readyFrom(spec, status, containersReady(spec, status, true), true)
}

// ReadyConditionFrom is ReadyCondition for a pod's Spec, given its ContainersReadyCondition cr.
func ReadyConditionFrom(spec *Spec, status *v1.PodStatus, cr v1.PodCondition) v1.PodCondition {
	return readyFrom(spec, status, cr, true)
}

func readyFrom(spec *Spec, status *v1.PodStatus, cr v1.PodCondition, describe bool) v1.PodCondition {
	if cr.Status != v1.ConditionTrue {
		return v1.PodCondition{Type: v1.PodReady, Status: cr.Status, Reason: cr.Reason, Message: cr.Message}
	}
	var msgs []string
	for _, g := range spec.ReadinessGates {
		c := FindCondition(status.Conditions, g.ConditionType)
		switch {
		case c == nil:
			if !describe {
				return v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReadinessGatesNotReady}
			}
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(g.ConditionType)))
		case c.Status != v1.ConditionTrue:
			if !describe {
				return v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReadinessGatesNotReady}
			}
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(g.ConditionType), c.Status))
		}
	}
	if len(msgs) > 0 {
		return v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReadinessGatesNotReady,
			Message: strings.Join(msgs, ", ")}
	}
	return v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
}

// InitializedCondition is kubelet's GeneratePodInitializedCondition: regular init containers need
// Ready, sidecars need Started; true once any regular container has started or terminated.
func InitializedCondition(pod *v1.Pod, status *v1.PodStatus) v1.PodCondition {
	if noStatuses(status) && len(pod.Spec.InitContainers) > 0 {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionFalse, Reason: UnknownContainerStatuses}
	}
	var unknown, incomplete []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs, ok := podapi.StatusByName(status.InitContainerStatuses, c.Name) // kubelet: init statuses, then app ones
		if !ok {
			cs, ok = podapi.StatusByName(status.ContainerStatuses, c.Name)
		}
		if !ok {
			unknown = append(unknown, c.Name)
			continue
		}
		if IsRestartable(c) {
			if cs.Started == nil || !*cs.Started {
				incomplete = append(incomplete, c.Name)
			}
			continue
		}
		if !cs.Ready {
			incomplete = append(incomplete, c.Name)
		}
	}
	if status.Phase == v1.PodSucceeded && len(unknown) == 0 {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue, Reason: PodCompleted}
	}
	if anyRegularStarted(pod, status) {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(incomplete) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with incomplete status: %s", incomplete))
	}
	if len(msgs) > 0 {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionFalse, Reason: ContainersNotInitialized,
			Message: strings.Join(msgs, ", ")}
	}
	return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
}

// noStatuses is kubelet's "containerStatuses == nil" on append(InitContainerStatuses,
// ContainerStatuses...): no init list and no app status.
func noStatuses(status *v1.PodStatus) bool {
	return status.InitContainerStatuses == nil && len(status.ContainerStatuses) == 0
}

func anyRegularStarted(pod *v1.Pod, status *v1.PodStatus) bool {
	for i := range pod.Spec.Containers {
		if cs, ok := podapi.StatusByName(status.ContainerStatuses, pod.Spec.Containers[i].Name); ok &&
			(cs.State.Running != nil || cs.State.Terminated != nil) {
			return true
		}
	}
	return false
}

// FindCondition returns the condition of type t in conds, or nil.
func FindCondition(conds []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// SetCondition replaces (or appends) the condition of c.Type in status. LastTransitionTime is kept
// from the existing condition when its Status is unchanged, and set to now otherwise.
func SetCondition(status *v1.PodStatus, c v1.PodCondition, now metav1.Time) {
	old := FindCondition(status.Conditions, c.Type)
	if old != nil && old.Status == c.Status {
		c.LastTransitionTime = old.LastTransitionTime
	} else {
		c.LastTransitionTime = now
	}
	if old != nil {
		c.LastProbeTime = old.LastProbeTime
		*old = c
		return
	}
	status.Conditions = append(status.Conditions, c)
}

// SetProbeConditions recomputes the conditions probing drives — ContainersReady and Ready — in
// status (the runtime owns Initialized and PodScheduled). As kubelet 1.37's statusManager, the
// status and both conditions observe the pod's generation (PodObservedGenerationTracking, GA).
func SetProbeConditions(pod *v1.Pod, status *v1.PodStatus, now metav1.Time) {
	status.ObservedGeneration = pod.Generation
	for _, c := range []v1.PodCondition{ContainersReadyCondition(pod, status), ReadyCondition(pod, status)} {
		c.ObservedGeneration = pod.Generation
		SetCondition(status, c, now)
	}
}
