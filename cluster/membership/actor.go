package membership

import (
	"fmt"
	"net"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/wire/clusterv1"
)

// Messages of the membership actor. Each is sent by the party named, to the membership actor.
type (
	// tick: the actor's own heartbeat timer (armTick) → the actor, every heartbeat interval.
	tick struct{}
	// probed: a TCP probe goroutine (probe) → the actor: the connect to peer succeeded or not.
	probed struct {
		peer string
		ok   bool
	}
	// applied: Member.Applied → the actor: the subscriber has acted on the view of this version.
	applied struct{ version uint64 }
	// stoppingChanged: Member.SetStopping → the actor: the pods this member still stops.
	stoppingChanged struct{ uids []string }
	// claimsChanged: Member.Want → the actor: the kills this member waits to take.
	claimsChanged struct{ keys []string }
	// leaveRequest: Member.Stop → the actor: stop heartbeating, answer with a leaveReply.
	leaveRequest struct{}
	// leaveReply: the actor → Member.Stop: the leave to announce, and to which peers (none while
	// stopping pods still stop here).
	leaveReply struct {
		hb       *clusterv1.Heartbeat
		peers    []string
		stopping int
	}
)

// memberActor is the thin shell around core: it routes messages (heartbeats from peers, its own
// ticks, probe results, applied versions, the leave) to the core and performs the effects it
// returns (resets endpoints, sends heartbeats, publishes views to the subscribers, dials TCP
// probes, logs, counts). It holds no membership state of its own. Its timer ends on Stopping;
// each probe goroutine ends within one heartbeat interval and Member.Stop waits for it.
type memberActor struct {
	m       *Member
	core    *core
	timer   clock.Timer
	stopped atomic.Bool // read by the timer's callback and the probes
	quorate bool        // as last logged
}

func newMemberActor(m *Member) *memberActor {
	return &memberActor{m: m, core: newCore(&m.cfg, m.cfg.Clock.Now())}
}

func (a *memberActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		a.perform(ctx, a.core.start(a.m.cfg.Clock.Now()))
		a.armTick(ctx)
	case tick:
		if a.core.leaving {
			return
		}
		a.perform(ctx, a.core.tick(a.m.cfg.Clock.Now()))
		a.armTick(ctx)
	case probed:
		a.perform(ctx, a.core.probed(msg.peer, msg.ok, a.m.cfg.Clock.Now()))
	case *clusterv1.Heartbeat:
		e := a.core.heard(msg, a.m.cfg.Clock.Now(), ctx.Sender() != nil)
		a.logHeard(msg, e)
		a.perform(ctx, e)
	case applied:
		a.perform(ctx, a.core.applied(msg.version, a.m.cfg.Clock.Now()))
	case stoppingChanged:
		a.perform(ctx, a.core.setStopping(msg.uids, a.m.cfg.Clock.Now()))
	case claimsChanged:
		a.perform(ctx, a.core.setClaims(msg.keys, a.m.cfg.Clock.Now()))
	case leaveRequest:
		a.cancelTick()
		hb, peers, stopping := a.core.leave(a.m.cfg.Clock.Now())
		ctx.Respond(leaveReply{hb: hb, peers: peers, stopping: stopping})
	case *actor.Stopping:
		a.stopped.Store(true)
		a.cancelTick()
	case *actor.Stopped, *actor.Restarting:
	default:
		a.m.cfg.Logger.Warn("membership: unexpected message", "type", fmt.Sprintf("%T", msg))
	}
}

