package membership

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/probeactor/probeactor/wire/clusterv1"
)

// ledger is one member's part of the cluster's shared restart budget (node run --restart-budget
// with --cluster): a pure state machine the core drives from its own events, with no clock and no
// I/O. See the package doc, "The shared restart budget", for the rules and why they hold.
//
// A claim is one kill this member wants to make. It is ordered in the cluster by (lamport,
// origin, incarnation): its lamport is higher than that of every claim its origin knew when it
// made it. It goes out in every heartbeat from the one numbered firstSeq on; this member takes it
// (the kill may happen) only while it holds its quorum lease, once every other configured member
// has either acknowledged a heartbeat that carried it or was fenced (left out by a quorum, or
// announced its leave) before it was made, and when fewer than N claims known here come before it:
// every taken claim still in the window, whatever its place, and every waiting claim ordered
// before it.
type ledger struct {
	self   string
	inc    uint64
	n      int
	expiry time.Duration // the budget's window plus the margin: how long a taken claim counts
	fence  time.Duration // added to a Gone time: clock rates and the scheduling of the fenced member's stop

	lamport uint64 // the highest lamport made or heard
	own     []*ownClaim
	direct  map[string]peerClaims // live peer → the claims its newest heartbeat listed as its own
	relayed map[claimID]relayedClaim
	fenced  map[string]time.Time // configured member out of the view → since when it is fenced (here)
}

type claimID struct {
	origin  string
	inc     uint64
	lamport uint64
}

func (a claimID) compare(b claimID) int {
	return cmp.Or(cmp.Compare(a.lamport, b.lamport), cmp.Compare(a.origin, b.origin), cmp.Compare(a.inc, b.inc))
}

type ownClaim struct {
	key      string
	lamport  uint64
	made     time.Time // when it was made (or made anew, see decide)
	firstSeq uint64    // the first heartbeat that carries it (every later one does too)
	taken    time.Time // zero while it waits
	waits    string    // why it waits (for the view)
}

type heardClaim struct {
	id    claimID
	key   string
	taken time.Time // zero: waiting
}

type peerClaims struct {
	inc    uint64
	claims []heardClaim
}

type relayedClaim struct {
	key   string
	taken time.Time // on this member's clock, when first learned
}

func newLedger(self string, inc uint64, n int, window, timeout time.Duration) *ledger {
	return &ledger{self: self, inc: inc, n: n, expiry: window + window/10 + timeout, fence: timeout / 4,
		direct: map[string]peerClaims{}, relayed: map[claimID]relayedClaim{}, fenced: map[string]time.Time{}}
}

// want replaces the kills this member waits to take, in the order asked: a key not waiting yet
// gets a new claim (after the others), a waiting claim whose key is no longer wanted is withdrawn,
// a taken one stays until it leaves the window. nextSeq is the seq of the next heartbeat this
// member makes: the first to carry a new claim. It reports whether the waiting set changed.
func (l *ledger) want(keys []string, now time.Time, nextSeq uint64) bool {
	changed := false
	wanted := map[string]bool{}
	for _, k := range keys {
		wanted[k] = true
	}
	l.own = slices.DeleteFunc(l.own, func(c *ownClaim) bool {
		drop := c.taken.IsZero() && !wanted[c.key]
		changed = changed || drop
		return drop
	})
	for _, k := range keys {
		if slices.ContainsFunc(l.own, func(c *ownClaim) bool { return c.key == k }) {
			continue
		}
		l.lamport++
		l.own = append(l.own, &ownClaim{key: k, lamport: l.lamport, made: now, firstSeq: nextSeq})
		changed = true
	}
	return changed
}

