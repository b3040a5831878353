package proc

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodIP is every pod's IP: containers are local processes on the host network.
const PodIP = "127.0.0.1"

func statusByName(list []v1.ContainerStatus, name string) (v1.ContainerStatus, bool) {
	for _, s := range list {
		if s.Name == name {
			return s, true
		}
	}
	return v1.ContainerStatus{}, false
}

func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// phase is kubelet's getPhase (1.29+, with sidecars) for a pod that is not being deleted.
// started says which sidecars have passed their startup probe.
func phase(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus, started map[string]bool) v1.PodPhase {
	spec := &pod.Spec
	pendingInit, failedInit := 0, 0
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if isSidecar(c) {
			continue
		}
		s, ok := statusByName(initStatuses, c.Name)
		switch {
		case !ok:
			pendingInit++
		case s.State.Running != nil:
			pendingInit++
		case s.State.Terminated != nil:
			if s.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case s.State.Waiting != nil:
			if s.LastTerminationState.Terminated != nil {
				if s.LastTerminationState.Terminated.ExitCode != 0 {
					failedInit++
				}
			} else {
				pendingInit++
			}
		default:
			pendingInit++
		}
	}
	unknown, running, waiting, stopped, succeeded := 0, 0, 0, 0, 0
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if !isSidecar(c) {
			continue
		}
		s, ok := statusByName(initStatuses, c.Name)
		switch {
		case !ok:
			unknown++
		case s.State.Running != nil:
			if !started[c.Name] {
				pendingInit++
			}
			running++
		case s.State.Terminated != nil:
		case s.State.Waiting != nil:
			if s.LastTerminationState.Terminated == nil {
				pendingInit++
				waiting++
			}
		default:
			pendingInit++
			unknown++
		}
	}
	anyAppStarted := false
	for _, c := range spec.Containers {
		s, ok := statusByName(statuses, c.Name)
		if ok && (s.State.Running != nil || s.State.Terminated != nil || s.LastTerminationState.Terminated != nil) {
			anyAppStarted = true
		}
		switch {
		case !ok:
			unknown++
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.State.Waiting != nil:
			if s.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}
	if failedInit > 0 && spec.RestartPolicy == v1.RestartPolicyNever {
		return v1.PodFailed
	}
	switch {
	case pendingInit > 0 && !anyAppStarted, waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if spec.RestartPolicy == v1.RestartPolicyAlways {
			return v1.PodRunning
		}
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		if spec.RestartPolicy == v1.RestartPolicyNever {
			return v1.PodFailed
		}
		return v1.PodRunning
	default:
		return v1.PodPending
	}
}

// conditions generates the runtime-owned pod conditions: PodScheduled, PodReadyToStartContainers and
// Initialized (kubelet's GeneratePodInitializedCondition), plus initial ContainersReady and Ready
// from the Ready flags in st (the statusManager recomputes those two from probe results).
func conditions(pod *v1.Pod, st v1.PodStatus, started map[string]bool, since time.Time) []v1.PodCondition {
	t := metav1.Time{Time: since}
	conds := []v1.PodCondition{
		{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue, LastTransitionTime: t},
		initializedCondition(pod, st, started, t),
	}
	ready := containersReadyCondition(pod, st, t)
	podReady := ready
	podReady.Type = v1.PodReady
	conds = append(conds, podReady, ready, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: t})
	return conds
}

func initializedCondition(pod *v1.Pod, st v1.PodStatus, started map[string]bool, t metav1.Time) v1.PodCondition {
	cond := v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: t}
	for _, s := range st.ContainerStatuses {
		if s.State.Running != nil || s.State.Terminated != nil || s.LastTerminationState.Terminated != nil {
			return cond // once any app container started, the pod stays initialized
		}
	}
	var incomplete []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		s, ok := statusByName(st.InitContainerStatuses, c.Name)
		switch {
		case !ok:
			incomplete = append(incomplete, c.Name)
		case isSidecar(c):
			if s.State.Running == nil || !started[c.Name] {
				incomplete = append(incomplete, c.Name)
			}
		case s.State.Terminated == nil || s.State.Terminated.ExitCode != 0:
			incomplete = append(incomplete, c.Name)
		}
	}
	if len(incomplete) == 0 {
		return cond
	}
	cond.Status = v1.ConditionFalse
	cond.Reason = "ContainersNotInitialized"
	cond.Message = fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " "))
	return cond
}

// containersReadyCondition is kubelet's GenerateContainersReadyCondition.
func containersReadyCondition(pod *v1.Pod, st v1.PodStatus, t metav1.Time) v1.PodCondition {
	cond := v1.PodCondition{Type: v1.ContainersReady, LastTransitionTime: t}
	var unknown, unready []string
	check := func(name string, list []v1.ContainerStatus) {
		s, ok := statusByName(list, name)
		switch {
		case !ok:
			unknown = append(unknown, name)
		case !s.Ready:
			unready = append(unready, name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			check(pod.Spec.InitContainers[i].Name, st.InitContainerStatuses)
		}
	}
	for _, c := range pod.Spec.Containers {
		check(c.Name, st.ContainerStatuses)
	}
	switch {
	case st.Phase == v1.PodSucceeded && len(unknown) == 0:
		cond.Status, cond.Reason = v1.ConditionFalse, "PodCompleted"
	case st.Phase == v1.PodFailed:
		cond.Status, cond.Reason = v1.ConditionFalse, "PodFailed"
	case len(unknown) > 0 || len(unready) > 0:
		var parts []string
		if len(unknown) > 0 {
			parts = append(parts, fmt.Sprintf("containers with unknown status: [%s]", strings.Join(unknown, " ")))
		}
		if len(unready) > 0 {
			parts = append(parts, fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " ")))
		}
		cond.Status, cond.Reason, cond.Message = v1.ConditionFalse, "ContainersNotReady", strings.Join(parts, ", ")
	default:
		cond.Status = v1.ConditionTrue
	}
	return cond
}
