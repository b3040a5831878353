package proc

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/internal/podstatus"
	"github.com/probeactor/probeactor/internal/restartpolicy"
)

// PodIP is every pod's IP: containers are local processes on the host network.
const PodIP = "127.0.0.1"

// phase is kubelet 1.37's getPhase (with sidecars, and ContainerRestartRules and
// RestartAllContainersOnContainerExits on) for a pod that is not being deleted. started says which
// sidecars have passed their startup probe. A terminated container counts as restarting when its
// restart rules and policy, else the pod's, restart it (restartpolicy.ShouldRestart), when its
// (last) termination is kubelet's RestartingAllContainers stand-in, or while restartingAll (the
// pod restarts all its containers: kubelet would show them removed, not terminated). With no
// container restart policy and no rules this is the pod-level getPhase of kubelet ≤1.33.
func phase(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus, started map[string]bool, restartingAll bool) v1.PodPhase {
	spec := &pod.Spec
	restartable := func(c *v1.Container, t *v1.ContainerStateTerminated) bool {
		return restartingAll || t.Reason == ReasonRestartingAllContainers || restartpolicy.ShouldRestart(c, spec.RestartPolicy, t.ExitCode)
	}
	pendingInit, failedInitNotRestartable := 0, 0
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
			if t := s.State.Terminated; t.ExitCode != 0 && !restartable(c, t) {
				failedInitNotRestartable++
			}
		case s.State.Waiting != nil:
			if t := s.LastTerminationState.Terminated; t != nil {
				if t.ExitCode != 0 && !restartable(c, t) {
					failedInitNotRestartable++
				}
			} else {
				pendingInit++
			}
		default:
			pendingInit++
		}
	}
	unknown, running, waiting, stopped, stoppedNotRestartable, succeeded := 0, 0, 0, 0, 0, 0
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
	for i := range spec.Containers {
		c := &spec.Containers[i]
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
			if !restartable(c, s.State.Terminated) {
				stoppedNotRestartable++
			}
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.State.Waiting != nil:
			if t := s.LastTerminationState.Terminated; t != nil {
				stopped++
				if !restartable(c, t) {
					stoppedNotRestartable++
				}
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}
	if failedInitNotRestartable > 0 {
		return v1.PodFailed
	}
	switch {
	case pendingInit > 0 && !anyAppStarted, waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if stopped != stoppedNotRestartable {
			return v1.PodRunning // at least one is restarting
		}
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		return v1.PodFailed
	default:
		return v1.PodPending
	}
}

// conditions generates the runtime-owned pod conditions: PodReadyToStartContainers, PodScheduled and
// Initialized, plus initial ContainersReady and Ready from the Ready flags in st (the statusManager
// recomputes those two from probe results), and for a pod with a RestartAllContainers rule
// kubelet 1.37's AllContainersRestarting (True while restartingAll). Once initialized, Initialized
// stays True (kubelet 1.37 with RestartAllContainersOnContainerExits: an in-place restart does not
// uninitialize the pod). kubelet's generators come from internal/podstatus; the runtime only supplies what it knows before the prober's overlay: a
// regular init container is complete when it exited 0, a sidecar when its startup probe passed
// (started).
func conditions(pod *v1.Pod, st v1.PodStatus, started map[string]bool, since time.Time, restartingAll, initialized bool) []v1.PodCondition {
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
	init := podstatus.InitializedCondition(pod, &view)
	if initialized {
		init = v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	}
	conds := []v1.PodCondition{
		{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue},
		init,
		podstatus.ReadyCondition(pod, &st),
		podstatus.ContainersReadyCondition(pod, &st),
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	}
	if restartpolicy.CouldRestartAll(&pod.Spec) {
		conds = append(conds, allContainersRestartingCondition(st.Phase, restartingAll))
	}
	for i := range conds {
		conds[i].LastTransitionTime = t
		conds[i].ObservedGeneration = pod.Generation // kubelet 1.37 (PodObservedGenerationTracking, GA)
	}
	return conds
}

// Kubelet's AllContainersRestarting condition texts (pkg/kubelet/status/generate.go).
const (
	reasonRestartAllContainersStarted = "RestartAllContainersStarted"
	messageRestartAllContainers       = "container exited with restart policy rule"
)

// allContainersRestartingCondition is kubelet 1.37's GenerateAllContainersRestartingCondition: False
// (reason PodCompleted or PodFailed once the pod is terminal), True while the pod restarts all its
// containers in place.
func allContainersRestartingCondition(ph v1.PodPhase, restartingAll bool) v1.PodCondition {
	c := v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse}
	switch {
	case ph == v1.PodSucceeded:
		c.Reason = "PodCompleted"
	case ph == v1.PodFailed:
		c.Reason = "PodFailed"
	case restartingAll:
		c.Status, c.Reason, c.Message = v1.ConditionTrue, reasonRestartAllContainersStarted, messageRestartAllContainers
	default:
	}
	return c
}

func initContainerSpec(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// stampTransitions sets the lastTransitionTime of each of st's conditions, as kubelet's status
// manager keeps them: the one prev has for the same type and status, else now (a new condition,
// or one whose status changed).
func stampTransitions(st *v1.PodStatus, prev []v1.PodCondition, now time.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.LastTransitionTime = metav1.Time{Time: now}
		for _, old := range prev {
			if old.Type == c.Type && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
	}
}
