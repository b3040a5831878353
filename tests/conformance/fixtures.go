package conformance

import (
	"fmt"
	"time"

	"github.com/probeactor/probeactor/messages"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Probe returns an exec probe of kind pt (see Kind) with kubelet's test defaults: period 1 s,
// timeout 1 s, thresholds 1, adjusted by mods.
func Probe(pt messages.ProbeType, mods ...func(*v1.Probe)) *v1.Probe {
	name := map[messages.ProbeType]string{messages.Liveness: "liveness", messages.Readiness: "readiness", messages.Startup: "startup"}[pt]
	p := &v1.Probe{
		ProbeHandler:     v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{name}}},
		TimeoutSeconds:   1,
		PeriodSeconds:    1,
		SuccessThreshold: 1,
		FailureThreshold: 1,
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// Container returns a container named name with the given probes (nil entries are skipped).
func Container(name string, liveness, readiness, startup *v1.Probe) v1.Container {
	return v1.Container{Name: name, Image: "fake", LivenessProbe: liveness, ReadinessProbe: readiness, StartupProbe: startup}
}

// Pod returns a pod with restartPolicy Always.
func Pod(uid string, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-" + uid, Namespace: "default", UID: types.UID(uid)},
		Spec:       v1.PodSpec{Containers: containers, RestartPolicy: v1.RestartPolicyAlways},
	}
}

// ID is the container ID actors/fakeruntime gives the n-th start of a container of the fixture pod
// with the given UID ("fake://pod-<uid>/<container>/<n>").
func ID(podUID, container string, n int) messages.ContainerID {
	return messages.ContainerID(fmt.Sprintf("fake://pod-%s/%s/%d", podUID, container, n))
}

// Running is a Running pod status where every container of pod runs as its first start (or with
// the ID given in ids), started at startedAt: a status a scenario pushes itself, as the runtime
// would, when it needs a state the fake runtime does not produce.
func Running(pod *v1.Pod, startedAt time.Time, ids map[string]messages.ContainerID) v1.PodStatus {
	st := v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.1"}
	for _, c := range pod.Spec.Containers {
		id := ID(string(pod.UID), c.Name, 1)
		if ids[c.Name] != "" {
			id = ids[c.Name]
		}
		st.ContainerStatuses = append(st.ContainerStatuses, v1.ContainerStatus{
			Name:        c.Name,
			ContainerID: string(id),
			Image:       c.Image,
			State:       v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}},
		})
	}
	return st
}
