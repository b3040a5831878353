package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/podstatus"
	"github.com/probeactor/probeactor/actors/results"
	"github.com/probeactor/probeactor/messages"
)

// statusActor is the statusManager: it keeps each pod's runtime status, mirrors the readiness and
// startup results it subscribed to, and recomputes the probe-adjusted status (kubelet's
// UpdatePodStatus + conditions) whenever one of them changes. A changed status is pushed to
// probeManager (which derives the workers' container views); kubelet's manual readiness triggers are
// sent on every recomputation, as kubelet sends them on every status generation.
type statusActor struct {
	env     *env
	log     hclog.Logger
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

func newStatusActor(e *env) *statusActor {
	return &statusActor{env: e, log: e.log.Named(nameStatus), pods: map[types.UID]*podEntry{},
		results: map[results.Key]messages.Result{}, byPod: map[types.UID]map[results.Key]struct{}{}}
}

// statusTypes are the results statusManager subscribes to (the root subscribes it).
var statusTypes = []messages.ProbeType{messages.Readiness, messages.Startup}

// probesView answers podstatus.Probes for one pod.
type probesView struct {
	a *statusActor
	e *podEntry
}

func (p probesView) Result(id messages.ContainerID, t messages.ProbeType) (messages.Result, bool) {
	r, ok := p.a.results[results.Key{ContainerID: id, Type: t}]
	return r, ok
}

func (p probesView) HasWorker(c string, t messages.ProbeType) bool {
	_, ok := p.e.workers[messages.ProbeKey{PodUID: p.e.pod.UID, Container: c, Type: t}]
	return ok
}

func (a *statusActor) entry(uid types.UID) *podEntry {
	e := a.pods[uid]
	if e == nil {
		e = &podEntry{workers: map[messages.ProbeKey]struct{}{}}
		a.pods[uid] = e
	}
	return e
}

func (a *statusActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *messages.AddPod:
		a.addPod(ctx, m.Pod)
		a.tellManager(ctx, m) // forwarded in order, see rootActor
	case *messages.RemovePod, *messages.StopLivenessAndStartup:
		a.tellManager(ctx, m) // forwarded in order, see rootActor
	case *messages.SetPodStatus:
		e := a.entry(m.Pod.UID)
		e.pod = m.Pod
		st := m.Status
		e.runtime = &st
		a.pruneResults(m.Pod.UID)
		a.recompute(ctx, m.Pod.UID)
	case *messages.ProbeWorkers:
		e := a.entry(m.PodUID)
		next := make(map[messages.ProbeKey]struct{}, len(m.Keys))
		for _, k := range m.Keys {
			next[k] = struct{}{}
		}
		for k := range e.workers {
			if _, ok := next[k]; !ok {
				a.forgetResult(e, k) // an exiting worker removed its result from the cache
			}
		}
		e.workers = next
		a.recompute(ctx, m.PodUID)
	case *messages.ResultChanges:
		touched := map[types.UID]struct{}{}
		for _, c := range m.Changes {
			if e := a.pods[c.PodUID]; e == nil || e.runtime == nil || !hasContainerID(e.runtime, c.ContainerID) {
				continue // a replaced or unknown container: UpdatePodStatus would never look it up
			}
			k := results.Key{ContainerID: c.ContainerID, Type: c.Type}
			a.results[k] = c.Result
			if a.byPod[c.PodUID] == nil {
				a.byPod[c.PodUID] = map[results.Key]struct{}{}
			}
			a.byPod[c.PodUID][k] = struct{}{}
			touched[c.PodUID] = struct{}{}
		}
		if !a.env.stopping.Load() {
			ctx.Respond(&messages.AckResults{Seq: m.Seq})
		}
		for uid := range touched {
			a.recompute(ctx, uid)
		}
	case *countResults:
		ctx.Respond(len(a.results))
	case *messages.GetPodStatus:
		e := a.pods[m.PodUID]
		if e == nil || e.adjusted == nil {
			ctx.Respond(&messages.PodStatusResponse{})
			return
		}
		ctx.Respond(&messages.PodStatusResponse{Status: *e.adjusted.DeepCopy(), Found: true})
	case *messages.CleanupPods:
		a.tellManager(ctx, m)
		for uid := range a.pods {
			if _, ok := m.Desired[uid]; !ok {
				delete(a.pods, uid)
			}
		}
		for uid, keys := range a.byPod {
			if _, ok := m.Desired[uid]; !ok {
				for k := range keys {
					delete(a.results, k)
				}
				delete(a.byPod, uid)
			}
		}
	default:
	}
}

