package membership

import (
	"maps"
	"slices"
	"time"

	"github.com/probeactor/probeactor/wire/clusterv1"
)

// maxHistory bounds the published views kept until the subscriber acknowledges them.
const maxHistory = 64

// maxWarned bounds the (peer, reason) pairs of ignored heartbeats remembered as already warned.
const maxWarned = 1024

// core is every decision of one member, etcd-raft style: a pure state machine that takes events
// (start, tick, a heartbeat heard, a probe's result, a view applied, the leave) and returns the
// effects the actor performs (endpoints to reset, heartbeats to send, a view to publish, peers to
// probe, a reply). It never does I/O, reads no clock and starts nothing, so its tests drive it
// with plain values. It owns all of the member's state: the detector (who is live), the published
// view and its version, the view peers are told (reported) with the history of published views
// not yet applied (AwaitApplied), the heartbeat seq, the probes in flight and whether it leaves.
type core struct {
	cluster      string
	self         string
	incarnation  uint64
	peers        []string // every configured peer but self, in the configured order
	awaitApplied bool

	det  *detector
	seq  uint64 // of the last heartbeat made
	view View   // the last published view (Version 0: none yet)
	// reported is the view peers are told (in every heartbeat): the last published one, or with
	// awaitApplied the last one the subscriber acknowledged; history keeps the members of the
	// published versions not acknowledged yet.
	reported []string
	history  map[uint64][]string
	leaving  bool
	probing  map[string]bool // peers with a TCP probe in flight
	warned   map[string]bool // (peer, reason) pairs of ignored heartbeats already warned about
}

// effects is what one event asks the actor to do, in this order: reset the endpoints, answer the
// sender, send the heartbeats, publish the view, start the probes. The remaining fields only feed
// logs and metrics.
type effects struct {
	// reset lists peers whose protoactor endpoint (writer and connection) is to be dropped with an
	// EndpointTerminatedEvent, so the next send dials anew: a peer dropped from the view, a peer
	// that restarted while live, a connection under repair.
	reset []string
	// reply answers the event's sender: the acknowledgement of a peer's leave.
	reply *clusterv1.Heartbeat
	// send lists heartbeats, each to its peers (fire and forget).
	send []outgoing
	// publish is a new view for the subscribers (nil: none).
	publish *View
	// probe lists peers that are not live to check with a TCP connect (then probed).
	probe []string

	heard   heardOutcome // what the heartbeat did (heard only)
	warn    bool         // an ignored heartbeat's first for its peer and reason: log at Warn
	joined  []string     // members the published view added
	dropped []string     // members the published view removed
}

// outgoing is one heartbeat and the peers it goes to.
type outgoing struct {
	to []string
	hb *clusterv1.Heartbeat
}

func newCore(cfg *Config, now time.Time) *core {
	c := &core{
		cluster: cfg.Cluster, self: cfg.Self, incarnation: cfg.Incarnation, awaitApplied: cfg.AwaitApplied,
		det:     newDetector(cfg.Cluster, cfg.Self, cfg.Peers, cfg.FailureTimeout, cfg.repairAfter(), now),
		history: map[uint64][]string{}, probing: map[string]bool{}, warned: map[string]bool{},
	}
	for _, p := range cfg.Peers {
		if p != cfg.Self {
			c.peers = append(c.peers, p)
		}
	}
	return c
}

// start: the actor runs. Every peer is probed; a member without peers publishes its view at once.
func (c *core) start(now time.Time) effects {
	var e effects
	c.update(now, &e)
	c.probeDown(&e)
	return e
}

// tick: one heartbeat interval passed. Peers silent for longer than the failure timeout are
// dropped, every live peer gets a heartbeat, every peer that is not live (and not being probed)
// is probed.
func (c *core) tick(now time.Time) effects {
	var e effects
	if c.leaving {
		return e
	}
	if c.det.tick(now) {
		c.update(now, &e)
	}
	c.heartbeat(&e, c.livePeers()...)
	c.probeDown(&e)
	return e
}

// heard takes one heartbeat that arrived at now; canReply says whether it came as a request (a
// leave does) that can be answered. A leave of a listed peer of this cluster is acknowledged with
// this member's own heartbeat, also when it is a repeated one (the leaver asks until it hears
// back, see Member.Stop).
func (c *core) heard(hb *clusterv1.Heartbeat, now time.Time, canReply bool) effects {
	out := c.det.heard(hb, now)
	e := effects{heard: out}
	addr := hb.GetAddress()
	fromPeer := out.ignored == "" || out.ignored == ignoredLeft || out.ignored == ignoredStale
	if hb.GetLeaving() && canReply && fromPeer {
		e.reply = c.next()
	}
	if out.ignored != "" {
		e.warn = c.firstWarning(addr, out.ignored)
		return e
	}
	if out.restarted || out.repair {
		e.reset = append(e.reset, addr)
	}
	if out.admitted || out.restarted || out.repair {
		c.heartbeat(&e, addr) // greet it: it hears this member without waiting a tick
	}
	if out.changed {
		c.update(now, &e)
	}
	return e
}

