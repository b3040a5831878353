package membership

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/wire/clusterv1"
)

const (
	la, lb, lc = "10.0.0.1:7101", "10.0.0.2:7101", "10.0.0.3:7101"
	lwindow    = time.Minute
	ltimeout   = 2 * time.Second
)

// lexpiry is how long a taken claim counts: the window, 10 % for clock rates, and the failure timeout.
const lexpiry = lwindow + lwindow/10 + ltimeout

func lat(d time.Duration) time.Time { return t0.Add(d) }

// live3 is a three-member cluster with every member live; acked gives each peer's newest ack.
func live3(acked map[string]uint64) fences {
	return fences{all: []string{la, lb, lc}, live: []string{la, lb, lc}, acked: acked}
}

func claim(origin string, inc, lamport uint64, key string, takenAgo time.Duration) *clusterv1.Heartbeat_Claim {
	c := &clusterv1.Heartbeat_Claim{Origin: origin, Incarnation: inc, Lamport: lamport, Key: key}
	if takenAgo >= 0 {
		c.Taken, c.AgeMs = true, uint64(takenAgo.Milliseconds())
	}
	return c
}

const waiting = -1

func allLive(string) bool { return true }

// A member alone in its cluster takes N claims, the next waits for the window, in the order asked.
func TestLedgerAloneTakesNPerWindow(t *testing.T) {
	l := newLedger(la, 1, 2, lwindow, ltimeout)
	alone := fences{all: []string{la}, live: []string{la}}
	require.True(t, l.want([]string{"k1", "k2", "k3"}, lat(0), 1))
	assert.Equal(t, []string{"k1", "k2"}, l.decide(lat(0), true, 1, alone))
	taken, waits := l.state()
	assert.Len(t, taken, 2)
	assert.Contains(t, waits["k3"], "the cluster's budget is spent: 2 claims in the window come first")
	assert.Empty(t, l.decide(lat(lexpiry-time.Millisecond), true, 1, alone), "the window and its margin hold them")
	assert.Equal(t, []string{"k3"}, l.decide(lat(lexpiry), true, 1, alone))
	taken, _ = l.state()
	assert.Equal(t, map[string]time.Time{"k3": lat(lexpiry)}, taken, "the expired ones are forgotten")
}

// A claim is taken only while the member holds its quorum lease and once every live peer has
// acknowledged a heartbeat that carries it (seq ≥ the first one made after the claim).
func TestLedgerWaitsForEveryAcknowledgementAndTheLease(t *testing.T) {
	l := newLedger(la, 1, 3, lwindow, ltimeout)
	l.want([]string{"k1"}, lat(0), 5) // heartbeat 5 is the first to carry it
	assert.Empty(t, l.decide(lat(0), false, 5, live3(map[string]uint64{lb: 9, lc: 9})))
	_, waits := l.state()
	assert.Equal(t, "this member holds no quorum lease", waits["k1"])
	assert.Empty(t, l.decide(lat(time.Second), true, 6, live3(map[string]uint64{lb: 5, lc: 4})), "c acknowledged only heartbeat 4")
	_, waits = l.state()
	assert.Equal(t, "waits for the acknowledgement of ["+lc+"]", waits["k1"])
	assert.Equal(t, []string{"k1"}, l.decide(lat(2*time.Second), true, 6, live3(map[string]uint64{lb: 5, lc: 5})))
}

// The cluster's order: a waiting claim of a peer ordered before this member's comes first, a
// later one does not; a taken claim counts wherever it is in the order.
func TestLedgerCountsWaitingClaimsBeforeItAndEveryTakenOne(t *testing.T) {
	acked := map[string]uint64{lb: 1, lc: 1}
	l := newLedger(lb, 1, 1, lwindow, ltimeout)
	l.heard(la, 1, []*clusterv1.Heartbeat_Claim{claim(la, 1, 1, "a1", waiting)}, lat(0), allLive)
	l.want([]string{"b1"}, lat(0), 1)
	require.Equal(t, uint64(2), l.own[0].lamport, "higher than every claim it knew")
	acked[la] = 1
	assert.Empty(t, l.decide(lat(0), true, 1, live3(acked)), "a1 comes first")
	l.heard(la, 1, nil, lat(time.Second), allLive) // a1 withdrawn: its container recovered
	assert.Equal(t, []string{"b1"}, l.decide(lat(time.Second), true, 1, live3(acked)))

	// A peer's waiting claim ordered after this member's does not hold it back.
	l = newLedger(la, 1, 1, lwindow, ltimeout)
	l.want([]string{"a1"}, lat(0), 1)
	l.heard(lb, 1, []*clusterv1.Heartbeat_Claim{claim(lb, 1, 1, "b1", waiting)}, lat(0), allLive) // same lamport, higher address
	assert.Equal(t, []string{"a1"}, l.decide(lat(0), true, 1, live3(map[string]uint64{lb: 1, lc: 1})))

	// A taken claim ordered after this member's counts all the same.
	l = newLedger(la, 1, 1, lwindow, ltimeout)
	l.want([]string{"a1"}, lat(0), 1)
	l.heard(lb, 1, []*clusterv1.Heartbeat_Claim{claim(lb, 1, 7, "b1", 0)}, lat(0), allLive)
	assert.Empty(t, l.decide(lat(0), true, 1, live3(map[string]uint64{lb: 1, lc: 1})))
	assert.Equal(t, []string{"a1"}, l.decide(lat(lexpiry), true, 1, live3(map[string]uint64{lb: 1, lc: 1})), "until it leaves the window")
}

