// Package statusbook is the pure core of the probe tree's statusManager: per pod, the runtime's
// status, the readiness and startup results it mirrors, which keys have a worker, and the probe
// adjustment (Started/Ready flags, ContainersReady and Ready condition times) recomputed with
// kubelet's rules (internal/podstatus); the container views the workers get. A container the
// runtime reports running and ready or started, with no result yet, reads as the Success its
// worker will publish (worker.Adopted: kubelet 1.35+ keeps such a container ready and started
// across its own restart). Table-tested, and checked against a straightforward reference on random
// sequences.
package statusbook

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/internal/podrecord"
	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/actors/internal/worker"
	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/internal/podstatus"
	"github.com/probeactor/probeactor/internal/restartpolicy"
	"github.com/probeactor/probeactor/messages"
)

// Book is statusManager's state and decisions without the actor: each pod's runtime status
// and workers, the readiness and startup results mirrored from the cache, and the probe-adjusted
// Status (kubelet's UpdatePodStatus + conditions) derived from them. Not safe for concurrent use.
//
// It keeps no second copy of a status. The runtime status is the Tree's one copy, shared read-only
// (its fields, without the 384-byte v1.PodStatus around them unless it sets a rarely set one:
// runtime.go); the adjustment is kept as what it changes: Started and Ready per container status
// (podstatus.Flags) and the two conditions probing owns (ContainersReady, Ready) as their status and
// times. The full adjusted v1.PodStatus is built only when somebody asks for it (status).
type Book struct {
	pods map[types.UID]*podEntry

	// scratch, reused by every recompute
	flags   []podstatus.Flags
	scratch v1.PodStatus
	rt      v1.PodStatus // a runtime status expanded (runtime.go)

	observed []Observation // first Started and Ready since TakeObservations (startup.go)
}

// podEntry is what the book keeps of a pod: one allocation of the 352-byte size class (pinned by
// TestAPodEntryFitsItsSizeClass), its runtime status inline, and one more for its containers.
type podEntry struct {
	pod        *podrecord.Record   // the latest AddPod's, else the latest SetPodStatus's; read-only
	runtime    runtimeStatus       // the runtime's latest status (runtime.go), when hasRuntime
	workers    []messages.ProbeKey // the keys that have a worker, unless podProbes
	results    []mirrored          // readiness and startup results of containers runtime lists
	containers []container         // per status of runtime, at its index in Overlay's flags

	// The probe conditions (ContainersReady, Ready) of the adjustment of runtime, valid when
	// adjusted: their statuses, lastTransitionTimes and lastProbeTimes, apart so that they pack
	// (cond puts them together); lastProbe is nil when both are zero, as they are unless the
	// runtime sets them.
	transition [2]metav1.Time
	lastProbe  *[2]metav1.Time
	condStatus [2]condStatus

	added bool // pod came from AddPod
	// podProbes: the keys that have a worker are the pod's probes (podrecord.Probes(pod)), as after
	// AddPod, and workers is nil: a copy of them would cost 48 bytes per pod and probe.
	podProbes  bool
	hasRuntime bool // the runtime has given a status
	fresh      bool // runtime changed since the workers were last given views
	adjusted   bool
}

// container is what the book keeps of one container status of the runtime status: the probe
// adjustment, a deferred kill and the start of the instance (the status's ID). Its fields are in
// the order that packs them in 24 bytes.
type container struct {
	flags podstatus.Flags // the probe adjustment (valid when the entry is adjusted)
	// deferred marks a container whose liveness or startup kill waits for the restart budget: it is
	// reported not ready.
	deferred bool

	// The instance's first Started and Ready (the probe-adjusted flags), and how long after its
	// start (its State.Running.StartedAt) it first read them (startup.go).
	adopted bool // running and reported ready or started when first seen: taken over, not measured
	// rank orders the instances of a pod by when they were first seen running (Startups lists them
	// so); 0: not seen yet. The ranks of a pod's instances are 1…n (renumber).
	rank         uint16
	started      bool
	ready        bool
	startedAfter time.Duration
	readyAfter   time.Duration
}

