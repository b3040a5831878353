package membership

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/probeactor/probeactor/cluster/ownership"
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
	now  time.Time // of the event being handled (heartbeats are stamped with it)
	seq  uint64    // of the last heartbeat made
	view View      // the last published view (Version 0: none yet)
	// reported is the view peers are told (in every heartbeat): the last published one, or with
	// awaitApplied the last one the subscriber acknowledged; history keeps the members of the
	// published versions not acknowledged yet.
	reported []string
	history  map[uint64][]string
	leaving  bool
	probing  map[string]bool // peers with a TCP probe in flight
	warned   map[string]bool // (peer, reason) pairs of ignored heartbeats already warned about

	// The quorum lease (see the package doc, "Quorum and leases").
	all     []string             // every configured member, self included, sorted
	timeout time.Duration        // the failure timeout
	started time.Time            // when this core was made: its own absence evidence counts from started+timeout
	sent    map[uint64]time.Time // seq → when this member made that heartbeat (the last timeout's worth)
	// granted: peer → when this member made the newest of its heartbeats the peer acknowledged
	// (this incarnation); the peer's grant holds until granted+timeout.
	granted map[string]time.Time
	// gone: configured member → since when a quorum of current reports has left it out.
	gone map[string]time.Time
	left map[string]bool // peers whose last incarnation announced its leave (and has not come back)
	// repairAfter: how long a live peer may go without acknowledging a heartbeat of this member
	// before the connection to it is deemed broken; repaired: when each was last reset for it.
	repairAfter time.Duration
	repaired    map[string]time.Time
	stopping    []string // the pods this member still stops (SetStopping), told in every heartbeat

	// The shared restart budget (Config.RestartBudget; nil without one).
	ledger *ledger
	acked  map[string]peerAck // live peer → the newest heartbeat of this incarnation it acknowledged
}

// peerAck is the newest heartbeat seq of this member that an incarnation of a peer acknowledged.
type peerAck struct{ inc, seq uint64 }

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
	// lease is this member's new quorum lease end, when it changed (Config.Lease gets it).
	lease *time.Time
	// probe lists peers that are not live to check with a TCP connect (then probed).
	probe []string

	took    []string     // claims taken under the shared restart budget (log)
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
		det:         newDetector(cfg.Cluster, cfg.Self, cfg.Peers, cfg.FailureTimeout, now),
		repairAfter: cfg.repairAfter(), repaired: map[string]time.Time{},
		history: map[uint64][]string{}, probing: map[string]bool{}, warned: map[string]bool{},
		all: slices.Sorted(slices.Values(cfg.Peers)), timeout: cfg.FailureTimeout, started: now,
		sent: map[uint64]time.Time{}, granted: map[string]time.Time{}, gone: map[string]time.Time{}, left: map[string]bool{},
		acked: map[string]peerAck{},
	}
	if b := cfg.RestartBudget; b.N > 0 {
		c.ledger = newLedger(cfg.Self, cfg.Incarnation, b.N, b.Window, cfg.FailureTimeout)
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
	c.now = now
	c.update(now, &e)
	c.probeDown(&e)
	return e
}

// tick: one heartbeat interval passed. Peers silent for longer than the failure timeout are
// dropped, every live peer gets a heartbeat, every peer that is not live (and not being probed)
// is probed.
func (c *core) tick(now time.Time) effects {
	var e effects
	c.now = now
	if c.leaving {
		return e
	}
	c.det.tick(now)
	c.update(now, &e)
	c.heartbeat(&e, c.livePeers()...)
	c.probeDown(&e)
	return e
}

// heard takes one heartbeat that arrived at now; canReply says whether it came as a request (a
// leave does) that can be answered. A leave of a listed peer of this cluster is acknowledged with
// this member's own heartbeat, also when it is a repeated one (the leaver asks until it hears
// back, see Member.Stop).
func (c *core) heard(hb *clusterv1.Heartbeat, now time.Time, canReply bool) effects {
	c.now = now
	out := c.det.heard(hb, now)
	addr := hb.GetAddress()
	if out.ignored == "" && !hb.GetLeaving() {
		c.grant(hb)
		out.repair = c.lost(addr, now)
		if c.ledger != nil {
			c.ledger.heard(addr, hb.GetIncarnation(), hb.GetClaims(), now, c.det.isLive)
		}
	}
	e := effects{heard: out}
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
	if hb.GetLeaving() {
		c.left[addr] = true
	} else {
		delete(c.left, addr)
	}
	c.update(now, &e)
	return e
}

// probed: the TCP probe of peer ended; a peer that listens (and is still not live) is greeted.
func (c *core) probed(peer string, ok bool, now time.Time) effects {
	var e effects
	c.now = now
	delete(c.probing, peer)
	if ok && !c.det.isLive(peer) {
		c.heartbeat(&e, peer)
	}
	return e
}

