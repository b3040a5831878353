package membership

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/wire/clusterv1"
)

var all = []string{selfAddr, peerB, peerC}

func newTestCore(awaitApplied bool, peers ...string) *core {
	if len(peers) == 0 {
		peers = all
	}
	cfg := Config{Cluster: "demo", Self: selfAddr, Peers: peers, FailureTimeout: 2 * time.Second, Incarnation: 7, AwaitApplied: awaitApplied}
	return newCore(&cfg, t0)
}

// mine is this member's heartbeat number seq reporting view.
func mine(seq uint64, view ...string) *clusterv1.Heartbeat {
	return &clusterv1.Heartbeat{Cluster: "demo", Address: selfAddr, Incarnation: 7, Seq: seq, View: view}
}

// sends flattens e.send to peer → heartbeat, without the acknowledgements (the quorum tests
// check those).
func sends(e effects) map[string]*clusterv1.Heartbeat {
	out := map[string]*clusterv1.Heartbeat{}
	for _, o := range e.send {
		for _, p := range o.to {
			out[p] = noAcks(o.hb)
		}
	}
	return out
}

func noAcks(hb *clusterv1.Heartbeat) *clusterv1.Heartbeat {
	if hb == nil {
		return nil
	}
	return &clusterv1.Heartbeat{Cluster: hb.Cluster, Address: hb.Address, Incarnation: hb.Incarnation, Seq: hb.Seq, View: hb.View,
		Leaving: hb.Leaving, Stopping: hb.Stopping}
}

// withoutAcks strips the acknowledgements from e's heartbeats.
func withoutAcks(e effects) effects {
	for i, o := range e.send {
		e.send[i] = outgoing{to: o.to, hb: noAcks(o.hb)}
	}
	e.reply = noAcks(e.reply)
	return e
}

// base is v without the quorum's fields (the quorum tests check those).
func base(v View) View {
	return View{Self: v.Self, Members: v.Members, Reported: v.Reported, Version: v.Version, Published: v.Published}
}

// ready is a core that has heard b and c (heartbeats with the view of all three) and published
// view 1, having told b and c (seqs 1 to 3: two greetings and the report).
func ready(t *testing.T, awaitApplied bool) *core {
	c := newTestCore(awaitApplied)
	c.start(t0)
	c.heard(hb(peerB, 10, 1, all...), t0, false)
	e := c.heard(hb(peerC, 10, 1, all...), t0, false)
	require.NotNil(t, e.publish)
	require.Equal(t, uint64(1), e.publish.Version)
	return c
}

func TestCoreStart(t *testing.T) {
	c := newTestCore(false, selfAddr)
	e := c.start(t0)
	require.NotNil(t, e.publish, "alone: a view at once")
	assert.Equal(t, View{Self: selfAddr, Members: []string{selfAddr}, Reported: map[string][]string{}, Version: 1, Published: t0}, base(*e.publish))
	assert.Empty(t, e.send, "nobody to tell")
	assert.Empty(t, e.probe)

	c = newTestCore(false)
	e = c.start(t0)
	assert.Nil(t, e.publish, "no view before the first round")
	assert.Equal(t, []string{peerB, peerC}, e.probe, "every peer is probed before anything is sent to it")
	assert.Empty(t, e.send)
}

func TestCoreFirstRoundGreetsEachPeerAndPublishesOnceAllAreHeard(t *testing.T) {
	c := newTestCore(false)
	c.start(t0)
	e := c.heard(hb(peerB, 10, 1), t0, false)
	assert.Equal(t, map[string]*clusterv1.Heartbeat{peerB: mine(1)}, sends(e), "b is greeted: it hears this member without waiting a tick")
	assert.Nil(t, e.publish, "c not heard yet")

	e = c.heard(hb(peerC, 10, 1, peerC), t0.Add(time.Millisecond), false)
	require.NotNil(t, e.publish)
	assert.Equal(t, View{Self: selfAddr, Members: all, Reported: map[string][]string{peerB: nil, peerC: {peerC}}, Version: 1, Published: t0.Add(time.Millisecond)}, base(*e.publish))
	assert.Equal(t, all, e.joined, "the first view: everyone joined")
	assert.Empty(t, e.reset)
	assert.Equal(t, []outgoing{{to: []string{peerC}, hb: mine(2)}, {to: []string{peerB, peerC}, hb: mine(3, all...)}}, withoutAcks(e).send,
		"c greeted, then every live peer told the new view")
}