// mirrored is one cached readiness or startup result.
type mirrored struct {
	id     messages.ContainerID
	t      messages.ProbeType
	result messages.Result
}

// condState is what the adjusted status keeps of a condition probing owns; its reason and message
// are derived again from the same inputs when the status is built.
type condState struct {
	status     condStatus
	transition metav1.Time
	probe      *metav1.Time // lastProbeTime, nil when zero (it is, unless the runtime sets one)
}

// cond is the adjusted condition i (ContainersReady, Ready).
func (e *podEntry) cond(i int) condState {
	c := condState{status: e.condStatus[i], transition: e.transition[i]}
	if e.lastProbe != nil {
		c.probe = probeTime(e.lastProbe[i])
	}
	return c
}

// setConds makes conds the adjusted conditions.
func (e *podEntry) setConds(conds [2]condState) {
	e.lastProbe = nil
	for i, c := range conds {
		e.condStatus[i], e.transition[i] = c.status, c.transition
		if c.probe != nil && !c.probe.IsZero() {
			if e.lastProbe == nil {
				e.lastProbe = new([2]metav1.Time)
			}
			e.lastProbe[i] = *c.probe
		}
	}
}

// condStatus is a v1.ConditionStatus in one byte: True, False, or anything else (which never equals
// a status statusManager computes).
type condStatus uint8

const (
	condOther condStatus = iota
	condTrue
	condFalse
)

func statusOf(s v1.ConditionStatus) condStatus {
	switch s {
	case v1.ConditionTrue:
		return condTrue
	case v1.ConditionFalse:
		return condFalse
	default:
		return condOther
	}
}

