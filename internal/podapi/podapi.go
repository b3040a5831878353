package podapi

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/messages"
)

// Grace periods, as kubelet applies them.
const (
	// DefaultGracePeriod is the API's default terminationGracePeriodSeconds.
	DefaultGracePeriod = 30 * time.Second
	// MinimumGracePeriod is kubelet's floor for a kill's grace period (minimumGracePeriodInSeconds).
	MinimumGracePeriod = 2 * time.Second
)

// KillGracePeriod is kuberuntime's grace period for a kill after a liveness or startup failure (spec
// §4.3): the pod's deletionGracePeriodSeconds wins; else the probe's terminationGracePeriodSeconds
// (c's probe of type pt; readiness probes may not set one); else the pod's GracePeriod; never below
// MinimumGracePeriod.
func KillGracePeriod(pod *v1.Pod, c *v1.Container, pt messages.ProbeType) time.Duration {
	gp := GracePeriod(pod)
	if c != nil && pt != messages.Readiness {
		if p := pt.Spec(c); p != nil && p.TerminationGracePeriodSeconds != nil {
			gp = time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
		}
	}
	if pod.DeletionGracePeriodSeconds != nil {
		gp = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	return max(gp, MinimumGracePeriod)
}

// GracePeriod is the pod's terminationGracePeriodSeconds, or DefaultGracePeriod when unset.
func GracePeriod(pod *v1.Pod) time.Duration {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return DefaultGracePeriod
}

// AllContainerStatuses returns the init containers' statuses followed by the app containers'.
func AllContainerStatuses(st *v1.PodStatus) []v1.ContainerStatus {
	all := make([]v1.ContainerStatus, 0, len(st.InitContainerStatuses)+len(st.ContainerStatuses))
	all = append(all, st.InitContainerStatuses...)
	return append(all, st.ContainerStatuses...)
}

// StatusIndex returns the index of the status named name in list, or -1.
func StatusIndex(list []v1.ContainerStatus, name string) int {
	for i := range list {
		if list[i].Name == name {
			return i
		}
	}
	return -1
}

// StatusByName returns the status named name in list, in place.
func StatusByName(list []v1.ContainerStatus, name string) (*v1.ContainerStatus, bool) {
	if i := StatusIndex(list, name); i >= 0 {
		return &list[i], true
	}
	return nil, false
}

// FindStatus returns a copy of the status named name in list.
func FindStatus(list []v1.ContainerStatus, name string) (v1.ContainerStatus, bool) {
	if s, ok := StatusByName(list, name); ok {
		return *s, true
	}
	return v1.ContainerStatus{}, false
}

// ContainerStatus returns the status of the init or app container named name.
func ContainerStatus(st *v1.PodStatus, name string) (v1.ContainerStatus, bool) {
	if s, ok := FindStatus(st.InitContainerStatuses, name); ok {
		return s, true
	}
	return FindStatus(st.ContainerStatuses, name)
}

// Container returns the spec of the container named name, regular or init, and whether it is an
// init container (a probed one is a sidecar); nil when the pod has none by that name.
func Container(pod *v1.Pod, name string) (c *v1.Container, init bool) {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], false
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i], true
		}
	}
	return nil, false
}

// FieldPath is an event's reference to a container: "spec.containers{name}", or
// "spec.initContainers{name}" for an init container (sidecars included).
func FieldPath(container string, init bool) string {
	if init {
		return "spec.initContainers{" + container + "}"
	}
	return "spec.containers{" + container + "}"
}

// FieldPathContainer is the container a FieldPath names; "" for any other path (the pod itself).
func FieldPathContainer(fieldPath string) string {
	open := strings.IndexByte(fieldPath, '{')
	if open < 0 || !strings.HasSuffix(fieldPath, "}") {
		return ""
	}
	return fieldPath[open+1 : len(fieldPath)-1]
}

// FieldRefValue is the value of a downward-API fieldRef path read from the pod object: the
// fields node supports (metadata.name, .namespace, .uid, spec.nodeName, status.podIP,
// status.hostIP); "" for any other.
func FieldRefValue(pod *v1.Pod, path string) string {
	switch path {
	case "metadata.name":
		return pod.Name
	case "metadata.namespace":
		return pod.Namespace
	case "metadata.uid":
		return string(pod.UID)
	case "spec.nodeName":
		return pod.Spec.NodeName
	case "status.podIP":
		return pod.Status.PodIP
	case "status.hostIP":
		return pod.Status.HostIP
	default:
		return ""
	}
}