// probed: the TCP probe of peer ended; a peer that listens (and is still not live) is greeted.
func (c *core) probed(peer string, ok bool) effects {
	var e effects
	delete(c.probing, peer)
	if ok && !c.det.isLive(peer) {
		c.heartbeat(&e, peer)
	}
	return e
}

// applied: the subscriber has acted on the view of version (Member.Applied). With awaitApplied,
// that view (and nothing newer) becomes the one peers are told; a version already acknowledged
// or dropped from the history changes nothing.
func (c *core) applied(version uint64) effects {
	var e effects
	members, ok := c.history[version]
	if !ok {
		return e
	}
	for v := range c.history {
		if v <= version {
			delete(c.history, v)
		}
	}
	c.report(&e, members)
	return e
}

// leave stops every further heartbeat, view and probe, and returns the leave to announce and the
// live peers to announce it to (Member.Stop sends it until each acknowledges).
func (c *core) leave() (hb *clusterv1.Heartbeat, peers []string) {
	c.leaving = true
	hb = c.next()
	hb.Leaving = true
	return hb, slices.DeleteFunc(slices.Clone(c.view.Members), func(p string) bool { return p == c.self })
}

// update publishes the detector's live set with the peers' reported views when either changed
// since the last view, and resets the endpoints of the members it drops (protoactor would keep
// a writer to a peer that is gone, and a stale one once it is back). Without awaitApplied peers
// are told the new members at once.
func (c *core) update(now time.Time, e *effects) {
	live := c.det.live()
	if live == nil || c.leaving {
		return
	}
	reported := c.det.reported()
	membersChanged := !slices.Equal(live, c.view.Members)
	if !membersChanged && c.view.Version > 0 && equalReports(reported, c.view.Reported) {
		return
	}
	if membersChanged {
		e.joined, e.dropped = diff(c.view.Members, live)
		e.reset = append(e.reset, e.dropped...)
	}
	c.view = View{Self: c.self, Members: live, Reported: reported, Version: c.view.Version + 1, Published: now}
	v := c.view.Clone()
	e.publish = &v
	if !c.awaitApplied {
		c.report(e, live)
		return
	}
	if len(c.history) >= maxHistory {
		delete(c.history, slices.Min(slices.Collect(maps.Keys(c.history))))
	}
	c.history[c.view.Version] = live
}

// report changes the view peers are told and tells the live ones at once.
func (c *core) report(e *effects, members []string) {
	if slices.Equal(members, c.reported) || c.leaving {
		return
	}
	c.reported = members
	c.heartbeat(e, c.livePeers()...)
}

// heartbeat adds one heartbeat to peers (none while leaving).
func (c *core) heartbeat(e *effects, to ...string) {
	if len(to) == 0 || c.leaving {
		return
	}
	e.send = append(e.send, outgoing{to: to, hb: c.next()})
}

// next makes this member's next heartbeat.
func (c *core) next() *clusterv1.Heartbeat {
	c.seq++
	return &clusterv1.Heartbeat{Cluster: c.cluster, Address: c.self, Incarnation: c.incarnation, Seq: c.seq, View: slices.Clone(c.reported)}
}

// livePeers are the peers the detector considers live: they get every heartbeat. Heartbeats
// never go to a peer that is not live (see probeDown).
func (c *core) livePeers() []string {
	return slices.DeleteFunc(slices.Clone(c.peers), func(p string) bool { return !c.det.isLive(p) })
}

// probeDown asks for a TCP probe of each peer that is not live and has none in flight. Heartbeats
// never go to a peer that is down: protoactor's endpoint writer to an unreachable address blocks
// in its connect loop for up to ~20 s (5 attempts, 2 s apart, uninterruptible), and stopping the
// remote then waits 10 s for it. A peer that listens is greeted (probed).
func (c *core) probeDown(e *effects) {
	if c.leaving {
		return
	}
	for _, p := range c.peers {
		if !c.probing[p] && !c.det.isLive(p) {
			c.probing[p] = true
			e.probe = append(e.probe, p)
		}
	}
}

// firstWarning says whether an ignored heartbeat is the first from peer for reason, to be logged
// at Warn (later ones at Debug). Late deliveries and repeated leaves are normal: never warned.
func (c *core) firstWarning(peer, reason string) bool {
	if reason == ignoredStale || reason == ignoredLeft {
		return false
	}
	key := peer + "|" + reason
	if c.warned[key] {
		return false
	}
	if len(c.warned) < maxWarned {
		c.warned[key] = true
	}
	return true
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