// addPod records the workers AddPod is about to create before probeManager creates them, and
// pushes the status recomputed with them ahead of the AddPod: otherwise a pod whose containers are
// already running would look started ("no startup worker") to its brand-new workers, and liveness
// or readiness would probe before the startup probe succeeded. probeManager's ProbeWorkers corrects
// the set afterwards (e.g. a key whose previous worker is still exiting).
func (a *statusActor) addPod(ctx actor.Context, pod *v1.Pod) {
	e := a.entry(pod.UID)
	e.pod = pod
	for _, p := range podProbes(pod) {
		e.workers[p.key] = struct{}{}
	}
	a.recompute(ctx, pod.UID)
}

// forgetResult drops the mirrored result of a worker that is gone, as kubelet's cache loses it when
// the worker exits (UpdatePodStatus then falls back to the "is there a worker?" rule).
func (a *statusActor) forgetResult(e *podEntry, k messages.ProbeKey) {
	if e.runtime == nil {
		return
	}
	for _, ss := range [][]v1.ContainerStatus{e.runtime.ContainerStatuses, e.runtime.InitContainerStatuses} {
		for i := range ss {
			if ss[i].Name == k.Container && ss[i].ContainerID != "" {
				rk := results.Key{ContainerID: messages.ContainerID(ss[i].ContainerID), Type: k.Type}
				delete(a.results, rk)
				delete(a.byPod[k.PodUID], rk)
			}
		}
	}
}

// pruneResults drops the mirrored results of a pod's containers that the runtime status no longer
// lists (a restarted container has a new ID), as kubelet's worker removes the old ID's result from
// its cache. Without it every restart would leave an entry behind until the pod is cleaned up.
func (a *statusActor) pruneResults(uid types.UID) {
	e := a.pods[uid]
	for k := range a.byPod[uid] {
		if !hasContainerID(e.runtime, k.ContainerID) {
			delete(a.results, k)
			delete(a.byPod[uid], k)
		}
	}
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

// tellManager sends to probeManager unless the tree is stopping (probeManager may be gone).
func (a *statusActor) tellManager(ctx actor.Context, msg any) {
	if !a.env.stopping.Load() {
		ctx.Send(a.env.manager, msg)
	}
}

// countResults asks statusManager how many results it mirrors (tests): answered with an int.
type countResults struct{}

// recompute derives the probe-adjusted status from the runtime status, pushes it to probeManager
// when it changed and sends kubelet's manual readiness triggers.
func (a *statusActor) recompute(ctx actor.Context, uid types.UID) {
	e := a.pods[uid]
	if e == nil || e.runtime == nil || e.pod == nil || a.env.stopping.Load() {
		return
	}
	st := e.runtime.DeepCopy()
	trigger := podstatus.UpdatePodStatus(e.pod, st, probesView{a, e})
	if e.adjusted != nil { // keep lastTransitionTime of unchanged conditions
		for _, ct := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
			for _, c := range e.adjusted.Conditions {
				if c.Type == ct {
					podstatus.SetCondition(st, c, c.LastTransitionTime)
				}
			}
		}
	}
	podstatus.SetProbeConditions(e.pod, st, metav1.NewTime(a.env.now()))
	if e.adjusted == nil || !equality.Semantic.DeepEqual(e.adjusted, st) {
		e.adjusted = st
		// st is never mutated after this point (the next recomputation builds a new one), so the
		// receiver may share its slices.
		ctx.Send(a.env.manager, &messages.PodStatusChanged{PodUID: uid, Status: *st})
	}
	for _, c := range trigger {
		ctx.Send(a.env.manager, &messages.TriggerReadiness{PodUID: uid, Container: c})
	}
}
