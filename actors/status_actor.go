package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
)

// statusActor is the statusManager: the shell around a statusBook. It keeps each pod's runtime
// status, mirrors the readiness and startup results it subscribed to, and recomputes the
// probe-adjusted status whenever one of them changes. A changed status is pushed to probeManager
// (which derives the workers' container views); kubelet's manual readiness triggers are sent on every
// recomputation, as kubelet sends them on every status generation.
type statusActor struct {
	env  *env
	book *statusBook
}

func newStatusActor(e *env) *statusActor {
	return &statusActor{env: e, book: newStatusBook()}
}

// statusTypes are the results statusManager subscribes to (the root subscribes it).
var statusTypes = []messages.ProbeType{messages.Readiness, messages.Startup}

// countResults asks statusManager how many results it mirrors (tests): answered with an int.
type countResults struct{}

func (a *statusActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *messages.AddPod:
		// The status recomputed with the pod's future workers goes out ahead of the AddPod.
		a.book.addPod(m.Pod)
		a.recompute(ctx, m.Pod.UID)
		a.tellManager(ctx, m) // forwarded in order, see rootActor
	case *messages.RemovePod, *messages.StopLivenessAndStartup:
		a.tellManager(ctx, m) // forwarded in order, see rootActor
	case *messages.SetPodStatus:
		a.book.setRuntime(m.Pod, m.Status)
		a.recompute(ctx, m.Pod.UID)
	case *messages.ProbeWorkers:
		a.book.setWorkers(m.PodUID, m.Keys)
		a.recompute(ctx, m.PodUID)
	case *messages.ResultChanges:
		touched := a.book.apply(m.Changes)
		a.env.tell(ctx, ctx.Sender(), &messages.AckResults{Seq: m.Seq})
		for uid := range touched {
			a.recompute(ctx, uid)
		}
	case *countResults:
		ctx.Respond(len(a.book.results))
	case *messages.GetPodStatus:
		st, ok := a.book.status(m.PodUID)
		ctx.Respond(&messages.PodStatusResponse{Status: st, Found: ok})
	case *messages.CleanupPods:
		a.tellManager(ctx, m)
		a.book.cleanup(m.Desired)
	default:
	}
}

// tellManager forwards a pod command to probeManager.
func (a *statusActor) tellManager(ctx actor.Context, msg any) { a.env.tell(ctx, a.env.manager, msg) }

// recompute pushes a pod's probe-adjusted status to probeManager when it changed and sends kubelet's
// manual readiness triggers.
func (a *statusActor) recompute(ctx actor.Context, uid types.UID) {
	changed, trigger := a.book.recompute(uid, a.env.now())
	if changed != nil {
		a.env.tell(ctx, a.env.manager, &messages.PodStatusChanged{PodUID: uid, Status: *changed})
	}
	for _, c := range trigger {
		a.env.tell(ctx, a.env.manager, &messages.TriggerReadiness{PodUID: uid, Container: c})
	}
}
