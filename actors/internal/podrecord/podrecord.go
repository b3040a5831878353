// Package podrecord is the probe tree's one copy of a pod (Record: its identity and the spec fields
// probing reads, deep-copied at the edge and shared read-only by every actor) and the list of probes
// kubelet's AddPod runs a worker for (Probes).
package podrecord

import (
	"iter"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/internal/podstatus"
	"github.com/probeactor/probeactor/messages"
)

// Record is the tree's one copy of a pod, made at the edge (Tree.AddPod, or Tree.SetPodStatus
// for a pod AddPod has not given yet) and shared read-only by every actor: the pod's identity and
// the spec fields probing reads (containers and init containers in full, readiness gates, restart
// policy, grace periods, deletion), deep-copied. A full v1.Pod would cost 1.1 KB for its struct
// alone, before any container.
type Record struct {
	podstatus.Spec
	UID                           types.UID
	Name, Namespace               string
	RestartPolicy                 v1.RestartPolicy
	TerminationGracePeriodSeconds *int64
	DeletionTimestamp             *metav1.Time
	DeletionGracePeriodSeconds    *int64
}

func New(p *v1.Pod) *Record {
	r := &Record{
		UID: p.UID, Name: p.Name, Namespace: p.Namespace,
		RestartPolicy:                 p.Spec.RestartPolicy,
		TerminationGracePeriodSeconds: copyInt64(p.Spec.TerminationGracePeriodSeconds),
		DeletionTimestamp:             p.DeletionTimestamp.DeepCopy(),
		DeletionGracePeriodSeconds:    copyInt64(p.DeletionGracePeriodSeconds),
	}
	r.Containers = copyContainers(p.Spec.Containers)
	r.InitContainers = copyContainers(p.Spec.InitContainers)
	r.ReadinessGates = append([]v1.PodReadinessGate(nil), p.Spec.ReadinessGates...)
	return r
}

func copyInt64(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func copyContainers(cs []v1.Container) []v1.Container {
	if cs == nil {
		return nil
	}
	out := make([]v1.Container, len(cs))
	for i := range cs {
		cs[i].DeepCopyInto(&out[i])
	}
	return out
}

// Pod rebuilds a v1.Pod from the record: what KillContainer hands the runtime (the pod's identity
// and the spec fields the tree keeps; not its labels, annotations or status). It shares the record's
// contents, which nobody may modify.
func (r *Record) Pod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace, UID: r.UID,
			DeletionTimestamp: r.DeletionTimestamp, DeletionGracePeriodSeconds: r.DeletionGracePeriodSeconds},
		Spec: v1.PodSpec{Containers: r.Containers, InitContainers: r.InitContainers, ReadinessGates: r.ReadinessGates,
			RestartPolicy: r.RestartPolicy, TerminationGracePeriodSeconds: r.TerminationGracePeriodSeconds},
	}
}

// Ref is the pod's name for events.
func (r *Record) Ref() types.NamespacedName {
	return types.NamespacedName{Namespace: r.Namespace, Name: r.Name}
}

// Probe is one probe of a pod that kubelet's AddPod runs a worker for.
type Probe struct {
	Key       messages.ProbeKey
	Container *v1.Container
	Spec      *v1.Probe
	Sidecar   bool
}

// Probes lists the probes kubelet's AddPod creates workers for, in its order: regular containers,
// then restartable init containers (sidecars); per container startup, readiness, liveness. Plain
// init containers are never probed.
func Probes(pod *Record) []Probe {
	var out []Probe
	for c, sidecar := range pod.Probed() {
		for _, t := range messages.ProbeTypes {
			if spec := t.Spec(c); spec != nil {
				out = append(out, Probe{Key: messages.ProbeKey{PodUID: pod.UID, Container: c.Name, Type: t},
					Container: c, Spec: spec, Sidecar: sidecar})
			}
		}
	}
	return out
}

// Probed yields the containers Probes takes probes from, in its order, each with whether it is a
// sidecar: regular containers, then restartable init containers; only those with a probe.
func (r *Record) Probed() iter.Seq2[*v1.Container, bool] {
	return func(yield func(*v1.Container, bool) bool) {
		for i := range r.Containers {
			if c := &r.Containers[i]; hasProbe(c) && !yield(c, false) {
				return
			}
		}
		for i := range r.InitContainers {
			if c := &r.InitContainers[i]; podstatus.IsRestartable(c) && hasProbe(c) && !yield(c, true) {
				return
			}
		}
	}
}

func hasProbe(c *v1.Container) bool {
	return c.StartupProbe != nil || c.ReadinessProbe != nil || c.LivenessProbe != nil
}