func TestCoreTickHeartbeatsLivePeersAndProbesTheOthers(t *testing.T) {
	c := newTestCore(false)
	c.start(t0)                                  // probes b and c
	c.heard(hb(peerB, 10, 1, all...), t0, false) // b live, greeted (seq 1)
	e := c.tick(t0.Add(time.Second))
	assert.Equal(t, map[string]*clusterv1.Heartbeat{peerB: mine(2)}, sends(e), "only the live peer gets a heartbeat")
	assert.Empty(t, e.probe, "c's probe is still in flight")

	e = c.probed(peerC, false, t0)
	assert.Empty(t, e.send, "c does not listen: nothing is sent to it")
	e = c.tick(t0.Add(1500 * time.Millisecond))
	assert.Equal(t, []string{peerC}, e.probe, "probed again")
	e = c.probed(peerC, true, t0)
	assert.Equal(t, map[string]*clusterv1.Heartbeat{peerC: mine(4)}, sends(e), "c listens: greeted")

	e = c.probed(peerB, true, t0)
	assert.Empty(t, e.send, "a probe that ends after its peer became live sends nothing")

	e = c.tick(t0.Add(2 * time.Second))
	require.NotNil(t, e.publish, "the first round's time is up: b only")
	assert.Equal(t, []string{selfAddr, peerB}, e.publish.Members)
}

func TestCoreDropsAndResets(t *testing.T) {
	for _, tc := range []struct {
		name      string
		event     func(c *core) effects
		wantReply *clusterv1.Heartbeat
	}{
		{"c expires", func(c *core) effects {
			c.heard(hb(peerB, 10, 2, all...), t0.Add(2*time.Second), false)
			return c.tick(t0.Add(2001 * time.Millisecond))
		}, nil},
		{"c leaves (a request: acknowledged)", func(c *core) effects {
			return c.heard(&clusterv1.Heartbeat{Cluster: "demo", Address: peerC, Incarnation: 10, Seq: 2, View: all, Leaving: true}, t0.Add(time.Second), true)
		}, mine(4, all...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ready(t, false)
			e := tc.event(c)
			require.NotNil(t, e.publish)
			assert.Equal(t, []string{selfAddr, peerB}, e.publish.Members)
			assert.Equal(t, []string{peerC}, e.dropped)
			assert.Equal(t, []string{peerC}, e.reset, "the dropped peer's endpoint is reset (what protoactor's MemberList did)")
			assert.Equal(t, tc.wantReply, noAcks(e.reply))
			for p := range sends(e) {
				assert.Equal(t, peerB, p, "nothing goes to the dropped peer")
			}
		})
	}
}

