package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/probeactor/probeactor/cluster/internal/clustertest"
	"github.com/probeactor/probeactor/cluster/membership"
	"github.com/probeactor/probeactor/internal/fleettest"
	"github.com/probeactor/probeactor/internal/freeport"
	"github.com/probeactor/probeactor/remotesec/remotesectest"
	"github.com/probeactor/probeactor/wire/clusterv1"
)

var hbSeq atomic.Uint64

// heartbeat is a well-formed heartbeat of cluster demo from address.
func heartbeat(address string) []byte {
	return remotesectest.Encode(&clusterv1.Heartbeat{Cluster: "demo", Address: address, Incarnation: 1, Seq: hbSeq.Add(1), View: []string{address}})
}

func metric(t *testing.T, url, name, labels string) float64 {
	return fleettest.Metric(t, url, name, labels)
}

// hostileTarget is a two-member cluster whose first member the hostile peer attacks.
type hostileTarget struct {
	c       *testCluster
	metrics []string // each member's metrics base URL
}

func startHostileTarget(t *testing.T, tlsFlags func(addr string) []string) *hostileTarget {
	h := &hostileTarget{}
	h.c = startCluster(t, 2, func(i int, addr string) []string {
		m := freeport.Addr(t)
		h.metrics = append(h.metrics, "http://"+m)
		flags := []string{"--metrics-listen", m}
		if tlsFlags != nil {
			flags = append(flags, tlsFlags(addr)...)
		}
		return flags
	})
	h.c.waitExactlyOnce(h.c.addrs, "two members start")
	return h
}

