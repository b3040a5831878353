package membership

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/wire/clusterv1"
)

// Messages the membership actor sends itself.
type (
	tick            struct{}
	topologyChanged struct{ members []string }
	// probed is the outcome of a TCP connect to a peer that is not live.
	probed struct {
		peer string
		ok   bool
	}
	// applied: the subscriber has acted on the view of this version (Member.Applied).
	applied struct{ version uint64 }
)

// maxHistory bounds the published views kept until the subscriber acknowledges them.
const maxHistory = 64

// memberActor heartbeats the peers, feeds what it hears and the clock to the detector, reports
// the live members to protoactor's MemberList and publishes the view that comes back as a
// ClusterTopology event. Everything runs on its goroutine; its timer ends on Stopping.
type memberActor struct {
	m    *Member
	c    *cluster.Cluster
	det  *detector
	seq  uint64
	view View // the last published view
	// reported is the view peers are told (heartbeats): the last published one, or with
	// AwaitApplied the last one the subscriber acknowledged; history keeps the members of the
	// published versions not acknowledged yet.
	reported []string
	history  map[uint64][]string
	topoSub  *eventstream.Subscription
	tick     clock.Timer
	stopped  atomic.Bool // read by the timer's callback
	leaving  bool
	probing  map[string]bool // peers with a TCP probe in flight
	warned   map[string]bool // (peer, reason) pairs already logged at Warn
}

func newMemberActor(m *Member, c *cluster.Cluster) *memberActor {
	return &memberActor{m: m, c: c, det: newDetector(m.cfg.Cluster, m.self, m.cfg.Peers, m.cfg.FailureTimeout, m.cfg.repairAfter(), m.cfg.Clock.Now()), warned: map[string]bool{}, probing: map[string]bool{}, history: map[uint64][]string{}}
}

func (a *memberActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		self, root := ctx.Self(), ctx.ActorSystem().Root
		a.topoSub = ctx.ActorSystem().EventStream.Subscribe(func(evt any) {
			if t, ok := evt.(*cluster.ClusterTopology); ok {
				root.Send(self, topologyChanged{members: addresses(t.GetMembers())})
			}
		})
		a.probe(ctx)
		a.armTick(ctx)
		a.apply(ctx) // a member without peers is ready at once
	case tick:
		if a.leaving {
			return
		}
		if a.det.tick(a.m.cfg.Clock.Now()) {
			a.apply(ctx)
		}
		a.heartbeat(ctx, a.livePeers())
		a.probe(ctx)
		a.armTick(ctx)
	case probed:
		delete(a.probing, msg.peer)
		if msg.ok && !a.leaving && !a.det.isLive(msg.peer) {
			a.heartbeat(ctx, []string{msg.peer})
		}
	case *clusterv1.Heartbeat:
		a.heard(ctx, msg)
	case topologyChanged:
		a.publish(ctx, msg.members)
	case applied:
		a.acknowledged(ctx, msg.version)
	case leaveRequest:
		a.leaving = true
		a.cancelTick()
		a.seq++
		ctx.Respond(leaveReply{
			hb:    &clusterv1.Heartbeat{Cluster: a.m.cfg.Cluster, Address: a.m.self, Incarnation: a.m.cfg.Incarnation, Seq: a.seq, View: a.reported, Leaving: true},
			peers: slices.DeleteFunc(slices.Clone(a.view.Members), func(p string) bool { return p == a.m.self }),
		})
	case *actor.Stopping:
		a.stopped.Store(true)
		a.cancelTick()
		if a.topoSub != nil {
			ctx.ActorSystem().EventStream.Unsubscribe(a.topoSub)
		}
	case *actor.Stopped, *actor.Restarting:
	default:
		a.m.cfg.Logger.Warn("membership: unexpected message", "type", fmt.Sprintf("%T", msg))
	}
}