func probeTime(t metav1.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (c condState) probeTime() metav1.Time {
	if c.probe == nil {
		return metav1.Time{}
	}
	return *c.probe
}

// probeConditions are the conditions statusManager computes, in the order kubelet appends them.
var probeConditions = [2]v1.PodConditionType{v1.ContainersReady, v1.PodReady}

func New() *Book {
	return &Book{pods: map[types.UID]*podEntry{}}
}

// probesView answers podstatus.Probes for one pod.
type probesView struct{ e *podEntry }

// Result is the mirrored result of a container's probe, else the result its worker will publish
// when it first sees the container (worker.Adopted): Success for a running container the runtime
// reports ready (readiness) or started (startup). So an adopted container is ready and started
// from its first status on, before its worker ran (kubelet 1.35+: a container that was ready and
// started when kubelet restarted is reported so at once), the worker's first publish changes
// nothing, and no manual readiness trigger is sent for it (kubelet 1.35+ keeps no result and
// triggers; the container is ready either way). Where no worker of the type exists, this is what
// kubelet's "no worker" rule gives anyway.
func (p probesView) Result(id messages.ContainerID, t messages.ProbeType) (messages.Result, bool) {
	for _, m := range p.e.results {
		if m.id == id && m.t == t {
			return m.result, true
		}
	}
	if t != messages.Liveness && p.e.hasRuntime {
		if cs := p.e.runtime.byID(id); cs != nil &&
			worker.Adopted(t, cs.State.Running != nil, cs.Ready, cs.Started != nil && *cs.Started) {
			return messages.Success, true
		}
	}
	return messages.Unknown, false
}

func (p probesView) HasWorker(c string, t messages.ProbeType) bool {
	if p.e.podProbes {
		for cont := range p.e.pod.Probed() {
			if cont.Name == c && t.Spec(cont) != nil {
				return true
			}
		}
		return false
	}
	for _, k := range p.e.workers {
		if k.Container == c && k.Type == t {
			return true
		}
	}
	return false
}

// workerKeys returns the keys that have a worker (read-only).
func (e *podEntry) workerKeys() []messages.ProbeKey {
	if e.podProbes {
		return probeKeys(podrecord.Probes(e.pod))
	}
	return e.workers
}

func probeKeys(probes []podrecord.Probe) []messages.ProbeKey {
	keys := make([]messages.ProbeKey, 0, len(probes))
	for _, p := range probes {
		if !hasKey(keys, p.Key) {
			keys = append(keys, p.Key)
		}
	}
	return keys
}

func (b *Book) entry(uid types.UID) *podEntry {
	e := b.pods[uid]
	if e == nil {
		e = &podEntry{}
		b.pods[uid] = e
	}
	return e
}

// AddPod records the pod and the workers AddPod is about to create (probes, which must be
// podrecord.Probes(pod)) before probeManager creates them: otherwise a pod whose containers are
// already running would look started ("no startup worker") to its brand-new workers, and liveness
// or readiness would probe before the startup probe succeeded. probeManager's ProbeWorkers corrects
// the set afterwards (e.g. a key whose previous worker is still exiting).
func (b *Book) AddPod(pod *podrecord.Record, probes []podrecord.Probe) {
	e := b.entry(pod.UID)
	old := e.workerKeys() // of the previous pod, when podProbes
	e.pod, e.added = pod, true
	extra := slices.DeleteFunc(slices.Clone(old), func(k messages.ProbeKey) bool {
		return slices.ContainsFunc(probes, func(p podrecord.Probe) bool { return p.Key == k })
	})
	if len(extra) == 0 { // the keys are the pod's probes
		e.workers, e.podProbes = nil, true
		return
	}
	e.workers, e.podProbes = append(extra, probeKeys(probes)...), false
}

func hasKey(keys []messages.ProbeKey, k messages.ProbeKey) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

// SetRuntime records the runtime's status of a pod (status is kept, read-only) and drops the
// mirrored results of containers it no longer lists (a restarted container has a new ID), as
// kubelet's worker removes the old ID's result from its cache. The pod spec is the AddPod one when
// there is one (kubelet's pod manager); pod (nil when the caller knew AddPod gave it) is used
// otherwise.
func (b *Book) SetRuntime(uid types.UID, pod *podrecord.Record, status *v1.PodStatus) {
	e := b.entry(uid)
	if !e.added && pod != nil {
		e.pod = pod
	}
	changed := !e.hasRuntime
	if e.hasRuntime {
		old := &b.rt
		e.runtime.expand(old)
		changed = !equality.Semantic.DeepEqual(old, status)
		*old = v1.PodStatus{}
	}
	next := compact(status)
	if changed {
		e.fresh = true
		e.containers = follow(e.containers, &e.runtime, &next)
	}
	e.runtime, e.hasRuntime = next, true
	kept := e.results[:0]
	for _, m := range e.results {
		if e.runtime.has(m.id) {
			kept = append(kept, m)
		}
	}
	clear(e.results[len(kept):])
	e.results = kept
}

// follow returns the containers of status next, given old, those of status prev: a container next
// lists by an ID prev lists keeps what the book kept of it (its deferred kill, its start; of an ID
// listed twice, the one at its first index); a restarted container (a new ID) starts afresh, its
// old instance's deferred kill and start forgotten.
func follow(old []container, prev, next *runtimeStatus) []container {
	n := len(next.statuses) + len(next.initStatuses)
	out := make([]container, n)
	for i := range old {
		id := messages.ContainerID(prev.at(i).ContainerID)
		if old[i] == (container{}) || prev.indexByID(id) != i { // an ID listed twice: kept at its first
			continue
		}
		if j := next.indexByID(id); j >= 0 {
			out[j] = old[i]
		}
	}
	renumber(out)
	return out
}

// SetDeferred marks (on) or unmarks a container whose liveness or startup kill waits for the
// restart budget (a deliberate deviation from kubelet, which kills at once): while marked and
// listed by the runtime status, it is reported not ready, and the pod's ContainersReady and Ready
// conditions with it. It reports whether the pod is known (then Recompute applies it); a pod
// without a runtime status, or a container it does not list, is not marked.
func (b *Book) SetDeferred(uid types.UID, id messages.ContainerID, on bool) bool {
	e := b.pods[uid]
	if e == nil || !e.hasRuntime {
		return false
	}
	if i := e.runtime.indexByID(id); i >= 0 {
		e.containers[i].deferred = on
	}
	return true
}

// SetWorkers records the keys that have a worker (keys is kept, read-only) and drops the mirrored
// results of workers that are gone, as kubelet's cache loses them when the worker exits
// (UpdatePodStatus then falls back to the "is there a worker?" rule).
func (b *Book) SetWorkers(uid types.UID, keys []messages.ProbeKey) {
	e := b.entry(uid)
	if e.hasRuntime {
		for _, k := range e.workerKeys() {
			if hasKey(keys, k) {
				continue
			}
			for _, ss := range [][]v1.ContainerStatus{e.runtime.statuses, e.runtime.initStatuses} {
				for i := range ss {
					if ss[i].Name == k.Container && ss[i].ContainerID != "" {
						e.drop(messages.ContainerID(ss[i].ContainerID), k.Type)
					}
				}
			}
		}
	}
	e.workers, e.podProbes = keys, false
}

func (e *podEntry) drop(id messages.ContainerID, t messages.ProbeType) {
	for i, m := range e.results {
		if m.id == id && m.t == t {
			last := len(e.results) - 1
			e.results[i] = e.results[last]
			e.results[last] = mirrored{}
			e.results = e.results[:last]
			return
		}
	}
}

// Apply mirrors result changes of containers the pods' runtime statuses currently list (others
// could never be looked up) and returns the pods whose results changed, each once.
func (b *Book) Apply(changes []messages.ResultChanged) []types.UID {
	var touched []types.UID
	for _, c := range changes {
		e := b.pods[c.PodUID]
		if e == nil || !e.hasRuntime || !e.runtime.has(c.ContainerID) {
			continue
		}
		e.set(c.ContainerID, c.Type, c.Result)
		if !hasUID(touched, c.PodUID) {
			touched = append(touched, c.PodUID)
		}
	}
	return touched
}

func (e *podEntry) set(id messages.ContainerID, t messages.ProbeType, r messages.Result) {
	for i := range e.results {
		if e.results[i].id == id && e.results[i].t == t {
			e.results[i].result = r
			return
		}
	}
	e.results = append(e.results, mirrored{id: id, t: t, result: r})
}

func hasUID(uids []types.UID, uid types.UID) bool {
	for _, u := range uids {
		if u == uid {
			return true
		}
	}
	return false
}

// Cleanup forgets every pod (and its results) not in desired.
func (b *Book) Cleanup(desired map[types.UID]struct{}) {
	for uid := range b.pods {
		if _, ok := desired[uid]; !ok {
			delete(b.pods, uid)
		}
	}
}

// MirroredResults counts the results mirrored over all pods (tests).
func (b *Book) MirroredResults() int {
	n := 0
	for _, e := range b.pods {
		n += len(e.results)
	}
	return n
}

// Status builds a pod's probe-adjusted status: a copy of the runtime status with Started and Ready
// overlaid and the ContainersReady and Ready conditions set (replaced where the runtime reported
// them, else appended in that order).
func (b *Book) Status(uid types.UID) (v1.PodStatus, bool) {
	e := b.pods[uid]
	if e == nil || !e.adjusted {
		return v1.PodStatus{}, false
	}
	var rt v1.PodStatus
	e.runtime.expand(&rt)
	st := rt.DeepCopy()
	b.flags = e.flagsInto(b.flags[:0])
	podstatus.Apply(st, b.flags)
	conds := e.derive(st)
	for i, c := range conds {
		c.LastTransitionTime, c.LastProbeTime = e.transition[i], e.cond(i).probeTime()
		c.ObservedGeneration = st.ObservedGeneration // the pod's generation (Tree.SetPodStatus)
		if j := conditionIndex(st.Conditions, c.Type); j >= 0 {
			st.Conditions[j] = c
		} else {
			st.Conditions = append(st.Conditions, c)
		}
	}
	return *st, true
}

// derive computes the two probe conditions of st (Started/Ready already overlaid) without times.
func (e *podEntry) derive(st *v1.PodStatus) [2]v1.PodCondition {
	cr := podstatus.ContainersReadyConditionOf(&e.pod.Spec, st)
	return [2]v1.PodCondition{cr, podstatus.ReadyConditionFrom(&e.pod.Spec, st, cr)}
}

func conditionIndex(conds []v1.PodCondition, t v1.PodConditionType) int {
	for i := range conds {
		if conds[i].Type == t {
			return i
		}
	}
	return -1
}

// Recompute derives a pod's probe adjustment at now: kubelet's UpdatePodStatus overlay, then the
// ContainersReady and Ready conditions, whose lastTransitionTime moves only when their status does.
// It returns the containers whose readiness worker kubelet would trigger, and the views of the
// pod's workers when they may have changed since the workers last got theirs (a new runtime
// status, or a container's Started flag flipped); nil views: nothing to push.
func (b *Book) Recompute(uid types.UID, now time.Time) (views []View, trigger []string) {
	e := b.pods[uid]
	if e == nil || !e.hasRuntime || e.pod == nil {
		return nil, nil
	}
	rt := &b.rt
	e.runtime.expand(rt)
	defer func() { *rt = v1.PodStatus{} }() // keep no pointers into old statuses alive
	n := len(rt.ContainerStatuses) + len(rt.InitContainerStatuses)
	if cap(b.flags) < n {
		b.flags = make([]podstatus.Flags, n)
	}
	flags := b.flags[:n]
	trigger = podstatus.Overlay(&e.pod.Spec, rt, probesView{e}, flags)
	for i := range e.containers { // a kill waiting for the restart budget: not ready meanwhile
		if e.containers[i].deferred {
			flags[i].Ready = false
		}
	}
	b.observe(e, rt, flags, now)

	// The conditions, computed on a scratch status that shares rt's contents but has its own
	// container status and condition slices.
	sc := &b.scratch
	*sc = v1.PodStatus{Phase: rt.Phase,
		ContainerStatuses:     append(sc.ContainerStatuses[:0], rt.ContainerStatuses...),
		InitContainerStatuses: append(sc.InitContainerStatuses[:0], rt.InitContainerStatuses...),
		Conditions:            append(sc.Conditions[:0], rt.Conditions...)}
	for i := range sc.ContainerStatuses {
		sc.ContainerStatuses[i].Ready = flags[i].Ready
	}
	for i := range sc.InitContainerStatuses {
		sc.InitContainerStatuses[i].Ready = flags[len(rt.ContainerStatuses)+i].Ready
	}
	var next [2]condState
	crStatus, readyStatus := podstatus.ProbeConditionStatuses(&e.pod.Spec, sc)
	for i, status := range [2]v1.ConditionStatus{crStatus, readyStatus} {
		// The previous adjusted condition (its times replaced by the runtime's own condition of
		// the type when that has the same status), else the runtime's condition, is "old".
		old, hasOld := condState{}, false
		if j := conditionIndex(rt.Conditions, probeConditions[i]); j >= 0 {
			r := &rt.Conditions[j]
			old, hasOld = condState{status: statusOf(r.Status), transition: r.LastTransitionTime, probe: probeTime(r.LastProbeTime)}, true
			if e.adjusted && e.condStatus[i] != old.status {
				old.status, old.transition = e.condStatus[i], e.transition[i]
			}
		} else if e.adjusted {
			old, hasOld = e.cond(i), true
		}
		next[i] = condState{status: statusOf(status), transition: metav1.NewTime(now)}
		if hasOld {
			next[i].probe = old.probe
			if old.status == next[i].status {
				next[i].transition = old.transition
			}
		}
	}
	clear(sc.ContainerStatuses) // keep no pointers into old statuses alive
	clear(sc.InitContainerStatuses)
	clear(sc.Conditions)

	push := e.fresh || !e.adjusted || e.startedChanged(flags)
	for i := range e.containers {
		e.containers[i].flags = flags[i]
	}
	e.setConds(next)
	e.adjusted, e.fresh = true, false
	if push {
		views = e.views(rt)
	}
	return views, trigger
}

// startedChanged reports whether a container's Started flag differs in cur from the adjustment.
func (e *podEntry) startedChanged(cur []podstatus.Flags) bool {
	for i := range cur {
		if e.containers[i].flags.Started != cur[i].Started {
			return true
		}
	}
	return false
}

// flagsInto appends the adjustment's flags to dst.
func (e *podEntry) flagsInto(dst []podstatus.Flags) []podstatus.Flags {
	for i := range e.containers {
		dst = append(dst, e.containers[i].flags)
	}
	return dst
}

// View is one container's view for its workers. view is shared by the container's
// workers and never modified.
type View struct {
	Container string
	View      *protocol.ContainerView
}

// Views returns the current views of the pod's containers (nil while it has no adjusted status).
func (b *Book) Views(uid types.UID) []View {
	e := b.pods[uid]
	if e == nil || !e.adjusted {
		return nil
	}
	var rt v1.PodStatus
	e.runtime.expand(&rt)
	return e.views(&rt)
}

// views returns the current view of every container of an added pod that has a probe, rt being the
// runtime status expanded (none before
// the pod has an adjusted status: workers then see "no pod status"). It does not ask which keys the
// book counts as workers: that set lags probeManager's (a report of an earlier worker's exit can
// arrive after AddPod counted the new one), and a view withheld in that window would never be sent
// again. probeManager hands each view to the workers it has.
func (e *podEntry) views(rt *v1.PodStatus) []View {
	if !e.adjusted || !e.added {
		return nil
	}
	var out []View
	allRestarting := restartpolicy.AllRestarting(e.pod.InitContainers, e.pod.Containers, rt)
	for c := range e.pod.Probed() {
		v := e.viewOf(c.Name)
		v.AllRestarting = allRestarting
		out = append(out, View{Container: c.Name, View: &v})
	}
	return out
}

// viewOf is what a worker of container name reads from the adjusted status (doProbe steps 1–3, 6,
// 8, 9; views adds AllRestarting, one answer for the pod): the status by name in containerStatuses, else (or when its ID is empty) in
// initContainerStatuses.
func (e *podEntry) viewOf(name string) protocol.ContainerView {
	st := e.runtime
	v := protocol.ContainerView{PodStatusKnown: true, Phase: st.phase, PodIP: st.podIP}
	idx := podapi.StatusIndex(st.statuses, name)
	if idx < 0 || st.statuses[idx].ContainerID == "" {
		if i := podapi.StatusIndex(st.initStatuses, name); i >= 0 {
			idx = len(st.statuses) + i
		} else {
			idx = -1
		}
	}
	if idx < 0 {
		return v
	}
	cs := st.at(idx)
	if cs.ContainerID == "" {
		return v
	}
	v.Found = true
	v.ContainerID = messages.ContainerID(cs.ContainerID)
	if r := cs.State.Running; r != nil {
		v.Running = true
		v.StartedAt = r.StartedAt.Time
	}
	if t := cs.State.Terminated; t != nil {
		v.Terminated, v.ExitCode = true, t.ExitCode
	}
	v.Started = e.containers[idx].flags.Started
	v.ReportedReady = cs.Ready
	v.ReportedStarted = cs.Started != nil && *cs.Started
	return v
}