// perform carries out what the core decided, in the order effects documents.
func (a *memberActor) perform(ctx actor.Context, e effects) {
	for _, p := range e.reset {
		// protoactor's endpoint manager drops the address's endpoint (writer, watcher and
		// connection); the next send dials anew.
		ctx.ActorSystem().EventStream.Publish(&remote.EndpointTerminatedEvent{Address: p})
	}
	if e.reply != nil {
		ctx.Respond(e.reply)
	}
	for _, o := range e.send {
		for _, p := range o.to {
			if lost := a.m.cfg.lose; lost != nil && lost(p) {
				continue
			}
			ctx.Send(actor.NewPID(p, ActorName), o.hb)
		}
	}
	if e.lease != nil && a.m.cfg.Lease != nil && !e.lease.Equal(farFuture) {
		a.m.cfg.Lease(*e.lease) // before the view: what starts under it holds the lease already
	}
	for _, k := range e.took {
		a.m.cfg.Logger.Info("took a kill under the cluster's shared restart budget", "claim", k, "budget", a.m.cfg.RestartBudget.String())
	}
	if v := e.publish; v != nil {
		if mt := a.m.metrics; mt != nil && a.m.cfg.RestartBudget.N > 0 {
			mt.claims.WithLabelValues("taken").Set(float64(len(v.Taken)))
			mt.claims.WithLabelValues("waiting").Set(float64(len(v.Waiting)))
		}
		if len(e.joined) > 0 || len(e.dropped) > 0 {
			a.m.cfg.Logger.Info("cluster view changed", "members", v.Members, "joined", e.joined, "left", e.dropped)
		}
		a.logQuorum(*v)
		if mt := a.m.metrics; mt != nil {
			mt.members.WithLabelValues().Set(float64(len(v.Members)))
			mt.views.Inc()
		}
		a.m.publish(*v)
	}
	for _, p := range e.probe {
		a.probe(ctx, p)
	}
}

// logQuorum logs when this member gains or loses its quorum lease.
func (a *memberActor) logQuorum(v View) {
	quorate := v.Published.Before(v.LeaseUntil)
	if quorate == a.quorate {
		return
	}
	a.quorate = quorate
	if quorate {
		a.m.cfg.Logger.Info("this member holds a quorum lease", "members", v.Members, "until", v.LeaseUntil)
	} else {
		a.m.cfg.Logger.Warn("this member lost its quorum lease: it runs no pod until a quorum grants it one again", "members", v.Members, "of", v.All)
	}
}

// logHeard logs and counts what a heartbeat did.
func (a *memberActor) logHeard(hb *clusterv1.Heartbeat, e effects) {
	out, log := e.heard, a.m.cfg.Logger
	log.Trace("heard a heartbeat", "from", hb.GetAddress(), "incarnation", hb.GetIncarnation(), "seq", hb.GetSeq(), "view", hb.GetView(),
		"leaving", hb.GetLeaving(), "ignored", out.ignored, "admitted", out.admitted, "restarted", out.restarted, "changed", out.changed)
	mt := a.m.metrics
	switch {
	case out.ignored != "":
		if mt != nil {
			mt.ignored.WithLabelValues(out.ignored).Inc()
		}
		if e.warn {
			log.Warn("ignored a heartbeat (further ones from this address for this reason are logged at debug)", "from", hb.GetAddress(), "cluster", hb.GetCluster(), "reason", out.ignored)
		} else {
			log.Debug("ignored a heartbeat", "from", hb.GetAddress(), "reason", out.ignored)
		}
	case hb.GetLeaving():
		log.Info("a peer is leaving", "peer", hb.GetAddress())
	case out.repair:
		log.Warn("a peer heard here acknowledges none of this member's recent heartbeats: they are lost on the way; resetting the connection to it",
			"peer", hb.GetAddress(), "its_view", hb.GetView())
		if mt != nil {
			mt.repairs.Inc()
		}
	default:
	}
}

// probe checks with a bare TCP connect whether peer, which is not live, listens (see
// core.probeDown for why heartbeats wait for it). The connect goes to the address the user listed
// and is closed at once; the goroutine ends within one heartbeat interval and Member.Stop waits
// for it.
func (a *memberActor) probe(ctx actor.Context, peer string) {
	self, root, timeout := ctx.Self(), ctx.ActorSystem().Root, a.m.cfg.HeartbeatInterval
	a.m.probes.Go(func() {
		conn, err := net.DialTimeout("tcp", peer, timeout)
		if err == nil {
			_ = conn.Close()
		}
		if !a.stopped.Load() {
			root.Send(self, probed{peer: peer, ok: err == nil})
		}
	})
}

// armTick schedules the next tick.
func (a *memberActor) armTick(ctx actor.Context) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	a.timer = a.m.cfg.Clock.AfterFunc(a.m.cfg.HeartbeatInterval, func() {
		if !a.stopped.Load() {
			root.Send(self, tick{})
		}
	})
}

func (a *memberActor) cancelTick() {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
}
