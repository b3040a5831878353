package actors

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/internal/podstatus"
)

// podRecord is the tree's one copy of a pod, made at the edge (Tree.AddPod, or Tree.SetPodStatus
// for a pod AddPod has not given yet) and shared read-only by every actor: the pod's identity and
// the spec fields probing reads (containers and init containers in full, readiness gates, restart
// policy, grace periods, deletion), deep-copied. A full v1.Pod would cost 1.1 KB for its struct
// alone, before any container.
type podRecord struct {
	podstatus.Spec
	uid                           types.UID
	name, namespace               string
	restartPolicy                 v1.RestartPolicy
	terminationGracePeriodSeconds *int64
	deletionTimestamp             *metav1.Time
	deletionGracePeriodSeconds    *int64
}

func newPodRecord(p *v1.Pod) *podRecord {
	r := &podRecord{
		uid: p.UID, name: p.Name, namespace: p.Namespace,
		restartPolicy:                 p.Spec.RestartPolicy,
		terminationGracePeriodSeconds: copyInt64(p.Spec.TerminationGracePeriodSeconds),
		deletionTimestamp:             p.DeletionTimestamp.DeepCopy(),
		deletionGracePeriodSeconds:    copyInt64(p.DeletionGracePeriodSeconds),
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

// pod rebuilds a v1.Pod from the record: what KillContainer hands the runtime (the pod's identity
// and the spec fields the tree keeps; not its labels, annotations or status). It shares the record's
// contents, which nobody may modify.
func (r *podRecord) pod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: r.namespace, UID: r.uid,
			DeletionTimestamp: r.deletionTimestamp, DeletionGracePeriodSeconds: r.deletionGracePeriodSeconds},
		Spec: v1.PodSpec{Containers: r.Containers, InitContainers: r.InitContainers, ReadinessGates: r.ReadinessGates,
			RestartPolicy: r.restartPolicy, TerminationGracePeriodSeconds: r.terminationGracePeriodSeconds},
	}
}

// ref is the pod's name for events.
func (r *podRecord) ref() types.NamespacedName {
	return types.NamespacedName{Namespace: r.namespace, Name: r.name}
}