// heard takes the claims of a heartbeat accepted from peer (incarnation inc) at now: the ones of
// its own current incarnation replace what it listed before; one of anyone else (a relay) is
// remembered, from the first time it is heard, as taken: at the age the sender gave it, or now for
// a waiting one, since its origin may take it any time (a waiting claim of an origin that live
// says is live is left to what the origin itself lists, and this incarnation's own are known).
func (l *ledger) heard(peer string, inc uint64, claims []*clusterv1.Heartbeat_Claim, now time.Time, live func(string) bool) {
	if prev, ok := l.direct[peer]; ok && prev.inc != inc {
		l.retire(peer, now)
	}
	pc := peerClaims{inc: inc}
	for _, c := range claims {
		id := claimID{origin: c.GetOrigin(), inc: c.GetIncarnation(), lamport: c.GetLamport()}
		l.lamport = max(l.lamport, id.lamport)
		var taken time.Time
		if c.GetTaken() {
			taken = now.Add(-time.Duration(c.GetAgeMs()) * time.Millisecond)
		}
		switch {
		case id.origin == peer && id.inc == inc:
			pc.claims = append(pc.claims, heardClaim{id: id, key: c.GetKey(), taken: taken})
		case id.origin == l.self && id.inc == l.inc:
		case taken.IsZero() && id.origin != l.self && live(id.origin):
		default:
			if taken.IsZero() {
				taken = now
			}
			if _, ok := l.relayed[id]; !ok && now.Sub(taken) < l.expiry {
				l.relayed[id] = relayedClaim{key: c.GetKey(), taken: taken}
			}
		}
	}
	l.direct[peer] = pc
}

// retire turns what a peer listed as its own into relayed taken claims: it is no longer heard (or
// restarted), so a claim it listed as waiting may have been taken since; it counts as taken now.
func (l *ledger) retire(peer string, now time.Time) {
	for _, c := range l.direct[peer].claims {
		taken := c.taken
		if taken.IsZero() {
			taken = now
		}
		if _, ok := l.relayed[c.id]; !ok {
			l.relayed[c.id] = relayedClaim{key: c.key, taken: taken}
		}
	}
	delete(l.direct, peer)
}

// fences is what the core knows of the members out of its view: for each, since when a quorum left
// it out (gone), and whether it announced its leave.
type fences struct {
	all   []string
	live  []string
	gone  map[string]time.Time
	left  map[string]bool
	acked map[string]uint64 // live peer → the newest heartbeat seq of this incarnation it acknowledged
}

// decide takes, at now, the waiting claims the rules allow (see ledger), in their order, and
// returns the keys it took. quorate says whether this member holds its quorum lease; nextSeq is
// the seq of the next heartbeat it makes (the first to carry a claim made anew).
func (l *ledger) decide(now time.Time, quorate bool, nextSeq uint64, f fences) []string {
	for p := range l.direct {
		if !slices.Contains(f.live, p) {
			l.retire(p, now)
		}
	}
	for _, m := range f.all {
		switch {
		case m == l.self || slices.Contains(f.live, m):
			delete(l.fenced, m)
		case f.left[m]:
			if _, ok := l.fenced[m]; !ok {
				l.fenced[m] = now
			}
		case !f.gone[m].IsZero():
			at := f.gone[m].Add(l.fence)
			if prev, ok := l.fenced[m]; !ok || at.Before(prev) {
				l.fenced[m] = at
			}
		default:
			delete(l.fenced, m)
		}
	}
	l.expire(now)
	t := l.tally(now)
	var took []string
	for _, c := range l.own {
		if !c.taken.IsZero() {
			continue
		}
		if !quorate {
			c.waits = "this member holds no quorum lease"
			continue
		}
		var waitFor []string
		remake := false
		for _, m := range f.all {
			if m == l.self {
				continue
			}
			if slices.Contains(f.live, m) {
				if f.acked[m] < c.firstSeq {
					waitFor = append(waitFor, m)
				}
				continue
			}
			at, ok := l.fenced[m]
			switch {
			case !ok:
				waitFor = append(waitFor, m)
			case at.After(c.made):
				remake = true
			}
		}
		if remake {
			// A member it waited for was fenced after it was made: what that member took before
			// reaches this member only through others, as a claim made after the fence is
			// certain to hear it. Make it anew, last in the order.
			t.remove(l.ownID(c))
			l.lamport++
			c.lamport, c.made, c.firstSeq = l.lamport, now, nextSeq
			t.insert(l.ownID(c))
			c.waits = "made anew: a member it waited for was fenced"
			continue
		}
		if len(waitFor) > 0 {
			c.waits = "waits for the acknowledgement of " + fmt.Sprint(waitFor)
			continue
		}
		if before := t.before(l.ownID(c)); before >= l.n {
			c.waits = fmt.Sprintf("the cluster's budget is spent: %d claims in the window come first", before)
			continue
		}
		c.taken, c.waits = now, ""
		t.remove(l.ownID(c))
		t.taken[l.ownID(c)] = true
		took = append(took, c.key)
	}
	slices.SortStableFunc(l.own, func(a, b *ownClaim) int { return cmp.Compare(a.lamport, b.lamport) })
	return took
}

