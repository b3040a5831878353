package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/internal/podrecord"
	"github.com/probeactor/probeactor/actors/internal/protocol"
)

// rootActor owns the tree: it spawns the four children with fixed names, routes the Tree's
// commands and queries to them, and stops the shared scheduler once every child is gone.
type rootActor struct {
	env      *env
	ready    chan struct{} // closed (and dropped) after the first Started
	started  bool
	children []child
}

type child struct {
	name  string
	props *actor.Props
}

func (r *rootActor) Receive(ctx actor.Context) {
	e := r.env
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if !r.started {
			r.started = true
			self := ctx.Self()
			e.root = self
			e.cache = childPID(self, nameCache)
			e.manager = childPID(self, nameManager)
			e.status = childPID(self, nameStatus)
			e.sync = childPID(self, nameSync)
			// One instance each, reused if an actor restarts after a panic, so no state is lost.
			cache, status, sync := newCacheActor(e), newStatusActor(e), newSyncActor(e)
			r.children = []child{
				{nameCache, e.props(nameCache, func() actor.Actor { return cache })},
				{nameManager, newManagerProps(e)},
				{nameStatus, e.props(nameStatus, func() actor.Actor { return status })},
				{nameSync, e.props(nameSync, func() actor.Actor { return sync })},
			}
		}
		// Also after a restart of the root (protoactor stops a restarting actor's children first).
		for _, c := range r.children {
			r.spawn(ctx, c.name, c.props)
		}
		// Subscribe statusManager and syncLoop now, on their behalf: the subscriptions are queued at
		// the cache before Start returns, hence before any worker can publish a result.
		ctx.RequestWithCustomSender(e.cache, &protocol.SubscribeResults{Types: statusTypes}, e.status)
		ctx.RequestWithCustomSender(e.cache, &protocol.SubscribeResults{Types: syncTypes}, e.sync)
		if r.ready != nil {
			close(r.ready)
			r.ready = nil
		}
	case *actor.Stopping:
		e.outside.Lock()
		e.stopping.Store(true)
		e.outside.Unlock()
		r.barrier(ctx)
		e.infra.Stop() // a child still waiting for its restart is stopped with the others
	case *actor.Stopped:
		e.cfg.exec.Stop() // every worker, hence every attempt, has ended
		e.metrics.unregister(e.cfg.reg)
		e.budgetMetrics.unregister(e.cfg.reg)
		close(e.done)
	// Pod lifecycle commands reach probeManager through statusManager, which forwards them in order
	// behind the statuses it already has: a caller's SetPodStatus followed by AddPod gives new workers
	// a known pod status (as kubelet's SyncPod sets the status before AddPod), and
	// AddPod/RemovePod/CleanupPods keep the caller's order. syncLoop first: it must know the pod
	// before any worker of it can report a failure. Only the Tree sends these (the root's PID is not
	// public, so nothing bypasses this ordering).
	case *protocol.CleanupPods, *removePod, *addPodCmd:
		e.tell(ctx, e.sync, m)
		e.tell(ctx, e.status, m)
	case *stopLivenessAndStartup:
		e.tell(ctx, e.sync, m) // its kills waiting for the restart budget end
		e.tell(ctx, e.status, m)
	case *setStatus:
		e.tell(ctx, e.status, m)
	case *protocol.GetPodStatus, *protocol.GetPodStatuses, *protocol.GetContainerStartups:
		ctx.Forward(e.status)
	case *protocol.GetProbeKeys, *protocol.GetProbeState:
		ctx.Forward(e.manager)
	case *protocol.GetResult, *protocol.SubscribeResults, *protocol.UnsubscribeResults:
		ctx.Forward(e.cache)
	default:
		e.unhandled(nameRoot, m)
	}
}

// addPodCmd is AddPod with the tree's copy of the pod, its probes (podrecord.Probes) and a worker
// for each probe, built but not spawned: Tree → root → syncLoop, statusManager → probeManager.
type addPodCmd struct {
	pod     *podrecord.Record
	probes  []podrecord.Probe
	workers []*workerActor // workers[i] is probes[i]'s
}

// removePod is RemovePod by UID: Tree → root → syncLoop, statusManager → probeManager.
type removePod struct{ uid types.UID }

// stopLivenessAndStartup is StopLivenessAndStartup by UID: Tree → root → statusManager →
// probeManager.
type stopLivenessAndStartup struct{ uid types.UID }

// setStatus is SetPodStatus as the Tree sends it: the one copy of the status, and the pod only when
// AddPod has not given it (statusManager then needs its spec).
type setStatus struct {
	uid    types.UID
	pod    *podrecord.Record
	status *v1.PodStatus
}

// stopBarrierTimeout bounds how long a stopping root waits for a child to finish its current message.
const stopBarrierTimeout = 5 * time.Second

// barrier returns once every child has finished the message it was handling when the tree started
// stopping. Children send to each other only through env.tell, which checks env.stopping;
// protoactor stops all children at once after this handler returns, so without the barrier a child
// that read "not stopping" just before could send to a sibling that is already gone (a dead letter,
// which protoactor logs and which keeps a throttle goroutine alive for a second). Messages a child
// handles afterwards see the flag and send nothing.
func (r *rootActor) barrier(ctx actor.Context) {
	var fs []*actor.Future
	for _, c := range r.children {
		pid := childPID(ctx.Self(), c.name)
		if r.env.infra.Waiting(pid) {
			continue // suspended until its restart: it handles nothing, so it sends nothing
		}
		fs = append(fs, ctx.RequestFuture(pid, &actor.Touch{}, stopBarrierTimeout))
	}
	for _, f := range fs {
		if err := f.Wait(); err != nil {
			r.env.log.Debug("stop barrier: a child did not answer", "error", err)
		}
	}
}

func (r *rootActor) spawn(ctx actor.Context, name string, props *actor.Props) {
	if _, err := ctx.SpawnNamed(props, name); err != nil {
		// Only possible if a name were reused under this root, which the fixed set above rules out.
		r.env.log.Error("spawn child", "child", name, "error", err)
	}
}