// heard feeds one peer heartbeat to the detector. A leave of a listed peer of this cluster is
// acknowledged with this member's own heartbeat (the leaver waits for it, see Member.Stop; a
// repeated leave is acknowledged again).
func (a *memberActor) heard(ctx actor.Context, hb *clusterv1.Heartbeat) {
	out := a.det.heard(hb, a.m.cfg.Clock.Now())
	a.m.cfg.Logger.Trace("heard a heartbeat", "from", hb.GetAddress(), "incarnation", hb.GetIncarnation(), "seq", hb.GetSeq(), "view", hb.GetView(),
		"leaving", hb.GetLeaving(), "ignored", out.ignored, "admitted", out.admitted, "restarted", out.restarted, "changed", out.changed)
	fromPeer := out.ignored == "" || out.ignored == ignoredLeft || out.ignored == ignoredStale
	if hb.GetLeaving() && ctx.Sender() != nil && fromPeer {
		a.seq++
		ctx.Respond(&clusterv1.Heartbeat{Cluster: a.m.cfg.Cluster, Address: a.m.self, Incarnation: a.m.cfg.Incarnation, Seq: a.seq, View: a.reported})
	}
	if out.ignored != "" {
		a.ignored(hb, out.ignored)
		return
	}
	if hb.GetLeaving() {
		a.m.cfg.Logger.Info("a peer is leaving", "peer", hb.GetAddress())
	}
	if out.repair {
		a.m.cfg.Logger.Warn("a peer keeps reporting views without this member although it is heard here: its heartbeats from here are lost; resetting the connection to it",
			"peer", hb.GetAddress(), "its_view", hb.GetView())
		if mt := a.m.metrics; mt != nil {
			mt.repairs.Inc()
		}
	}
	if out.restarted || out.repair {
		// protoactor's endpoint manager drops the address's endpoint (writer and connection); the
		// next send dials anew.
		ctx.ActorSystem().EventStream.Publish(&remote.EndpointTerminatedEvent{Address: hb.GetAddress()})
	}
	if out.admitted || out.restarted || out.repair {
		a.heartbeat(ctx, []string{hb.GetAddress()})
	}
	if out.changed {
		a.apply(ctx)
	}
}

// apply reports the detector's live set to protoactor's MemberList; the ClusterTopology event it
// publishes comes back as topologyChanged. When the set is unchanged (only a peer's reported view
// changed), the view is published directly.
func (a *memberActor) apply(ctx actor.Context) {
	live := a.det.live()
	if live == nil || a.leaving {
		return
	}
	if a.view.Version > 0 && slices.Equal(live, a.view.Members) {
		a.publish(ctx, live)
		return
	}
	members := make(cluster.Members, 0, len(live))
	for _, addr := range live {
		host, portStr, _ := net.SplitHostPort(addr) // validated: clusterv1.CheckAddress
		port, _ := strconv.Atoi(portStr)
		// protoactor's MemberList blocks the ID of a member that left for good; the ID carries the
		// admission count so a peer that comes back (a false suspicion) is a new member to it.
		id := addr + "#" + strconv.FormatUint(a.det.admissions(addr), 10)
		members = append(members, &cluster.Member{Id: id, Host: host, Port: int32(port)})
	}
	a.c.MemberList.UpdateClusterTopology(members)
}

// publish makes members (protoactor's topology) plus the peers' reported views the new view, and
// tells the peers at once when the members changed.
func (a *memberActor) publish(ctx actor.Context, members []string) {
	if a.leaving {
		return
	}
	reported := a.det.reported()
	for p := range reported {
		if !slices.Contains(members, p) {
			delete(reported, p)
		}
	}
	membersChanged := !slices.Equal(members, a.view.Members)
	if !membersChanged && a.view.Version > 0 && equalReports(reported, a.view.Reported) {
		return
	}
	if membersChanged {
		joined, left := diff(a.view.Members, members)
		a.m.cfg.Logger.Info("cluster view changed", "members", members, "joined", joined, "left", left)
	}
	a.view = View{Self: a.m.self, Members: members, Reported: reported, Version: a.view.Version + 1, Published: a.m.cfg.Clock.Now()}
	if mt := a.m.metrics; mt != nil {
		mt.members.WithLabelValues().Set(float64(len(members)))
		mt.views.Inc()
	}
	a.m.publish(a.view)
	if !a.m.cfg.AwaitApplied {
		a.report(ctx, members)
		return
	}
	if len(a.history) >= maxHistory {
		delete(a.history, slices.Min(slices.Collect(maps.Keys(a.history))))
	}
	a.history[a.view.Version] = members
}