// A member out of the view is not waited for when it was fenced (left out by a quorum, plus the
// fence margin, or announced its leave) before the claim was made; fenced after, the claim is
// made anew, last in the order; not fenced, it is waited for.
func TestLedgerFencedMembers(t *testing.T) {
	f := fences{all: []string{la, lb, lc}, live: []string{la, lb}, acked: map[string]uint64{lb: 1}, gone: map[string]time.Time{}, left: map[string]bool{}}
	l := newLedger(la, 1, 1, lwindow, ltimeout)
	l.want([]string{"a1"}, lat(10*time.Second), 1)
	assert.Empty(t, l.decide(lat(10*time.Second), true, 1, f), "c is out of the view but not fenced")
	_, waits := l.state()
	assert.Equal(t, "waits for the acknowledgement of ["+lc+"]", waits["a1"])

	f.gone[lc] = lat(time.Second) // fenced from 1 s + timeout/4, before the claim
	assert.Equal(t, []string{"a1"}, l.decide(lat(11*time.Second), true, 1, f))

	l = newLedger(la, 1, 1, lwindow, ltimeout)
	f.gone[lc] = time.Time{}
	delete(f.gone, lc)
	l.want([]string{"a1"}, lat(0), 1)
	f.gone[lc] = lat(time.Second)
	assert.Empty(t, l.decide(lat(2*time.Second), true, 3, f))
	_, waits = l.state()
	assert.Equal(t, "made anew: a member it waited for was fenced", waits["a1"])
	assert.Equal(t, uint64(2), l.own[0].lamport)
	assert.Equal(t, uint64(3), l.own[0].firstSeq, "carried from the next heartbeat on")
	f.acked[lb] = 3
	assert.Equal(t, []string{"a1"}, l.decide(lat(3*time.Second), true, 4, f))

	l = newLedger(la, 1, 1, lwindow, ltimeout)
	f.gone = map[string]time.Time{}
	f.left[lc] = true
	f.acked[lb] = 1
	assert.Empty(t, l.decide(lat(0), true, 1, f), "nothing wanted")
	l.want([]string{"a1"}, lat(time.Second), 1)
	assert.Equal(t, []string{"a1"}, l.decide(lat(time.Second), true, 1, f), "c left before the claim was made")
}

// A peer no longer heard (or restarted) may have taken what it listed as waiting: those count as
// taken from then on. Every claim known is relayed (this incarnation's own coming back are
// ignored); a relayed waiting claim counts as taken from when it is heard unless its origin is
// live here, whose own list says what it still waits for.
func TestLedgerRetiresAndRelays(t *testing.T) {
	l := newLedger(la, 1, 1, lwindow, ltimeout)
	liveB := func(p string) bool { return p == lb }
	l.heard(lb, 1, []*clusterv1.Heartbeat_Claim{
		claim(lb, 1, 3, "b1", waiting),
		claim(lc, 4, 2, "c1", 10*time.Second),         // relayed by b
		claim(la, 1, 1, "a-own", 0),                   // this member's own, bounced back
		claim(la, 0xdead, 1, "a-before", time.Second), // this member's previous incarnation
		claim(lc, 4, 5, "c2", waiting),                // c is not live here: it may take it any time
	}, lat(20*time.Second), liveB)
	got := l.list(lat(21 * time.Second))
	var keys []string
	for _, c := range got {
		keys = append(keys, c.GetKey())
	}
	assert.Equal(t, []string{"a-before", "c1", "b1", "c2"}, keys, "in the cluster's order")
	assert.Equal(t, uint64(11_000), got[1].GetAgeMs(), "c1 was taken 11 s before this heartbeat")
	assert.False(t, got[2].GetTaken(), "b1 waits: b is live")
	assert.True(t, got[3].GetTaken(), "c2 counts as taken from when it was heard")
	assert.Equal(t, uint64(1_000), got[3].GetAgeMs())

	// A waiting claim relayed about a live origin is left to the origin's own list.
	l2 := newLedger(la, 1, 1, lwindow, ltimeout)
	l2.heard(lb, 1, []*clusterv1.Heartbeat_Claim{claim(lc, 4, 5, "c2", waiting)}, lat(0), func(string) bool { return true })
	assert.Empty(t, l2.relayed)

	// b is dropped: its waiting b1 counts as taken at the drop.
	f := fences{all: []string{la, lb, lc}, live: []string{la, lc}, acked: map[string]uint64{lc: 1}, gone: map[string]time.Time{lb: lat(25 * time.Second)}}
	l.want([]string{"a1"}, lat(30*time.Second), 1)
	assert.Empty(t, l.decide(lat(30*time.Second), true, 1, f))
	r, ok := l.relayed[claimID{origin: lb, inc: 1, lamport: 3}]
	require.True(t, ok)
	assert.Equal(t, lat(30*time.Second), r.taken)
	assert.Empty(t, l.decide(lat(30*time.Second+lexpiry-time.Millisecond), true, 1, f))
	assert.Equal(t, []string{"a1"}, l.decide(lat(30*time.Second+lexpiry), true, 1, f))
}

// want withdraws a waiting claim whose key is no longer listed; a taken one stays in the window.
func TestLedgerWantWithdraws(t *testing.T) {
	l := newLedger(la, 1, 1, lwindow, ltimeout)
	alone := fences{all: []string{la}, live: []string{la}}
	l.want([]string{"k1", "k2"}, lat(0), 1)
	assert.Equal(t, []string{"k1"}, l.decide(lat(0), true, 1, alone))
	assert.True(t, l.want(nil, lat(time.Second), 1), "k2 withdrawn")
	assert.False(t, l.want(nil, lat(time.Second), 1))
	taken, waits := l.state()
	assert.Contains(t, taken, "k1")
	assert.Empty(t, waits)
}
