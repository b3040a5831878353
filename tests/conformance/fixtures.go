package conformance

import (
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

// ID is the fixture container ID for a container name and incarnation ("test://<name>-<n>").
func ID(container string, incarnation int) messages.ContainerID {
	return messages.ContainerID("test://" + container + "-" + string(rune('0'+incarnation)))
}

// Running is a Running pod status where every container of pod runs as incarnation 1 (or as given
// in ids), started at startedAt.
func Running(pod *v1.Pod, startedAt time.Time, ids map[string]messages.ContainerID) v1.PodStatus {
	st := v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.1"}
	for _, c := range pod.Spec.Containers {
		id := ID(c.Name, 1)
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
