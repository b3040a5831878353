package actors

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/podstatus"
	"github.com/probeactor/probeactor/actors/results"
	"github.com/probeactor/probeactor/messages"
)

// statusBook is statusManager's state and decisions without the actor: each pod's runtime status
// and workers, the readiness and startup results mirrored from the cache, and the probe-adjusted
// status (kubelet's UpdatePodStatus + conditions) derived from them. Not safe for concurrent use.
type statusBook struct {
	pods    map[types.UID]*podEntry
	results map[results.Key]messages.Result // readiness and startup only
	byPod   map[types.UID]map[results.Key]struct{}
}

type podEntry struct {
	pod      *v1.Pod
	runtime  *v1.PodStatus // nil until the runtime reported one
	adjusted *v1.PodStatus
	workers  map[messages.ProbeKey]struct{}
}

func newStatusBook() *statusBook {
	return &statusBook{pods: map[types.UID]*podEntry{}, results: map[results.Key]messages.Result{},
		byPod: map[types.UID]map[results.Key]struct{}{}}
}

// probesView answers podstatus.Probes for one pod.
type probesView struct {
	b *statusBook
	e *podEntry
}

func (p probesView) Result(id messages.ContainerID, t messages.ProbeType) (messages.Result, bool) {
	r, ok := p.b.results[results.Key{ContainerID: id, Type: t}]
	return r, ok
}

func (p probesView) HasWorker(c string, t messages.ProbeType) bool {
	_, ok := p.e.workers[messages.ProbeKey{PodUID: p.e.pod.UID, Container: c, Type: t}]
	return ok
}

func (b *statusBook) entry(uid types.UID) *podEntry {
	e := b.pods[uid]
	if e == nil {
		e = &podEntry{workers: map[messages.ProbeKey]struct{}{}}
		b.pods[uid] = e
	}
	return e
}

// addPod records the workers AddPod is about to create before probeManager creates them: otherwise
// a pod whose containers are already running would look started ("no startup worker") to its
// brand-new workers, and liveness or readiness would probe before the startup probe succeeded.
// probeManager's ProbeWorkers corrects the set afterwards (e.g. a key whose previous worker is still
// exiting).
func (b *statusBook) addPod(pod *v1.Pod) {
	e := b.entry(pod.UID)
	e.pod = pod
	for _, p := range podProbes(pod) {
		e.workers[p.key] = struct{}{}
	}
}

// setRuntime records the runtime's status of a pod and drops the mirrored results of containers it
// no longer lists (a restarted container has a new ID), as kubelet's worker removes the old ID's
// result from its cache.
func (b *statusBook) setRuntime(pod *v1.Pod, status v1.PodStatus) {
	e := b.entry(pod.UID)
	e.pod = pod
	e.runtime = &status
	for k := range b.byPod[pod.UID] {
		if !hasContainerID(e.runtime, k.ContainerID) {
			b.drop(pod.UID, k)
		}
	}
}

// setWorkers records the keys that have a worker and drops the mirrored results of workers that are
// gone, as kubelet's cache loses them when the worker exits (UpdatePodStatus then falls back to the
// "is there a worker?" rule).
func (b *statusBook) setWorkers(uid types.UID, keys []messages.ProbeKey) {
	e := b.entry(uid)
	next := make(map[messages.ProbeKey]struct{}, len(keys))
	for _, k := range keys {
		next[k] = struct{}{}
	}
	for k := range e.workers {
		if _, ok := next[k]; !ok && e.runtime != nil {
			for _, cs := range allContainerStatuses(e.runtime) {
				if cs.Name == k.Container && cs.ContainerID != "" {
					b.drop(uid, results.Key{ContainerID: messages.ContainerID(cs.ContainerID), Type: k.Type})
				}
			}
		}
	}
	e.workers = next
}

// apply mirrors result changes of containers the pods' runtime statuses currently list (others
// could never be looked up) and returns the pods whose results changed.
func (b *statusBook) apply(changes []messages.ResultChanged) map[types.UID]struct{} {
	touched := map[types.UID]struct{}{}
	for _, c := range changes {
		if e := b.pods[c.PodUID]; e == nil || e.runtime == nil || !hasContainerID(e.runtime, c.ContainerID) {
			continue
		}
		k := results.Key{ContainerID: c.ContainerID, Type: c.Type}
		b.results[k] = c.Result
		if b.byPod[c.PodUID] == nil {
			b.byPod[c.PodUID] = map[results.Key]struct{}{}
		}
		b.byPod[c.PodUID][k] = struct{}{}
		touched[c.PodUID] = struct{}{}
	}
	return touched
}

// cleanup forgets every pod (and its results) not in desired.
func (b *statusBook) cleanup(desired map[types.UID]struct{}) {
	for uid := range b.pods {
		if _, ok := desired[uid]; !ok {
			delete(b.pods, uid)
		}
	}
	for uid, keys := range b.byPod {
		if _, ok := desired[uid]; !ok {
			for k := range keys {
				delete(b.results, k)
			}
			delete(b.byPod, uid)
		}
	}
}

// status returns a copy of a pod's probe-adjusted status.
func (b *statusBook) status(uid types.UID) (v1.PodStatus, bool) {
	e := b.pods[uid]
	if e == nil || e.adjusted == nil {
		return v1.PodStatus{}, false
	}
	return *e.adjusted.DeepCopy(), true
}

// recompute derives a pod's probe-adjusted status at now. It returns the new status when it differs
// from the previous one (nil otherwise; the returned value is never mutated afterwards, so receivers
// may share it) and the containers whose readiness worker kubelet would trigger.
func (b *statusBook) recompute(uid types.UID, now time.Time) (changed *v1.PodStatus, trigger []string) {
	e := b.pods[uid]
	if e == nil || e.runtime == nil || e.pod == nil {
		return nil, nil
	}
	st := e.runtime.DeepCopy()
	trigger = podstatus.UpdatePodStatus(e.pod, st, probesView{b, e})
	if e.adjusted != nil { // keep lastTransitionTime of unchanged conditions
		for _, ct := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
			for _, c := range e.adjusted.Conditions {
				if c.Type == ct {
					podstatus.SetCondition(st, c, c.LastTransitionTime)
				}
			}
		}
	}
	podstatus.SetProbeConditions(e.pod, st, metav1.NewTime(now))
	if e.adjusted == nil || !equality.Semantic.DeepEqual(e.adjusted, st) {
		e.adjusted = st
		changed = st
	}
	return changed, trigger
}

func (b *statusBook) drop(uid types.UID, k results.Key) {
	delete(b.results, k)
	delete(b.byPod[uid], k)
}

func allContainerStatuses(st *v1.PodStatus) []v1.ContainerStatus {
	return append(append([]v1.ContainerStatus(nil), st.ContainerStatuses...), st.InitContainerStatuses...)
}

// hasContainerID reports whether id is the current ID of one of the status's containers.
func hasContainerID(st *v1.PodStatus, id messages.ContainerID) bool {
	for _, ss := range [][]v1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses} {
		for i := range ss {
			if ss[i].ContainerID == string(id) {
				return true
			}
		}
	}
	return false
}
