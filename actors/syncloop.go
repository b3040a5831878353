package actors

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/internal/killrecord"
	"github.com/probeactor/probeactor/actors/internal/podrecord"
	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/messages"
)

// syncTypes are the results the syncLoop subscribes to (the root subscribes it).
var syncTypes = []messages.ProbeType{messages.Liveness, messages.Startup}

// syncActor is the syncLoop's probe branch: a liveness or startup Failure makes it ask the runtime
// to kill (and, unless restartPolicy is Never, restart) the container, in the background. It knows
// the pods it was given with AddPod and ignores updates for any other pod ("irrelevant update").
// Its decisions are its pure core's (internal/killrecord): which pods it knows, whether a result
// asks for a kill, whether a kill goes ahead (each container ID once); the actor performs them.
type syncActor struct {
	env *env
	log hclog.Logger
	// kills is the pure core: the pods known, with their records (what a kill and the budget's
	// events read), and the container ID last killed per container.
	kills  *killrecord.Book[*podrecord.Record]
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// budget is the restart budget (WithRestartBudget; nil: every kill at once, as kubelet): its
	// pure gate and the timer of the next moment the gate has room (budget.go).
	budget *budgetLoop
}

func newSyncActor(e *env) *syncActor {
	ctx, cancel := context.WithCancel(context.Background())
	a := &syncActor{env: e, log: e.log.Named(nameSync), kills: killrecord.New[*podrecord.Record](),
		ctx: ctx, cancel: cancel}
	if e.cfg.budget != nil {
		a.budget = newBudgetLoop(e, a, *e.cfg.budget)
	}
	return a
}

func (a *syncActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *addPodCmd:
		a.kills.Add(m.pod.UID, m.pod)
	case *removePod:
		a.kills.Remove(m.uid)
		a.forget(ctx, m.uid)
	case *protocol.CleanupPods:
		for _, uid := range a.kills.Cleanup(m.Desired) {
			a.forget(ctx, uid)
		}
	case *stopLivenessAndStartup:
		a.budget.release(ctx, m.uid) // the pod terminates: its waiting kills end
	case *messages.ResultChanges:
		if !a.env.tell(ctx, ctx.Sender(), &messages.AckResults{Seq: m.Seq}) {
			return // no new kills while the tree stops
		}
		for _, c := range m.Changes {
			a.budget.settle(ctx, c)
			switch a.kills.Result(c) {
			case killrecord.Kill:
				if a.budget == nil {
					a.kill(c)
				} else {
					a.budget.ask(c) // kill decides again when the budget lets it through
				}
			case killrecord.UnknownPod:
				a.log.Debug("ignore irrelevant update", "pod_uid", c.PodUID, "container", c.Container, "probe", c.Type)
			}
		}
		a.budget.due(ctx)
	case *budgetDue:
		a.budget.due(ctx)
	case *ping:
		ctx.Respond(m)
	case *actor.Started:
		a.budget.due(ctx) // after a restart: re-arm the budget's timer
	case *actor.Stopping, *actor.Restarting:
		a.budget.stop()
		a.cancel()
		a.wg.Wait()
		a.ctx, a.cancel = context.WithCancel(context.Background())
	default:
		a.env.unhandled(nameSync, m)
	}
}

// forget ends the waiting kills of a pod its core forgot (removed, or left out of a cleanup).
func (a *syncActor) forget(ctx actor.Context, uid types.UID) {
	a.budget.release(ctx, uid)
}

// kill kills a container for a Failure the core asked to kill (now, or when the restart budget
// allowed), if the core lets it go ahead (Take: its pod still known, its container ID not killed
// since).
func (a *syncActor) kill(c messages.ResultChanged) {
	rec, ok := a.kills.Take(c)
	if !ok {
		return
	}
	pod := rec.Pod() // what the runtime gets: the pod's identity and the spec fields the tree keeps
	req, path := killRequest(pod, c)
	a.env.cfg.sink.Event(messages.Event{Time: a.env.now(), Type: v1.EventTypeNormal, Reason: messages.ReasonKilling,
		Message: req.Message, Pod: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, PodUID: pod.UID,
		FieldPath: path})
	a.log.Info("killing container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Container,
		"container_id", c.ContainerID, "probe", c.Type, "grace_period", req.GracePeriod, "restart", req.Restart)
	rt, ctx, log := a.env.cfg.runtime, a.ctx, a.log
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := rt.KillContainer(ctx, req); err != nil {
			log.Error("kill container", "pod", pod.Namespace+"/"+pod.Name, "container", req.Container, "error", err)
		}
	}()
}

// killRequest is the sync loop's reaction to a liveness or startup Failure of a container (kubelet's
// SyncPod → killContainer, spec §6.2 and §4.3): the runtime request, whose Message is also the
// Killing event's text, and the event's field path. It restarts unless the pod's restartPolicy is
// Never or, when the container has its own restartPolicy (kubelet 1.37, ContainerRestartRules:
// its rules are not read, the container has not exited), that is Never; a sidecar's is Always.
func killRequest(pod *v1.Pod, c messages.ResultChanged) (messages.KillContainer, string) {
	spec, sidecar := podapi.Container(pod, c.Container)
	restart := pod.Spec.RestartPolicy != v1.RestartPolicyNever || sidecar
	if spec != nil && spec.RestartPolicy != nil {
		restart = *spec.RestartPolicy != v1.ContainerRestartPolicyNever
	}
	msg := fmt.Sprintf("Container %s failed %s probe", c.Container, strings.ToLower(c.Type.String()))
	if restart {
		msg += ", will be restarted"
	}
	return messages.KillContainer{Pod: pod, Container: c.Container, ContainerID: c.ContainerID, Probe: c.Type,
		Message: msg, GracePeriod: podapi.KillGracePeriod(pod, spec, c.Type), Restart: restart}, podapi.FieldPath(c.Container, sidecar)
}

// ping is answered by the syncLoop with itself: a sync point for tests.
type ping struct{}