// tally is what decide counts a claim against: the claims known here that are still in the
// window, taken (from any source, whatever their place in the order) or waiting (sorted, none of
// them taken). It is made once per decide: a heartbeat may carry thousands of claims.
type tally struct {
	taken   map[claimID]bool
	waiting []claimID
}

func (l *ledger) tally(now time.Time) tally {
	t := tally{taken: map[claimID]bool{}}
	waiting := map[claimID]bool{}
	add := func(id claimID, taken time.Time) {
		switch {
		case taken.IsZero():
			waiting[id] = true
		case now.Sub(taken) < l.expiry:
			t.taken[id] = true
		}
	}
	for _, o := range l.own {
		add(l.ownID(o), o.taken)
	}
	for _, pc := range l.direct {
		for _, h := range pc.claims {
			add(h.id, h.taken)
		}
	}
	for id, r := range l.relayed {
		add(id, r.taken)
	}
	for id := range waiting {
		if !t.taken[id] {
			t.waiting = append(t.waiting, id)
		}
	}
	slices.SortFunc(t.waiting, claimID.compare)
	return t
}

// before counts the claims that come before the waiting claim id: every taken claim still in the
// window and every waiting claim ordered before it.
func (t *tally) before(id claimID) int {
	i, _ := slices.BinarySearchFunc(t.waiting, id, claimID.compare)
	return len(t.taken) + i
}

func (t *tally) remove(id claimID) {
	if i, ok := slices.BinarySearchFunc(t.waiting, id, claimID.compare); ok {
		t.waiting = slices.Delete(t.waiting, i, i+1)
	}
}

func (t *tally) insert(id claimID) {
	i, _ := slices.BinarySearchFunc(t.waiting, id, claimID.compare)
	t.waiting = slices.Insert(t.waiting, i, id)
}

func (l *ledger) ownID(c *ownClaim) claimID {
	return claimID{origin: l.self, inc: l.inc, lamport: c.lamport}
}

// expire forgets the taken claims that left the window.
func (l *ledger) expire(now time.Time) {
	l.own = slices.DeleteFunc(l.own, func(c *ownClaim) bool { return !c.taken.IsZero() && now.Sub(c.taken) >= l.expiry })
	maps.DeleteFunc(l.relayed, func(_ claimID, r relayedClaim) bool { return now.Sub(r.taken) >= l.expiry })
}

// list is what a heartbeat made at now carries: this member's own claims, then the others it
// knows: its peers' own (waiting and taken) and the relayed ones, at most clusterv1.MaxClaims.
// Waiting claims are relayed too: a member that does not hear their origin counts them as taken
// (heard), which is what keeps a member fenced from another from missing a claim it may take.
func (l *ledger) list(now time.Time) []*clusterv1.Heartbeat_Claim {
	var out []*clusterv1.Heartbeat_Claim
	add := func(id claimID, key string, taken time.Time) {
		if len(out) >= clusterv1.MaxClaims {
			return
		}
		c := &clusterv1.Heartbeat_Claim{Origin: id.origin, Incarnation: id.inc, Lamport: id.lamport, Key: key}
		if !taken.IsZero() {
			c.Taken, c.AgeMs = true, uint64(max(0, now.Sub(taken).Milliseconds()))
		}
		out = append(out, c)
	}
	for _, c := range l.own {
		add(l.ownID(c), c.key, c.taken)
	}
	var others []claimID
	known := map[claimID]relayedClaim{}
	for _, pc := range l.direct {
		for _, h := range pc.claims {
			if h.taken.IsZero() || now.Sub(h.taken) < l.expiry {
				others = append(others, h.id)
				known[h.id] = relayedClaim{key: h.key, taken: h.taken}
			}
		}
	}
	for id, r := range l.relayed {
		if _, ok := known[id]; !ok {
			others = append(others, id)
			known[id] = r
		}
	}
	slices.SortFunc(others, claimID.compare)
	for _, id := range others {
		add(id, known[id].key, known[id].taken)
	}
	return out
}

// state is what the view shows of this member's own claims: the taken ones still in the window
// (key → when) and the waiting ones (key → why).
func (l *ledger) state() (taken map[string]time.Time, waiting map[string]string) {
	taken, waiting = map[string]time.Time{}, map[string]string{}
	for _, c := range l.own {
		if c.taken.IsZero() {
			waiting[c.key] = c.waits
		} else {
			taken[c.key] = c.taken
		}
	}
	return taken, waiting
}