// alive checks that the attacked member runs, and that its membership actor still receives and
// judges a well-formed heartbeat sent on a new stream (from self, which is no configured peer: it
// is counted as ignored, unknown_peer).
func (h *hostileTarget) alive(t *testing.T, p *remotesectest.Peer, self string) {
	t.Helper()
	require.False(t, h.c.procs[0].Exited(), "the member died: %v\n%s", h.c.procs[0].Err(), h.c.procs[0].Stderr())
	before := metric(t, h.metrics[0], "probeactor_cluster_heartbeats_ignored_total", `reason="unknown_peer"`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := p.Open(ctx, self)
	require.NoError(t, err, "a new stream after the hostile one")
	require.NoError(t, s.Send(remotesectest.Batch(&remote.MessageBatch{
		TypeNames: []string{"probeactor.cluster.v1.Heartbeat"},
		Targets:   []*actor.PID{{Address: p.Target, Id: membership.ActorName}},
		Envelopes: []*remote.MessageEnvelope{{MessageData: heartbeat(self)}},
	})))
	require.Eventually(t, func() bool {
		return metric(t, h.metrics[0], "probeactor_cluster_heartbeats_ignored_total", `reason="unknown_peer"`) > before
	}, 20*time.Second, 20*time.Millisecond, "the membership actor judged the valid heartbeat")
	_ = s.CloseSend()
}

// clusterCases are the hostile conversations specific to a cluster member, on top of
// remotesectest's: protoactor's own cluster messages (gossip, grain activation) are not accepted
// at all, and a heartbeat may only speak for the address its stream announced.
func clusterCases() []remotesectest.Hostile {
	one := func(typ, target string, data func(self string) []byte) func(string, string) []*remote.RemoteMessage {
		return func(agg, self string) []*remote.RemoteMessage {
			return []*remote.RemoteMessage{remotesectest.Batch(&remote.MessageBatch{TypeNames: []string{typ},
				Targets: []*actor.PID{{Address: agg, Id: target}}, Envelopes: []*remote.MessageEnvelope{{MessageData: data(self)}}})}
		}
	}
	pd := codes.PermissionDenied
	return []remotesectest.Hostile{
		{Name: "a heartbeat speaking for another member", Msgs: one("probeactor.cluster.v1.Heartbeat", membership.ActorName, func(string) []byte { return heartbeat("127.0.0.1:1") }), Code: pd},
		{Name: "a heartbeat that does not decode", Msgs: one("probeactor.cluster.v1.Heartbeat", membership.ActorName, func(string) []byte { return []byte{0xff, 0xff, 0xff} }), Code: pd},
		{Name: "a heartbeat to protoactor's gossip actor", Msgs: one("probeactor.cluster.v1.Heartbeat", "gossip", heartbeat), Code: pd},
		{Name: "protoactor gossip", Msgs: one("cluster.GossipRequest", "gossip", func(string) []byte {
			return remotesectest.Encode(&cluster.GossipRequest{FromMemberId: "x", State: &cluster.GossipState{}})
		}), Code: pd},
		{Name: "a grain activation request", Msgs: one("cluster.ActivationRequest", "partition-activator", func(string) []byte {
			return remotesectest.Encode(&cluster.ActivationRequest{ClusterIdentity: &cluster.ClusterIdentity{Identity: "x", Kind: "y"}})
		}), Code: pd},
	}
}

// runHostile attacks member 0 with every case, then checks the guard counted its refusals, that
// nonsense the guard lets through is ignored by the membership, and that the cluster never lost
// a member meanwhile.
func (h *hostileTarget) runHostile(t *testing.T, creds credentials.TransportCredentials) {
	self := freeport.Addr(t)
	p := remotesectest.Dial(t, h.c.addrs[0], creds)
	cases := append(remotesectest.HostileCases(remotesectest.Valid{Type: "probeactor.cluster.v1.Heartbeat", Actor: membership.ActorName, Data: heartbeat}), clusterCases()...)
	started := time.Now()
	guarded := remotesectest.RunHostile(t, p, self, cases, func(t *testing.T) { h.alive(t, p, self) })
	assert.GreaterOrEqual(t, metric(t, h.metrics[0], "probeactor_remote_refused_total", ""), float64(guarded), "every refusal of the guard is counted")

	// Well-formed but wrong heartbeats pass the guard and are ignored, each for its reason.
	for _, tc := range []struct {
		reason string
		hb     *clusterv1.Heartbeat
	}{
		{"cluster", &clusterv1.Heartbeat{Cluster: "other", Address: self, Incarnation: 1, Seq: hbSeq.Add(1)}},
		{"invalid", &clusterv1.Heartbeat{Cluster: "demo", Address: self, Incarnation: 1}},
	} {
		before := metric(t, h.metrics[0], "probeactor_cluster_heartbeats_ignored_total", `reason="`+tc.reason+`"`)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		s, err := p.Open(ctx, self)
		require.NoError(t, err)
		require.NoError(t, s.Send(remotesectest.Batch(&remote.MessageBatch{TypeNames: []string{"probeactor.cluster.v1.Heartbeat"},
			Targets: []*actor.PID{{Address: h.c.addrs[0], Id: membership.ActorName}}, Envelopes: []*remote.MessageEnvelope{{MessageData: remotesectest.Encode(tc.hb)}}})))
		require.Eventually(t, func() bool {
			return metric(t, h.metrics[0], "probeactor_cluster_heartbeats_ignored_total", `reason="`+tc.reason+`"`) > before
		}, 20*time.Second, 20*time.Millisecond, "ignored: %s", tc.reason)
		cancel()
	}

	assert.NotContains(t, h.c.procs[0].Stderr(), "panic")
	ev := h.c.events()
	for _, a := range h.c.addrs {
		assert.True(t, clustertest.FirstView(ev, a, []string{a}, started).IsZero(), "%s never lost its peer during the attack", a)
	}
	require.NoError(t, clustertest.ExactlyOnce(ev, h.c.pods, h.c.addrs))
}

func TestHostilePeersCannotCrashOrDisturbAPlaintextMember(t *testing.T) {
	h := startHostileTarget(t, nil)
	h.runHostile(t, insecure.NewCredentials())
}

func TestMutualTLSClusterAndHostilePeersWithAValidCertificate(t *testing.T) {
	ca := remotesectest.NewCA(t, "cluster")
	n := 0
	h := startHostileTarget(t, func(addr string) []string {
		n++
		return ca.Issue(t, fmt.Sprintf("member-%d", n), "127.0.0.1").Flags()
	})
	// The members found each other over mTLS (startHostileTarget waited for it); an authenticated
	// member gone bad gets the same treatment as a stranger on a plaintext member.
	h.runHostile(t, ca.Issue(t, "rogue-member", "127.0.0.1").ClientCreds(t))

	for _, tc := range []struct {
		name  string
		creds credentials.TransportCredentials
	}{
		{"a rogue CA's certificate is refused in the handshake", rogueCreds(t, ca)},
		{"a plaintext peer is refused", insecure.NewCredentials()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := remotesectest.Dial(t, h.c.addrs[0], tc.creds)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := p.Open(ctx, freeport.Addr(t))
			assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
		})
	}
	require.NoError(t, clustertest.ExactlyOnce(h.c.events(), h.c.pods, h.c.addrs))
}

// rogueCreds present a certificate of another CA (and trust the cluster's).
func rogueCreds(t *testing.T, ca *remotesectest.CA) credentials.TransportCredentials {
	f := remotesectest.NewCA(t, "rogue").Issue(t, "m", "127.0.0.1")
	f.CA = ca.CAFile
	return f.ClientCreds(t)
}
