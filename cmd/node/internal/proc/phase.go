package proc

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/internal/podstatus"
)

// PodIP is every pod's IP: containers are local processes on the host network.
const PodIP = "127.0.0.1"

// phase is kubelet's getPhase (1.29+, with sidecars) for a pod that is not being deleted.
// started says which sidecars have passed their startup probe.
func phase(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus, started map[string]bool) v1.PodPhase {
	spec := &pod.Spec
	pendingInit, failedInit := 0, 0
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if podstatus.IsRestartable(c) {
			continue
		}
		s, ok := podapi.FindStatus(initStatuses, c.Name)
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
		if !podstatus.IsRestartable(c) {
			continue
		}
		s, ok := podapi.FindStatus(initStatuses, c.Name)
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
		s, ok := podapi.FindStatus(statuses, c.Name)
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

// conditions generates the runtime-owned pod conditions: PodReadyToStartContainers, PodScheduled and
// Initialized, plus initial ContainersReady and Ready from the Ready flags in st (the statusManager
// recomputes those two from probe results). kubelet's generators come from internal/podstatus; the
// runtime only supplies what it knows before the prober's overlay: a regular init container is
// complete when it exited 0, a sidecar when its startup probe passed (started).
func conditions(pod *v1.Pod, st v1.PodStatus, started map[string]bool, since time.Time) []v1.PodCondition {
	t := metav1.Time{Time: since}
	view := st
	view.InitContainerStatuses = make([]v1.ContainerStatus, len(st.InitContainerStatuses))
	for i, cs := range st.InitContainerStatuses {
		if spec := initContainerSpec(pod, cs.Name); spec != nil && podstatus.IsRestartable(spec) {
			s := started[cs.Name]
			cs.Started = &s
		} else {
			cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		}
		view.InitContainerStatuses[i] = cs
	}
	conds := []v1.PodCondition{
		{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue},
		podstatus.InitializedCondition(pod, &view),
		podstatus.ReadyCondition(pod, &st),
		podstatus.ContainersReadyCondition(pod, &st),
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	}
	for i := range conds {
		conds[i].LastTransitionTime = t
	}
	return conds
}

func initContainerSpec(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}