func TestCoreHeartbeats(t *testing.T) {
	leave := func(seq uint64) *clusterv1.Heartbeat {
		return &clusterv1.Heartbeat{Cluster: "demo", Address: peerB, Incarnation: 10, Seq: seq, Leaving: true}
	}
	for _, tc := range []struct {
		name     string
		before   func(c *core)
		hb       *clusterv1.Heartbeat
		canReply bool
		want     effects // compared without publish, joined, dropped
		publish  bool
	}{
		{"the same view again: nothing", nil, hb(peerB, 10, 2, all...), false, effects{}, false},
		{"a new reported view: published, nobody told (the members are the same)", nil, hb(peerB, 10, 2, peerB), false, effects{heard: heardOutcome{changed: true}}, true},
		{"a restart while live: reset and greeted", nil, hb(peerB, 11, 1, all...), false,
			effects{heard: heardOutcome{restarted: true}, reset: []string{peerB}, send: []outgoing{{to: []string{peerB}, hb: mine(4, all...)}}}, false},
		{"a repeated leave: acknowledged, nothing else", func(c *core) { c.heard(leave(2), t0, true) }, leave(3), true,
			effects{heard: heardOutcome{ignored: ignoredLeft}, reply: mine(6, selfAddr, peerC)}, false},
		{"a leave sent without a request: not answered", nil, leave(2), false,
			effects{heard: heardOutcome{changed: true}, reset: []string{peerB}, send: []outgoing{{to: []string{peerC}, hb: mine(4, selfAddr, peerC)}}}, true},
		{"a stale heartbeat", nil, hb(peerB, 10, 1, all...), false, effects{heard: heardOutcome{ignored: ignoredStale}}, false},
		{"another cluster's, first time: warn", nil, &clusterv1.Heartbeat{Cluster: "x", Address: peerB, Incarnation: 1, Seq: 1}, false,
			effects{heard: heardOutcome{ignored: ignoredCluster}, warn: true}, false},
		{"another cluster's, again: no warning", func(c *core) {
			c.heard(&clusterv1.Heartbeat{Cluster: "x", Address: peerB, Incarnation: 1, Seq: 1}, t0, false)
		},
			&clusterv1.Heartbeat{Cluster: "x", Address: peerB, Incarnation: 1, Seq: 2}, false, effects{heard: heardOutcome{ignored: ignoredCluster}}, false},
		{"an unknown peer's leave is not answered", nil, &clusterv1.Heartbeat{Cluster: "demo", Address: "127.0.0.1:7999", Incarnation: 1, Seq: 1, Leaving: true}, true,
			effects{heard: heardOutcome{ignored: ignoredUnknownPeer}, warn: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ready(t, false)
			if tc.before != nil {
				tc.before(c)
			}
			e := c.heard(tc.hb, t0.Add(500*time.Millisecond), tc.canReply) // within repairAfter: these carry no acknowledgements
			assert.Equal(t, tc.publish, e.publish != nil, "published")
			e.publish, e.joined, e.dropped, e.lease = nil, nil, nil, nil
			assert.Equal(t, tc.want, withoutAcks(e))
		})
	}
}

// With AwaitApplied, peers are told a view only once the subscriber applied it; an older or
// unknown version changes nothing.
func TestCoreAwaitApplied(t *testing.T) {
	c := ready(t, true)
	assert.Nil(t, c.reported, "nothing applied, nothing reported")
	assert.Equal(t, map[string]*clusterv1.Heartbeat{peerB: mine(3), peerC: mine(3)}, sends(c.tick(t0.Add(100*time.Millisecond))), "heartbeats carry no view")

	e := c.heard(hb(peerB, 10, 2, peerB), t0.Add(200*time.Millisecond), false) // view 2 (a new report)
	require.NotNil(t, e.publish)
	require.Equal(t, uint64(2), e.publish.Version)
	assert.Empty(t, e.send, "not applied yet")

	e = c.applied(1, t0)
	assert.Equal(t, map[string]*clusterv1.Heartbeat{peerB: mine(4, all...), peerC: mine(4, all...)}, sends(e), "view 1 applied: told at once")
	assert.Empty(t, c.applied(1, t0).send, "already acknowledged")
	assert.Empty(t, c.applied(2, t0).send, "the same members: nothing new to tell")
	assert.Empty(t, c.applied(99, t0).send, "never published")

	for range maxHistory + 10 { // views the subscriber never acknowledges
		c.heard(hb(peerB, 10, c.det.peers[peerB].seq+1, peerB), t0.Add(time.Second), false)
		c.heard(hb(peerB, 10, c.det.peers[peerB].seq+1, all...), t0.Add(time.Second), false)
	}
	assert.Len(t, c.history, maxHistory, "the history is bounded")
}

// After leave, the core sends, publishes and probes nothing more, but still acknowledges a peer's
// leave.
func TestCoreLeave(t *testing.T) {
	c := ready(t, false)
	hbLeave, peers, stopping := c.leave(t0)
	assert.Equal(t, noAcks(&clusterv1.Heartbeat{Cluster: "demo", Address: selfAddr, Incarnation: 7, Seq: 4, View: all, Leaving: true}), noAcks(hbLeave))
	assert.Equal(t, []string{peerB, peerC}, peers, "the live peers")
	assert.Zero(t, stopping)

	assert.Equal(t, effects{}, c.tick(t0.Add(5*time.Second)), "no heartbeat, no expiry published, no probe")
	e := c.heard(hb(peerB, 11, 1), t0.Add(5*time.Second), false)
	assert.Nil(t, e.publish)
	assert.Empty(t, e.send, "a restarted peer is not greeted")
	e = c.heard(&clusterv1.Heartbeat{Cluster: "demo", Address: peerC, Incarnation: 10, Seq: 2, Leaving: true}, t0.Add(5*time.Second), true)
	assert.Equal(t, mine(5, all...), noAcks(e.reply), "a peer leaving too is acknowledged")
	assert.Empty(t, c.probed(peerB, true, t0).send)
}

