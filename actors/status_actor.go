package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/actors/internal/statusbook"
	"github.com/probeactor/probeactor/messages"
)

// statusActor is the statusManager: the shell around a statusbook.Book. It keeps each pod's runtime
// status, mirrors the readiness and startup results it subscribed to, and recomputes the
// probe-adjusted status whenever one of them changes. A changed status is pushed to probeManager
// (which derives the workers' container views); kubelet's manual readiness triggers are sent on every
// recomputation, as kubelet sends them on every status generation.
type statusActor struct {
	env  *env
	book *statusbook.Book
}

func newStatusActor(e *env) *statusActor {
	return &statusActor{env: e, book: statusbook.New()}
}

// statusTypes are the results statusManager subscribes to (the root subscribes it).
var statusTypes = []messages.ProbeType{messages.Readiness, messages.Startup}

// countResults asks statusManager how many results it mirrors (tests): answered with an int.
type countResults struct{}

func (a *statusActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *addPodCmd:
		// The status recomputed with the pod's future workers goes out ahead of the AddPod, which
		// carries the views the new workers start with.
		a.book.AddPod(m.pod, m.probes)
		a.recompute(ctx, m.pod.UID)
		a.tellManager(ctx, &addPod{addPodCmd: m, views: a.book.Views(m.pod.UID)}) // in order, see rootActor
	case *removePod, *stopLivenessAndStartup:
		a.tellManager(ctx, m) // forwarded in order, see rootActor
	case *setStatus:
		a.book.SetRuntime(m.uid, m.pod, m.status)
		a.recompute(ctx, m.uid)
	case *protocol.ProbeWorkers:
		a.book.SetWorkers(m.PodUID, m.Keys)
		a.recompute(ctx, m.PodUID)
	case *messages.ResultChanges:
		touched := a.book.Apply(m.Changes)
		a.env.tell(ctx, ctx.Sender(), &messages.AckResults{Seq: m.Seq})
		for _, uid := range touched {
			a.recompute(ctx, uid)
		}
	case *protocol.KillDeferred:
		if a.book.SetDeferred(m.PodUID, m.ContainerID, m.Deferred) {
			a.recompute(ctx, m.PodUID)
		}
	case *countResults:
		ctx.Respond(a.book.MirroredResults())
	case *protocol.GetPodStatus:
		st, ok := a.book.Status(m.PodUID)
		ctx.Respond(&protocol.PodStatusResponse{Status: st, Found: ok})
	case *protocol.GetPodStatuses:
		out := make(map[types.UID]v1.PodStatus, len(m.PodUIDs))
		for _, uid := range m.PodUIDs {
			if st, ok := a.book.Status(uid); ok {
				out[uid] = st
			}
		}
		ctx.Respond(&protocol.PodStatusesResponse{Statuses: out})
	case *protocol.GetContainerStartups:
		out := make(map[types.UID][]messages.ContainerStartup, len(m.PodUIDs))
		for _, uid := range m.PodUIDs {
			if s := a.book.Startups(uid); len(s) > 0 {
				out[uid] = s
			}
		}
		ctx.Respond(&protocol.ContainerStartupsResponse{Startups: out})
	case *protocol.CleanupPods:
		a.tellManager(ctx, m)
		a.book.Cleanup(m.Desired)
	default:
		a.env.unhandled(nameStatus, m)
	}
}

// tellManager forwards a pod command to probeManager.
func (a *statusActor) tellManager(ctx actor.Context, msg any) { a.env.tell(ctx, a.env.manager, msg) }

// recompute pushes a pod's container views to probeManager when they may have changed and sends
// kubelet's manual readiness triggers.
func (a *statusActor) recompute(ctx actor.Context, uid types.UID) {
	views, trigger := a.book.Recompute(uid, a.env.now())
	for _, o := range a.book.TakeObservations() {
		a.env.metrics.observeStartup(o)
	}
	if views != nil {
		a.env.tell(ctx, a.env.manager, &podViews{uid: uid, views: views})
	}
	for _, c := range trigger {
		a.env.tell(ctx, a.env.manager, &protocol.TriggerReadiness{PodUID: uid, Container: c})
	}
}