// acknowledged makes the view of version (and nothing newer) the one peers are told.
func (a *memberActor) acknowledged(ctx actor.Context, version uint64) {
	members, ok := a.history[version]
	if !ok {
		return // already acknowledged, or dropped from the history
	}
	for v := range a.history {
		if v <= version {
			delete(a.history, v)
		}
	}
	a.report(ctx, members)
}

// report changes the view peers are told and tells them at once.
func (a *memberActor) report(ctx actor.Context, members []string) {
	if slices.Equal(members, a.reported) || a.leaving {
		return
	}
	a.reported = members
	a.heartbeat(ctx, a.livePeers())
}

// heartbeat sends this member's heartbeat to each of to (fire and forget).
func (a *memberActor) heartbeat(ctx actor.Context, to []string) {
	a.seq++
	hb := &clusterv1.Heartbeat{Cluster: a.m.cfg.Cluster, Address: a.m.self, Incarnation: a.m.cfg.Incarnation, Seq: a.seq, View: a.reported}
	for _, p := range to {
		if lost := a.m.cfg.lose; lost != nil && lost(p) {
			continue
		}
		ctx.Send(actor.NewPID(p, ActorName), hb)
	}
}

// livePeers are the peers the detector considers live: they get every heartbeat.
func (a *memberActor) livePeers() []string {
	return slices.DeleteFunc(slices.Clone(a.m.cfg.Peers), func(p string) bool { return p == a.m.self || !a.det.isLive(p) })
}

// probe checks, with a bare TCP connect, whether each peer that is not live listens; one that does
// gets a heartbeat (see probed). Heartbeats never go to a peer that is down: protoactor's endpoint
// writer to an unreachable address blocks in its connect loop for up to ~20 s (5 attempts, 2 s
// apart, uninterruptible), and stopping the remote then waits 10 s for it. The connect goes to
// the address the user listed and is closed at once; each probe goroutine ends within one
// heartbeat interval and Member.Stop waits for it.
func (a *memberActor) probe(ctx actor.Context) {
	self, root, timeout := ctx.Self(), ctx.ActorSystem().Root, a.m.cfg.HeartbeatInterval
	for _, p := range a.m.cfg.Peers {
		if p == a.m.self || a.probing[p] || a.det.isLive(p) {
			continue
		}
		a.probing[p] = true
		a.m.probes.Go(func() {
			conn, err := net.DialTimeout("tcp", p, timeout)
			if err == nil {
				_ = conn.Close()
			}
			if !a.stopped.Load() {
				root.Send(self, probed{peer: p, ok: err == nil})
			}
		})
	}
}

func (a *memberActor) ignored(hb *clusterv1.Heartbeat, reason string) {
	if mt := a.m.metrics; mt != nil {
		mt.ignored.WithLabelValues(reason).Inc()
	}
	if reason == ignoredStale || reason == ignoredLeft {
		return // late delivery and repeated leaves are normal (see Member.announceLeave)
	}
	key := hb.GetAddress() + "|" + reason
	if a.warned[key] {
		a.m.cfg.Logger.Debug("ignored a heartbeat", "from", hb.GetAddress(), "reason", reason)
		return
	}
	if len(a.warned) < 1024 {
		a.warned[key] = true
	}
	a.m.cfg.Logger.Warn("ignored a heartbeat (further ones from this address for this reason are logged at debug)", "from", hb.GetAddress(), "cluster", hb.GetCluster(), "reason", reason)
}

// armTick schedules the next tick unless the actor is stopping.
func (a *memberActor) armTick(ctx actor.Context) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	a.tick = a.m.cfg.Clock.AfterFunc(a.m.cfg.HeartbeatInterval, func() {
		if !a.stopped.Load() {
			root.Send(self, tick{})
		}
	})
}

func (a *memberActor) cancelTick() {
	if a.tick != nil {
		a.tick.Stop()
		a.tick = nil
	}
}

func addresses(ms []*cluster.Member) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Address())
	}
	slices.Sort(out)
	return out
}

func diff(before, after []string) (joined, left []string) {
	for _, a := range after {
		if !slices.Contains(before, a) {
			joined = append(joined, a)
		}
	}
	for _, b := range before {
		if !slices.Contains(after, b) {
			left = append(left, b)
		}
	}
	return joined, left
}

func equalReports(x, y map[string][]string) bool {
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		w, ok := y[k]
		if !ok || !slices.Equal(v, w) {
			return false
		}
	}
	return true
}
