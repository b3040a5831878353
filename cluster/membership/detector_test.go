package membership

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/wire/clusterv1"
)

const (
	selfAddr = "127.0.0.1:7101"
	peerB    = "127.0.0.1:7102"
	peerC    = "127.0.0.1:7103"
)

var t0 = time.Unix(1000, 0)

func hb(from string, inc, seq uint64, view ...string) *clusterv1.Heartbeat {
	return &clusterv1.Heartbeat{Cluster: "demo", Address: from, Incarnation: inc, Seq: seq, View: view}
}

func newTestDetector() *detector {
	return newDetector("demo", selfAddr, []string{selfAddr, peerB, peerC}, 2*time.Second, t0)
}

func TestDetectorFirstRoundCompletesWhenEveryPeerIsHeard(t *testing.T) {
	d := newTestDetector()
	assert.Nil(t, d.live(), "not ready: no view at all")
	out := d.heard(hb(peerB, 1, 1), t0.Add(10*time.Millisecond))
	assert.Equal(t, heardOutcome{changed: true, admitted: true}, out)
	assert.Nil(t, d.live(), "c not heard yet")
	out = d.heard(hb(peerC, 5, 1, peerC), t0.Add(20*time.Millisecond))
	assert.Equal(t, heardOutcome{changed: true, admitted: true}, out)
	assert.Equal(t, []string{selfAddr, peerB, peerC}, d.live())
	assert.Equal(t, map[string][]string{peerB: nil, peerC: {peerC}}, d.reported())
}

func TestDetectorFirstRoundCompletesAfterTheTimeoutWithThePeersHeard(t *testing.T) {
	d := newTestDetector()
	d.heard(hb(peerB, 1, 1), t0.Add(time.Second))
	assert.False(t, d.tick(t0.Add(1999*time.Millisecond)))
	assert.Nil(t, d.live())
	assert.True(t, d.tick(t0.Add(2*time.Second)), "ready is a change")
	assert.Equal(t, []string{selfAddr, peerB}, d.live())
	assert.False(t, d.tick(t0.Add(2*time.Second+time.Millisecond)))
}

func TestDetectorAloneIsReadyAtOnce(t *testing.T) {
	d := newDetector("demo", selfAddr, []string{selfAddr}, time.Second, t0)
	assert.Equal(t, []string{selfAddr}, d.live())
}

func TestDetectorExpiresAPeerAfterTheFailureTimeout(t *testing.T) {
	d := newTestDetector()
	d.heard(hb(peerB, 1, 1), t0)
	d.heard(hb(peerC, 1, 1), t0)
	d.heard(hb(peerB, 1, 2, selfAddr, peerB), t0.Add(time.Second))
	assert.False(t, d.tick(t0.Add(2*time.Second)), "c heard 2 s ago: the timeout is not exceeded")
	assert.True(t, d.tick(t0.Add(2*time.Second+time.Millisecond)), "c expires")
	assert.Equal(t, []string{selfAddr, peerB}, d.live())
	assert.Equal(t, map[string][]string{peerB: {selfAddr, peerB}}, d.reported(), "a dead peer reports nothing")
	assert.True(t, d.tick(t0.Add(3*time.Second+time.Millisecond)), "b expires")
	assert.Equal(t, []string{selfAddr}, d.live())
}

func TestDetectorHeartbeats(t *testing.T) {
	ready := func() *detector {
		d := newTestDetector()
		d.heard(hb(peerB, 10, 5, selfAddr, peerB), t0)
		d.heard(hb(peerC, 10, 5, selfAddr, peerC), t0)
		require.True(t, d.ready)
		return d
	}
	for _, tc := range []struct {
		name     string
		hb       *clusterv1.Heartbeat
		want     heardOutcome
		wantLive []string
	}{
		{"the same view again: nothing changes", hb(peerB, 10, 6, selfAddr, peerB), heardOutcome{}, []string{selfAddr, peerB, peerC}},
		{"a new view is a change", hb(peerB, 10, 6, peerB), heardOutcome{changed: true}, []string{selfAddr, peerB, peerC}},
		{"a seq already seen is stale", hb(peerB, 10, 5, selfAddr), heardOutcome{ignored: ignoredStale}, []string{selfAddr, peerB, peerC}},
		{"an older incarnation is stale", hb(peerB, 9, 99, selfAddr), heardOutcome{ignored: ignoredStale}, []string{selfAddr, peerB, peerC}},
		{"a new incarnation of a live peer: restarted (reset its connection), same live set", hb(peerB, 11, 1, selfAddr, peerB), heardOutcome{restarted: true}, []string{selfAddr, peerB, peerC}},
		{"leaving drops it at once", &clusterv1.Heartbeat{Cluster: "demo", Address: peerB, Incarnation: 10, Seq: 6, Leaving: true}, heardOutcome{changed: true}, []string{selfAddr, peerC}},
		{"another cluster", &clusterv1.Heartbeat{Cluster: "other", Address: peerB, Incarnation: 10, Seq: 6}, heardOutcome{ignored: ignoredCluster}, []string{selfAddr, peerB, peerC}},
		{"an unknown peer", hb("127.0.0.1:7999", 1, 1), heardOutcome{ignored: ignoredUnknownPeer}, []string{selfAddr, peerB, peerC}},
		{"someone claiming to be this member", hb(selfAddr, 1, 1), heardOutcome{ignored: ignoredSelf}, []string{selfAddr, peerB, peerC}},
		{"an invalid heartbeat", hb(peerB, 10, 0), heardOutcome{ignored: ignoredInvalid}, []string{selfAddr, peerB, peerC}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ready()
			assert.Equal(t, tc.want, d.heard(tc.hb, t0.Add(time.Second)))
			assert.Equal(t, tc.wantLive, d.live())
		})
	}
}

func TestDetectorLeftIncarnationStaysOutAndARestartIsAdmittedAgain(t *testing.T) {
	d := newTestDetector()
	d.heard(hb(peerB, 10, 1), t0)
	d.heard(hb(peerC, 10, 1), t0)
	d.heard(&clusterv1.Heartbeat{Cluster: "demo", Address: peerB, Incarnation: 10, Seq: 2, Leaving: true}, t0)
	assert.Equal(t, heardOutcome{ignored: ignoredLeft}, d.heard(hb(peerB, 10, 3), t0), "a late heartbeat of the leaver")
	assert.Equal(t, []string{selfAddr, peerC}, d.live())

	out := d.heard(hb(peerB, 11, 1), t0.Add(time.Second))
	assert.Equal(t, heardOutcome{changed: true, admitted: true}, out, "the restarted member")
	assert.Equal(t, []string{selfAddr, peerB, peerC}, d.live())

	// Expired, then heard again (a false suspicion, or a restart with the same incarnation):
	// admitted again, never rejected for having been dropped.
	d.tick(t0.Add(4 * time.Second))
	assert.Equal(t, []string{selfAddr}, d.live())
	out = d.heard(hb(peerB, 11, 2), t0.Add(5*time.Second))
	assert.Equal(t, heardOutcome{changed: true, admitted: true}, out)
}