// applied: the subscriber has acted on the view of version (Member.Applied). With awaitApplied,
// that view (and nothing newer) becomes the one peers are told; a version already acknowledged
// or dropped from the history changes nothing.
func (c *core) applied(version uint64, now time.Time) effects {
	var e effects
	c.now = now
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
// live peers to announce it to (Member.Stop sends it until each acknowledges). A member that still
// stops pods (setStopping: a stop that outlasted its budget, a pod held for the next node) tells
// no peer, and stopping says how many it stops: a peer that heard the leave would count the member
// Left and wait for it no longer (ownership's rule 3), while those pods may still run here. Untold,
// the peers drop it after the failure timeout and wait out each pod's grace period from then, as
// for a crash.
func (c *core) leave(now time.Time) (hb *clusterv1.Heartbeat, peers []string, stopping int) {
	c.now = now
	c.leaving = true
	hb = c.next()
	hb.Leaving = true
	if len(c.stopping) > 0 {
		return hb, nil, len(c.stopping)
	}
	return hb, slices.DeleteFunc(slices.Clone(c.view.Members), func(p string) bool { return p == c.self }), 0
}

// update publishes the detector's live set with the peers' reported views and the quorum's
// state (the lease, the current reports, the stopping pods, the members a quorum left out) when
// any of it changed since the last view, and resets the endpoints of the members it drops
// (protoactor would keep a writer to a peer that is gone, and a stale one once it is back).
// Without awaitApplied peers are told the new members at once.
func (c *core) update(now time.Time, e *effects) {
	live := c.det.live()
	if live == nil || c.leaving {
		return
	}
	reported := c.det.reported()
	current := c.current(now, live)
	stopping := c.det.stoppingOf()
	c.updateGone(now, live, reported, current)
	lease := c.lease(now)
	taken, waiting, took := c.decide(now, live, lease)
	e.took = append(e.took, took...)
	membersChanged := !slices.Equal(live, c.view.Members)
	if !membersChanged && c.view.Version > 0 && equalReports(reported, c.view.Reported) && equalReports(stopping, c.view.Stopping) &&
		lease.Equal(c.view.LeaseUntil) && maps.EqualFunc(current, c.view.Current, time.Time.Equal) &&
		maps.EqualFunc(c.gone, c.view.Gone, time.Time.Equal) && maps.Equal(c.left, c.view.Left) &&
		maps.EqualFunc(taken, c.view.Taken, time.Time.Equal) && maps.Equal(waiting, c.view.Waiting) {
		return
	}
	if membersChanged {
		e.joined, e.dropped = diff(c.view.Members, live)
		e.reset = append(e.reset, e.dropped...)
	}
	if !lease.Equal(c.view.LeaseUntil) {
		e.lease = &lease
	}
	c.view = View{Self: c.self, All: slices.Clone(c.all), Members: live, Reported: reported, Version: c.view.Version + 1, Published: now,
		LeaseUntil: lease, Current: current, Stopping: stopping, Gone: maps.Clone(c.gone), Left: maps.Clone(c.left),
		Taken: taken, Waiting: waiting}
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

// grant takes the acknowledgement of this member's heartbeats that hb carries: its sender heard
// the heartbeat this member made at sent[seq], so it keeps this member in its view until the
// failure timeout after that (its own clock), and this member may count on its grant until then.
func (c *core) grant(hb *clusterv1.Heartbeat) {
	for _, a := range hb.GetAcks() {
		if a.GetAddress() != c.self || a.GetIncarnation() != c.incarnation {
			continue
		}
		if at, ok := c.sent[a.GetSeq()]; ok && at.After(c.granted[hb.GetAddress()]) {
			c.granted[hb.GetAddress()] = at
		}
		if prev := c.acked[hb.GetAddress()]; prev.inc != hb.GetIncarnation() || prev.seq < a.GetSeq() {
			c.acked[hb.GetAddress()] = peerAck{inc: hb.GetIncarnation(), seq: a.GetSeq()}
		}
	}
}

// lost says whether live peer p's heartbeats show that this member's heartbeats stopped
// reaching it: it has been live here for repairAfter, and the newest heartbeat of this member it
// acknowledged was made more than repairAfter ago (heartbeats go to it every interval). That is a
// one-way loss (protoactor's endpoint to p can drop what is sent without an error here: a writer
// that stopped after a failed send stays mapped to the address when its stream ended with EOF),
// repaired by resetting the endpoint, before p's failure timeout would make it drop this member.
// At most once per repairAfter.
func (c *core) lost(p string, now time.Time) bool {
	ps := c.det.peers[p]
	if ps == nil || !ps.live {
		return false
	}
	since := c.granted[p]
	if ps.liveSince.After(since) {
		since = ps.liveSince
	}
	if now.Sub(since) < c.repairAfter || now.Sub(c.repaired[p]) < c.repairAfter {
		return false
	}
	c.repaired[p] = now
	return true
}

// current returns, for each live peer, until when its report is current (its grant holds).
func (c *core) current(now time.Time, live []string) map[string]time.Time {
	out := map[string]time.Time{}
	for _, p := range live {
		if until := c.granted[p].Add(c.timeout); p != c.self && !c.granted[p].IsZero() && until.After(now) {
			out[p] = until
		}
	}
	return out
}

// lease returns until when this member holds its quorum lease: the latest time at which the
// members whose grants still hold, with this member, are a quorum (ownership.Quorate). A member
// alone in its configured cluster holds it for good (farFuture); zero: none now.
func (c *core) lease(now time.Time) time.Time {
	if ownership.Quorate([]string{c.self}, c.all) {
		return farFuture
	}
	type grant struct {
		peer  string
		until time.Time
	}
	var gs []grant
	for p, at := range c.granted {
		if until := at.Add(c.timeout); until.After(now) {
			gs = append(gs, grant{p, until})
		}
	}
	slices.SortFunc(gs, func(a, b grant) int { return cmp.Or(b.until.Compare(a.until), cmp.Compare(a.peer, b.peer)) })
	seen := []string{c.self}
	for _, g := range gs {
		seen = append(seen, g.peer)
		if ownership.Quorate(seen, c.all) {
			return g.until
		}
	}
	return time.Time{}
}

// farFuture is the lease of a one-member cluster (no peer can take its pods).
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// updateGone keeps, for each configured member outside this member's view, since when a quorum
// of members has left it out: this member (its view, once it has run for the failure timeout,
// so that grants its previous incarnation gave have run out) and the live peers whose reports
// are current and count as evidence (first heard, in their incarnation, a failure timeout ago:
// a peer that restarted does not remember the grants it gave before). A member a quorum no
// longer leaves out loses its entry.
func (c *core) updateGone(now time.Time, live []string, reported map[string][]string, current map[string]time.Time) {
	for _, m := range c.all {
		if m == c.self || slices.Contains(live, m) {
			delete(c.gone, m)
			continue
		}
		var out []string
		if !now.Before(c.started.Add(c.timeout)) {
			out = append(out, c.self)
		}
		for p, view := range reported {
			if _, ok := current[p]; ok && len(view) > 0 && !slices.Contains(view, m) && c.det.evidence(p, now) {
				out = append(out, p)
			}
		}
		if !ownership.Quorate(out, c.all) {
			delete(c.gone, m)
		} else if _, ok := c.gone[m]; !ok {
			c.gone[m] = now
		}
	}
}

// setStopping replaces the pods this member tells its peers it still stops. A shorter list is
// told at once (a gainer waits for it); a longer one goes with the next heartbeat, which the
// view that caused it (applied) sends anyway.
func (c *core) setStopping(uids []string, now time.Time) effects {
	var e effects
	c.now = now
	shrunk := len(uids) < len(c.stopping) || !isSubset(uids, c.stopping)
	c.stopping = slices.Clone(uids)
	if len(c.stopping) > clusterv1.MaxStopping {
		c.stopping = c.stopping[:clusterv1.MaxStopping]
	}
	if shrunk || !c.awaitApplied {
		c.heartbeat(&e, c.livePeers()...)
	}
	return e
}

// setClaims replaces the kills this member waits to take under the shared restart budget
// (Member.Want); new claims are told to the live peers at once, and a claim the rules allow is
// taken in the view this publishes.
func (c *core) setClaims(keys []string, now time.Time) effects {
	var e effects
	c.now = now
	if c.ledger == nil || c.leaving {
		return e
	}
	if c.ledger.want(keys, now, c.seq+1) {
		c.heartbeat(&e, c.livePeers()...)
	}
	c.update(now, &e)
	return e
}

// decide applies the shared restart budget's rules at now (see ledger) and returns this member's
// claims: the taken ones still in the window, the waiting ones with why, and the ones it took now
// (nil without a budget).
func (c *core) decide(now time.Time, live []string, lease time.Time) (taken map[string]time.Time, waiting map[string]string, took []string) {
	if c.ledger == nil {
		return nil, nil, nil
	}
	acked := map[string]uint64{}
	for _, p := range live {
		if ps := c.det.peers[p]; ps != nil && c.acked[p].inc == ps.incarnation {
			acked[p] = c.acked[p].seq
		}
	}
	took = c.ledger.decide(now, now.Before(lease), c.seq+1, fences{all: c.all, live: live, gone: c.gone, left: c.left, acked: acked})
	taken, waiting = c.ledger.state()
	return taken, waiting, took
}

func isSubset(small, big []string) bool {
	for _, s := range small {
		if !slices.Contains(big, s) {
			return false
		}
	}
	return true
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
	c.sent[c.seq] = c.now
	for seq, at := range c.sent {
		if c.now.Sub(at) > c.timeout {
			delete(c.sent, seq) // its grant would have run out already
		}
	}
	hb := &clusterv1.Heartbeat{Cluster: c.cluster, Address: c.self, Incarnation: c.incarnation, Seq: c.seq, View: slices.Clone(c.reported),
		Stopping: slices.Clone(c.stopping)}
	if c.ledger != nil {
		hb.Claims = c.ledger.list(c.now)
	}
	for _, p := range c.livePeers() {
		ps := c.det.peers[p]
		hb.Acks = append(hb.Acks, &clusterv1.Heartbeat_Ack{Address: p, Incarnation: ps.incarnation, Seq: ps.seq})
	}
	return hb
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
