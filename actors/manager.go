package actors

import (
	"fmt"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/actors/internal/statusbook"
	"github.com/probeactor/probeactor/actors/internal/supervision"
	"github.com/probeactor/probeactor/actors/internal/workerset"
	"github.com/probeactor/probeactor/messages"
)

// managerActor is the probeManager: the supervisor of one worker per ProbeKey. Its bookkeeping is
// a workerset.Set; it spawns workers (each with its container's current view, which statusManager
// attaches to the AddPod it forwards), routes pushed views and readiness triggers to the workers of
// a pod, and tells statusManager which workers exist.
type managerActor struct {
	env      *env
	log      hclog.Logger
	strategy *supervision.Strategy
	set      *workerset.Set[*workerActor]
	flushing bool   // a flushWorkers is queued to ourselves
	prefix   string // "<own PID id>/": a child's PID id is prefix + its name (set on Started)
}

// addPod is AddPod as statusManager forwards it: with the views of the pod's containers (nil before
// the pod has a status). statusManager has already counted the probes as workers, so probeManager
// reports the pod's worker keys only if one could not be spawned.
type addPod struct {
	*addPodCmd
	views []statusbook.View
}

// podViews carries the current views of a pod's containers: statusManager → probeManager, when
// they may have changed.
type podViews struct {
	uid   types.UID
	views []statusbook.View
}

// flushWorkers makes probeManager report the pods whose worker set changed (it sends it to itself
// when a worker terminates, so that the workers of a pod that stop together are reported once).
type flushWorkers struct{}

var flushWorkersMsg = &flushWorkers{}

func newManagerProps(e *env) *actor.Props {
	m := &managerActor{env: e, log: e.log.Named(nameManager), set: workerset.New[*workerActor]()}
	// The give-up callback runs on this actor's goroutine (while it handles the child's failure), so
	// it may touch m directly; the follow-up happens when the child's Terminated arrives.
	s, err := supervision.New(e.cfg.policy,
		supervision.WithClock(e.cfg.clock),
		supervision.WithRand(e.cfg.rand),
		supervision.WithLogger(e.log.Named("supervision")),
		supervision.OnGiveUp(func(child *actor.PID, reason any) {
			if w, ok := m.set.ByName(m.childName(child)); ok {
				m.set.GaveUp(w, reason) // the strategy stopped it
			}
		}),
		supervision.Resume())
	if err != nil { // the policy was validated in newConfig
		panic(fmt.Sprintf("probeManager supervision: %v", err))
	}
	m.strategy = s
	e.supervisor = s
	e.workerProps = newWorkerProps(e, s)
	return e.props(nameManager, func() actor.Actor { return m }, actor.WithSupervisor(s))
}

func (m *managerActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *addPod:
		m.addPod(ctx, msg)
	case *removePod:
		m.stop(ctx, m.set.StopWhere(msg.uid, func(messages.ProbeKey) bool { return true }))
	case *stopLivenessAndStartup:
		// Containers and sidecars (kubelet 1.30–1.35 skips sidecars; PR #141766 adds them).
		m.stop(ctx, m.set.StopWhere(msg.uid, func(k messages.ProbeKey) bool { return k.Type != messages.Readiness }))
	case *protocol.CleanupPods:
		m.stop(ctx, m.set.Cleanup(msg.Desired))
	case *podViews:
		for _, w := range m.set.Workers(msg.uid) {
			// A stopping worker may already be gone from the registry before its Terminated
			// arrives: a message to it would be a dead letter, and it would not use it anyway.
			if w.ms.Stopping {
				continue
			}
			if v := viewIn(msg.views, w.m.Container().Name); v != nil {
				m.env.tell(ctx, w.ms.PID, v)
			}
		}
	case *protocol.TriggerReadiness:
		k := messages.ProbeKey{PodUID: msg.PodUID, Container: msg.Container, Type: messages.Readiness}
		if w, ok := m.set.Get(k); ok && !w.ms.Stopping {
			m.env.tell(ctx, w.ms.PID, msg)
		}
	case *protocol.GetProbeKeys:
		var keys []messages.ProbeKey
		for _, w := range m.set.Workers(msg.PodUID) {
			if !w.ms.Stopping {
				keys = append(keys, w.key())
			}
		}
		ctx.Respond(&protocol.ProbeKeysResponse{Keys: keys})
	case *protocol.GetProbeState:
		if w, ok := m.set.Get(msg.Key); ok && !w.ms.Stopping {
			ctx.Forward(w.ms.PID)
		} else {
			ctx.Respond(&protocol.ProbeStateResponse{})
		}
	case *protocol.DeferKill:
		if w, ok := m.set.Get(msg.Key); ok && !w.ms.Stopping {
			m.env.tell(ctx, w.ms.PID, msg)
		}
	case *exitWorker:
		if w, ok := m.set.ByName(m.childName(msg.pid)); ok && m.set.Stop(w) {
			ctx.Stop(msg.pid)
		}
	case *actor.Terminated:
		m.terminated(ctx, msg.Who)
	case *flushWorkers:
		m.flushing = false
		m.flush(ctx)
	case *countWorkers:
		ctx.Respond(m.set.Len())
	case *inspectWorker:
		if w, ok := m.set.Get(msg.key); ok {
			ctx.Forward(w.ms.PID)
		} else {
			ctx.Respond(&workerInfo{})
		}
	case *actor.Started:
		m.prefix = ctx.Self().Id + "/"
	case *actor.Stopping:
		m.strategy.Stop()
	default:
		m.env.unhandled(nameManager, msg)
	}
}