// A member that still stops pods when it leaves tells no peer: a peer that heard the leave would
// count it Left and start those pods at once (ownership's rule 3 skips a member that left), while
// they may still run here. Once its stops are done, the leave goes to every live peer.
func TestCoreLeavesUntoldWhilePodsStillStop(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stopping []string
		peers    []string
	}{
		{name: "stops under way", stopping: []string{"uid-1", "uid-2"}},
		{name: "every stop done", stopping: []string{"uid-1"}, peers: []string{peerB, peerC}},
		{name: "nothing stopped", peers: []string{peerB, peerC}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ready(t, false)
			if len(tc.stopping) > 0 {
				c.setStopping(tc.stopping, t0)
			}
			if tc.peers != nil && len(tc.stopping) > 0 {
				c.setStopping(nil, t0) // the stops ended before the leave
			}
			hbLeave, peers, stopping := c.leave(t0)
			assert.True(t, hbLeave.GetLeaving())
			assert.Equal(t, tc.peers, peers)
			if tc.peers == nil {
				assert.Equal(t, len(tc.stopping), stopping, "how many still stop, for the log")
			} else {
				assert.Zero(t, stopping)
			}
			assert.Equal(t, effects{}, c.tick(t0.Add(5*time.Second)), "no heartbeat after the leave either way")
		})
	}
}

// A live peer whose heartbeats keep arriving but acknowledge none of this member's for repairAfter
// (1 s here) does not hear this member: the connection to it is reset and it is greeted, at most
// once per repairAfter, before its failure timeout would make it drop this member.
func TestCoreRepairsTheConnectionToAPeerThatStopsAcknowledging(t *testing.T) {
	c := ready(t, false) // b and c heard at t0; seqs 1..3 made at t0
	acks := func(seq uint64) []*clusterv1.Heartbeat_Ack {
		return []*clusterv1.Heartbeat_Ack{{Address: selfAddr, Incarnation: 7, Seq: seq}}
	}
	beat := func(peer string, seq uint64, ack uint64) *clusterv1.Heartbeat {
		h := hb(peer, 10, seq, all...)
		if ack > 0 {
			h.Acks = acks(ack)
		}
		return h
	}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	// b acknowledges this member's heartbeat 3 (made at t0), then no later one.
	assert.False(t, c.heard(beat(peerB, 2, 3), at(100*time.Millisecond), false).heard.repair)
	c.tick(at(250 * time.Millisecond)) // seq 4, to b and c
	assert.False(t, c.heard(beat(peerB, 3, 3), at(900*time.Millisecond), false).heard.repair, "less than repairAfter since t0")
	assert.False(t, c.heard(beat(peerC, 2, 4), at(900*time.Millisecond), false).heard.repair, "c acknowledges the newest")
	e := c.heard(beat(peerB, 4, 3), at(1100*time.Millisecond), false)
	assert.True(t, e.heard.repair, "b heard nothing made after t0 for over a second")
	assert.Equal(t, []string{peerB}, e.reset)
	require.Len(t, e.send, 1)
	assert.Equal(t, []string{peerB}, e.send[0].to, "b is greeted on the new connection")
	assert.False(t, c.heard(beat(peerB, 5, 3), at(1500*time.Millisecond), false).heard.repair, "repaired just now: not again")
	assert.True(t, c.heard(beat(peerB, 6, 3), at(2200*time.Millisecond), false).heard.repair, "still lost a repair period later: again")
	c.tick(at(2300 * time.Millisecond))
	latest := c.seq
	assert.False(t, c.heard(beat(peerB, 7, latest), at(2500*time.Millisecond), false).heard.repair, "b acknowledges again")
	assert.False(t, c.heard(beat(peerC, 3, latest), at(2500*time.Millisecond), false).heard.repair, "c too")
	assert.True(t, c.heard(beat(peerC, 4, 0), at(3400*time.Millisecond), false).heard.repair,
		"a heartbeat without acknowledgements (c stopped hearing this member) for over a second")
}
