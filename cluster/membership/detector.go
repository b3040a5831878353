package membership

import (
	"slices"
	"time"

	"github.com/probeactor/probeactor/wire/clusterv1"
)

// Why a heartbeat was not taken into account: the label of the ignored-heartbeats counter.
const (
	ignoredInvalid     = "invalid"      // fails clusterv1 validation
	ignoredCluster     = "cluster"      // another cluster's name
	ignoredUnknownPeer = "unknown_peer" // an address that is not a configured peer
	ignoredSelf        = "self"         // claims to be this member
	ignoredStale       = "stale"        // an older incarnation, or a seq already seen
	ignoredLeft        = "left"         // an incarnation that announced it was leaving
)

// detector is the failure detector: a pure state machine over heartbeats and time. A peer is live
// from the first heartbeat of an incarnation until failureTimeout passes without a newer one (or
// it announces it is leaving). The first round is complete (ready) once every peer has been heard
// or failureTimeout has passed since the start, whichever comes first.
type detector struct {
	cluster string
	self    string
	timeout time.Duration
	start   time.Time
	ready   bool
	peers   map[string]*peerState // every configured peer but self
}

type peerState struct {
	live        bool
	incarnation uint64    // of the newest heartbeat accepted
	seq         uint64    // of the newest heartbeat accepted
	heard       time.Time // when the newest accepted heartbeat arrived
	view        []string  // the view that heartbeat reported
	stopping    []string  // the pods that heartbeat said its sender still stops
	firstHeard  time.Time // when this incarnation was first heard
	left        uint64    // an incarnation that announced its leave (never admitted again)
	liveSince   time.Time // when it became live (zero while it is not)
}

// heardOutcome is what one heartbeat did.
type heardOutcome struct {
	// ignored is the reason the heartbeat was not taken into account, "" when it was.
	ignored string
	// changed: the live set or a live peer's reported view changed.
	changed bool
	// admitted: the peer became live: greet it, so it hears this member without waiting a tick.
	admitted bool
	// restarted: a new incarnation of a peer that is still live (it restarted within the failure
	// timeout). The connection to the old one is stale: protoactor's endpoint writer created for
	// a send while the peer was down retries its connect for up to ~20 s with everything queued
	// behind it, so reset it. (When a peer is dropped from the view, core resets its endpoint,
	// and heartbeats go to peers that are not live only after a successful probe.)
	restarted bool
	// repair: the peer is live here, but its acknowledgements show that this member's heartbeats
	// stopped reaching it (core decides it: the grants are the core's). Reset that endpoint and
	// greet the peer; at most once per repairAfter.
	repair bool
}

func newDetector(cluster, self string, peers []string, timeout time.Duration, now time.Time) *detector {
	d := &detector{cluster: cluster, self: self, timeout: timeout, start: now, peers: map[string]*peerState{}}
	for _, p := range peers {
		if p != self {
			d.peers[p] = &peerState{}
		}
	}
	if len(d.peers) == 0 {
		d.ready = true
	}
	return d
}

// heard takes one heartbeat received at now.
func (d *detector) heard(hb *clusterv1.Heartbeat, now time.Time) heardOutcome {
	if err := hb.Validate(); err != nil {
		return heardOutcome{ignored: ignoredInvalid}
	}
	if hb.GetCluster() != d.cluster {
		return heardOutcome{ignored: ignoredCluster}
	}
	if hb.GetAddress() == d.self {
		return heardOutcome{ignored: ignoredSelf}
	}
	p, ok := d.peers[hb.GetAddress()]
	if !ok {
		return heardOutcome{ignored: ignoredUnknownPeer}
	}
	inc, seq := hb.GetIncarnation(), hb.GetSeq()
	switch {
	case inc == p.left:
		return heardOutcome{ignored: ignoredLeft}
	case inc < p.incarnation, inc == p.incarnation && seq <= p.seq:
		return heardOutcome{ignored: ignoredStale}
	default:
	}
	var out heardOutcome
	newIncarnation := inc != p.incarnation
	if newIncarnation {
		p.firstHeard = now
	}
	p.incarnation, p.seq, p.heard = inc, seq, now
	if !slices.Equal(p.stopping, hb.GetStopping()) {
		p.stopping, out.changed = slices.Clone(hb.GetStopping()), true
	}
	if hb.GetLeaving() {
		p.left = inc
		if p.live {
			p.live, p.view, p.stopping, p.liveSince, out.changed = false, nil, nil, time.Time{}, true
		}
		d.completeRound(now)
		return out
	}
	out.restarted = p.live && newIncarnation
	if !p.live {
		out.admitted = true
		p.live, p.liveSince, out.changed = true, now, true
	}
	if !slices.Equal(p.view, hb.GetView()) {
		p.view, out.changed = slices.Clone(hb.GetView()), true
	}
	if d.completeRound(now) {
		out.changed = true
	}
	return out
}

// tick expires peers not heard within the failure timeout and completes the first round when its
// time is up; it reports whether the live set changed or the membership became ready.
func (d *detector) tick(now time.Time) bool {
	changed := false
	for _, p := range d.peers {
		if p.live && now.Sub(p.heard) > d.timeout {
			p.live, p.view, p.stopping, p.liveSince, changed = false, nil, nil, time.Time{}, true
		}
	}
	if d.completeRound(now) {
		changed = true
	}
	return changed
}

// completeRound makes the detector ready when every peer was heard or the timeout has passed since
// the start; it reports whether that happened now.
func (d *detector) completeRound(now time.Time) bool {
	if d.ready {
		return false
	}
	all := true
	for _, p := range d.peers {
		all = all && p.live
	}
	if all || now.Sub(d.start) >= d.timeout {
		d.ready = true
		return true
	}
	return false
}

// live returns the live members' addresses in order, self included; nil before the first round
// is complete.
func (d *detector) live() []string {
	if !d.ready {
		return nil
	}
	out := []string{d.self}
	for a, p := range d.peers {
		if p.live {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// reported returns each live peer's last reported view.
func (d *detector) reported() map[string][]string {
	out := map[string][]string{}
	for a, p := range d.peers {
		if p.live {
			out[a] = slices.Clone(p.view)
		}
	}
	return out
}

// stoppingOf returns what each live peer said it still stops (peers stopping nothing left out).
func (d *detector) stoppingOf() map[string][]string {
	out := map[string][]string{}
	for a, p := range d.peers {
		if p.live && len(p.stopping) > 0 {
			out[a] = slices.Clone(p.stopping)
		}
	}
	return out
}

// evidence says whether peer's reports count as evidence that a member is out of the cluster:
// its incarnation was first heard a failure timeout ago or more, so any grant its previous
// incarnation gave has run out.
func (d *detector) evidence(peer string, now time.Time) bool {
	p, ok := d.peers[peer]
	return ok && !p.firstHeard.IsZero() && now.Sub(p.firstHeard) >= d.timeout
}

// isLive says whether peer is live now.
func (d *detector) isLive(peer string) bool {
	p, ok := d.peers[peer]
	return ok && p.live
}