// exitWorker is a worker's request to be stopped (its doProbe said "exit"): worker → probeManager,
// which alone stops workers, so no worker is ever told to stop twice (a dead letter once it is gone).
type exitWorker struct{ pid *actor.PID }

// countWorkers asks probeManager for its number of workers (tests, Stats): answered with an int.
type countWorkers struct{}

// inspectWorker asks a worker (through probeManager) for a workerInfo snapshot; a missing worker
// answers the zero workerInfo. Used by tests as a sync point.
type inspectWorker struct{ key messages.ProbeKey }

// workerInfo is a worker's state snapshot.
type workerInfo struct {
	Exists      bool
	Busy        bool // a doProbe run (attempt) is in progress
	ContainerID messages.ContainerID
	ResultRun   int
	OnHold      bool
}

// childName is the name pid has as probeManager's child (workerset.Name of its worker's key), or
// "" if it is not one.
func (m *managerActor) childName(pid *actor.PID) string {
	if m.prefix == "" {
		return ""
	}
	if name, ok := strings.CutPrefix(pid.Id, m.prefix); ok {
		return name
	}
	return ""
}

// addPod spawns a worker for every probe without one. Unlike kubelet 1.30–1.33 it continues past
// keys that already have a worker (kubelet post-1.35 behaviour). statusManager counted the keys as
// workers already; the pod's keys are reported again when that count may be off: a key could not be
// spawned, or a report sent since the pod's previous AddPod (its workers terminated) may reach
// statusManager after it counted this AddPod's keys, and drop them.
func (m *managerActor) addPod(ctx actor.Context, msg *addPod) {
	pod := msg.pod
	failed := m.set.AddPod(pod.UID, msg.workers, func(w *workerActor) *actor.PID {
		k := w.key()
		w.see(viewIn(msg.views, k.Container))
		m.env.spawning = w
		pid, err := ctx.SpawnNamed(m.env.workerProps, workerset.Name(k))
		m.env.spawning = nil
		if err != nil {
			// A worker of this name is still stopping; the next AddPod creates it (as kubelet).
			m.log.Debug("worker still exiting", "pod_uid", pod.UID, "container", k.Container, "probe", k.Type, "error", err)
			return nil
		}
		return pid
	})
	if failed || m.set.ReportedSinceAdd(pod.UID) {
		m.set.ChangedPod(pod.UID)
		m.flush(ctx)
	}
	m.set.AddHandled(pod.UID) // the report just sent, if any, counts this AddPod
}

func viewIn(views []statusbook.View, container string) *protocol.ContainerView {
	for _, v := range views {
		if v.Container == container {
			return v.View
		}
	}
	return nil
}

// stop stops workers (each is in the list once: the worker set hands out each worker once). They
// leave the set when their Terminated arrives.
func (m *managerActor) stop(ctx actor.Context, ws []*workerActor) {
	for _, w := range ws {
		ctx.Stop(w.ms.PID)
	}
}

func (m *managerActor) terminated(ctx actor.Context, who *actor.PID) {
	g, ok := m.set.Terminated(m.childName(who))
	if !ok {
		return
	}
	m.strategy.Forget(who)
	if g.GaveUp {
		m.flush(ctx) // the key's removal first, so that statusManager keeps the Unknown that follows
		m.reportGaveUp(ctx, g.W, g.Reason)
	}
	if !m.flushing {
		m.flushing = m.env.tell(ctx, ctx.Self(), flushWorkersMsg)
	}
}

// flush tells statusManager the worker keys of every pod whose set changed, through resultsCache:
// a terminated worker sent its last results there before it terminated, so the cache delivers them
// (or drops them with the worker's RemoveResult) before the key's removal reaches statusManager.
// Sent directly, the removal could overtake a result the cache had not handled yet, and statusManager
// would keep that result of a worker that is gone (a container not started or not ready for good).
func (m *managerActor) flush(ctx actor.Context) {
	for _, pw := range m.set.Changed() {
		m.env.tell(ctx, m.env.cache, &pw)
	}
}

// reportGaveUp publishes Unknown for a key whose worker failed too often. The worker's own cleanup
// (RemoveResult on Stopping) was queued at the cache before its Terminated reached us, so this Set
// lands after it. The worker is gone: its last view is read here safely.
func (m *managerActor) reportGaveUp(ctx actor.Context, w *workerActor, reason any) {
	k := w.key()
	id, found := w.m.ViewedContainer()
	m.log.Error("probe worker failed too often; reporting Unknown", "pod_uid", k.PodUID, "container", k.Container,
		"probe", k.Type, "reason", fmt.Sprint(reason))
	if found {
		m.env.tell(ctx, m.env.cache, &protocol.SetResult{PodUID: k.PodUID, Container: k.Container, ContainerID: id,
			Type: k.Type, Result: messages.Unknown})
	}
	m.env.cfg.sink.Event(messages.Event{
		Time:    m.env.now(),
		Type:    v1.EventTypeWarning,
		Reason:  messages.ReasonProbeWorkerGaveUp,
		Message: fmt.Sprintf("%s probe worker failed too often and was stopped; result is Unknown: %v", k.Type, reason),
		Pod:     w.pod.Ref(),
		PodUID:  k.PodUID,
	})
}
