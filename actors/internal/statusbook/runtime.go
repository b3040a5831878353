package statusbook

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/messages"
)

// runtimeStatus is how the book keeps a runtime status: the fields kubelet's statuses carry, in
// 208 bytes where a v1.PodStatus takes 384 (k8s v0.37: most of its fields are empty for almost
// every pod). Its slices and pointers are the Tree's copy's, shared read-only. Of a status that sets
// any other field the Tree's copy is kept whole as well (full), so expand always gives back exactly
// the status that was set.
type runtimeStatus struct {
	full *v1.PodStatus // the whole status when it sets a field the others do not hold, else nil

	observedGeneration int64
	phase              v1.PodPhase
	conditions         []v1.PodCondition
	hostIP             string
	hostIPs            []v1.HostIP
	podIP              string
	podIPs             []v1.PodIP
	startTime          *metav1.Time
	initStatuses       []v1.ContainerStatus
	statuses           []v1.ContainerStatus
	qosClass           v1.PodQOSClass
}

// compact returns how the book keeps st (which it shares, read-only).
func compact(st *v1.PodStatus) runtimeStatus {
	r := runtimeStatus{
		observedGeneration: st.ObservedGeneration, phase: st.Phase, conditions: st.Conditions,
		hostIP: st.HostIP, hostIPs: st.HostIPs, podIP: st.PodIP, podIPs: st.PodIPs, startTime: st.StartTime,
		initStatuses: st.InitContainerStatuses, statuses: st.ContainerStatuses, qosClass: st.QOSClass,
	}
	other := *st
	var none runtimeStatus
	none.setIn(&other) // what r does not hold
	if !reflect.ValueOf(&other).Elem().IsZero() {
		r.full = st
	}
	return r
}

// expand writes the status r keeps into dst (sharing its contents, which nobody may modify).
func (r *runtimeStatus) expand(dst *v1.PodStatus) {
	if r.full != nil {
		*dst = *r.full
		return
	}
	*dst = v1.PodStatus{}
	r.setIn(dst)
}

// setIn sets the fields r holds inline in dst.
func (r *runtimeStatus) setIn(dst *v1.PodStatus) {
	dst.ObservedGeneration, dst.Phase, dst.Conditions = r.observedGeneration, r.phase, r.conditions
	dst.HostIP, dst.HostIPs, dst.PodIP, dst.PodIPs = r.hostIP, r.hostIPs, r.podIP, r.podIPs
	dst.StartTime, dst.InitContainerStatuses, dst.ContainerStatuses = r.startTime, r.initStatuses, r.statuses
	dst.QOSClass = r.qosClass
}

// byID returns the status of the container whose current ID is id, or nil.
func (r *runtimeStatus) byID(id messages.ContainerID) *v1.ContainerStatus {
	if i := r.indexByID(id); i >= 0 {
		return r.at(i)
	}
	return nil
}

// indexByID is the index of id's status in Overlay's flags (containerStatuses first, then
// initContainerStatuses), or -1.
func (r *runtimeStatus) indexByID(id messages.ContainerID) int {
	for i := range r.statuses {
		if r.statuses[i].ContainerID == string(id) {
			return i
		}
	}
	for i := range r.initStatuses {
		if r.initStatuses[i].ContainerID == string(id) {
			return len(r.statuses) + i
		}
	}
	return -1
}

// has reports whether id is the current ID of one of the status's containers.
func (r *runtimeStatus) has(id messages.ContainerID) bool { return r.indexByID(id) >= 0 }

// at is the container status at index i of Overlay's flags.
func (r *runtimeStatus) at(i int) *v1.ContainerStatus {
	if i < len(r.statuses) {
		return &r.statuses[i]
	}
	return &r.initStatuses[i-len(r.statuses)]
}
