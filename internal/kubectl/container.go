package kubectl

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// DefaultContainerAnnotation names the container `kubectl logs POD` shows when -c is not given
// (KEP-2227).
const DefaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// LogsContainer is the container `kubectl logs POD` reads, as kubectl 1.37 chooses it
// (polymorphichelpers.logsForObjectWithClient): the named one; else the default-container
// annotation's, if the pod has it; else the first app container. notes are what kubectl prints on
// stderr on the way: an annotation naming no container, and "Defaulted container" when the pod
// has more containers than the one chosen. A name the pod does not have is an error listing the
// pod's containers.
func LogsContainer(pod *v1.Pod, name string) (container string, notes []string, err error) {
	if name == "" {
		if def := pod.Annotations[DefaultContainerAnnotation]; def != "" {
			if hasContainer(pod, def) {
				name = def
			} else {
				notes = append(notes, fmt.Sprintf("Default container name %q not found in pod %s", def, pod.Name))
			}
		}
	}
	if name == "" {
		if len(pod.Spec.Containers) == 0 {
			return "", notes, fmt.Errorf("pod %s/%s does not have any containers", pod.Namespace, pod.Name)
		}
		name = pod.Spec.Containers[0].Name
		if len(pod.Spec.Containers) > 1 || len(pod.Spec.InitContainers) > 0 || len(pod.Spec.EphemeralContainers) > 0 {
			notes = append(notes, fmt.Sprintf("Defaulted container %q out of: %s", name, AllContainerNames(pod)))
		}
	}
	if !hasContainer(pod, name) {
		return "", notes, fmt.Errorf("container %s is not valid for pod %s out of: %s", name, pod.Name, AllContainerNames(pod))
	}
	return name, notes, nil
}

// LogsContainers is every container `kubectl logs --all-containers` reads, in its order: init
// containers, app containers, ephemeral containers.
func LogsContainers(pod *v1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	return names
}

// AllContainerNames lists the pod's containers as kubectl's podcmd.AllContainerNames does: app
// containers, then ephemeral ones marked "(ephem)", then init containers marked "(init)".
func AllContainerNames(pod *v1.Pod) string {
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name+" (ephem)")
	}
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name+" (init)")
	}
	return strings.Join(names, ", ")
}

func hasContainer(pod *v1.Pod, name string) bool {
	for _, n := range LogsContainers(pod) {
		if n == name {
			return true
		}
	}
	return false
}
