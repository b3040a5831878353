package podstatus

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/messages"
)

// Probes is what UpdatePodStatus asks about probing: cached results and which workers exist.
type Probes interface {
	// Result returns the cached result of a container's probe of type t.
	Result(id messages.ContainerID, t messages.ProbeType) (messages.Result, bool)
	// HasWorker reports whether a worker exists for the pod's container and probe type.
	HasWorker(container string, t messages.ProbeType) bool
}

// IsRestartable reports whether an init container is a sidecar (restartPolicy: Always).
func IsRestartable(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// isContainerStarted is kubelet's rule: not running → false; a cached startup result decides;
// a startup worker without a result → false; no startup probe → true.
func isContainerStarted(cs *v1.ContainerStatus, p Probes) bool {
	if cs.State.Running == nil {
		return false
	}
	if r, ok := p.Result(messages.ContainerID(cs.ContainerID), messages.Startup); ok {
		return r == messages.Success
	}
	return !p.HasWorker(cs.Name, messages.Startup)
}

// readiness is the Ready rule for a started regular container or sidecar; trigger is true when
// kubelet would manually trigger the readiness worker.
func readiness(cs *v1.ContainerStatus, p Probes) (ready, trigger bool) {
	if cs.State.Running == nil {
		return false, false
	}
	if r, ok := p.Result(messages.ContainerID(cs.ContainerID), messages.Readiness); ok && r == messages.Success {
		return true, false
	}
	w := p.HasWorker(cs.Name, messages.Readiness)
	return !w, w
}

// Flags are what kubelet's UpdatePodStatus sets on one container status: Started, and Ready (which
// keeps the status's own value where kubelet leaves it alone).
type Flags struct {
	Started bool
	Ready   bool
}

// Spec is the part of a pod's spec the status rules read (a pod's containers and sidecars by name,
// init containers' restart policies, readiness gates).
type Spec struct {
	Containers     []v1.Container
	InitContainers []v1.Container
	ReadinessGates []v1.PodReadinessGate
}

// SpecOf returns pod's Spec (sharing its slices).
func SpecOf(pod *v1.Pod) *Spec {
	return &Spec{Containers: pod.Spec.Containers, InitContainers: pod.Spec.InitContainers,
		ReadinessGates: pod.Spec.ReadinessGates}
}

// Overlay is kubelet's prober manager UpdatePodStatus (spec §5.1) without modifying status: it
// writes into flags (which must have room for every container status) the Started and Ready of
// status.ContainerStatuses[i] at flags[i] and of status.InitContainerStatuses[j] at
// flags[len(ContainerStatuses)+j], and returns the names of containers whose readiness worker kubelet
// would manually trigger (started, running, readiness not Success, worker exists).
func Overlay(spec *Spec, status *v1.PodStatus, p Probes, flags []Flags) (trigger []string) {
	for i := range status.ContainerStatuses {
		cs := &status.ContainerStatuses[i]
		f := Flags{Started: isContainerStarted(cs, p), Ready: cs.Ready}
		if f.Started {
			ready, t := readiness(cs, p)
			f.Ready = ready
			if t {
				trigger = append(trigger, cs.Name)
			}
		}
		flags[i] = f
	}
	n := len(status.ContainerStatuses)
	for i := range status.InitContainerStatuses {
		cs := &status.InitContainerStatuses[i]
		f := Flags{Started: isContainerStarted(cs, p), Ready: cs.Ready}
		flags[n+i] = f
		if i >= len(spec.InitContainers) || spec.InitContainers[i].Name != cs.Name {
			continue // kubelet: status/spec index mismatch, logged and skipped
		}
		if !IsRestartable(&spec.InitContainers[i]) {
			if cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
				flags[n+i].Ready = true
			}
			continue
		}
		if !f.Started {
			continue
		}
		ready, t := readiness(cs, p)
		flags[n+i].Ready = ready
		if t {
			trigger = append(trigger, cs.Name)
		}
	}
	return trigger
}

// Apply sets Started and Ready of every container status of status from flags (as Overlay wrote
// them). The Started pointers are fresh.
func Apply(status *v1.PodStatus, flags []Flags) {
	n := len(status.ContainerStatuses)
	for i := range status.ContainerStatuses {
		apply(&status.ContainerStatuses[i], flags[i])
	}
	for i := range status.InitContainerStatuses {
		apply(&status.InitContainerStatuses[i], flags[n+i])
	}
}

func apply(cs *v1.ContainerStatus, f Flags) {
	started := f.Started
	cs.Started = &started
	cs.Ready = f.Ready
}

// UpdatePodStatus is kubelet's prober manager UpdatePodStatus (spec §5.1): it sets Started and Ready
// of every container status in place (Overlay, then Apply) and returns the names of containers whose
// readiness worker kubelet would manually trigger.
func UpdatePodStatus(pod *v1.Pod, status *v1.PodStatus, p Probes) (trigger []string) {
	flags := make([]Flags, len(status.ContainerStatuses)+len(status.InitContainerStatuses))
	trigger = Overlay(SpecOf(pod), status, p, flags)
	Apply(status, flags)
	return trigger
}

func findByID(status *v1.PodStatus, id messages.ContainerID) *v1.ContainerStatus {
	for i := range status.ContainerStatuses {
		if status.ContainerStatuses[i].ContainerID == string(id) {
			return &status.ContainerStatuses[i]
		}
	}
	for i := range status.InitContainerStatuses {
		if status.InitContainerStatuses[i].ContainerID == string(id) {
			return &status.InitContainerStatuses[i]
		}
	}
	return nil
}

// SetContainerReadiness is statusManager.SetContainerReadiness (spec §5.2): finds the container by
// ID (containers, then init containers), sets Ready and recomputes the Ready and ContainersReady
// conditions. It reports false (and changes nothing) for an unknown container or an unchanged
// value.
func SetContainerReadiness(pod *v1.Pod, status *v1.PodStatus, id messages.ContainerID, ready bool, now metav1.Time) bool {
	cs := findByID(status, id)
	if cs == nil || cs.Ready == ready {
		return false
	}
	cs.Ready = ready
	SetProbeConditions(pod, status, now)
	return true
}

// SetContainerStartup is statusManager.SetContainerStartup (spec §5.2): sets Started; conditions are
// not touched.
func SetContainerStartup(status *v1.PodStatus, id messages.ContainerID, started bool) bool {
	cs := findByID(status, id)
	if cs == nil || (cs.Started != nil && *cs.Started == started) {
		return false
	}
	cs.Started = &started
	return true
}
