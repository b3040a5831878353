package aggregator_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/fleettest"
	"github.com/probeactor/probeactor/remotesec/remotesectest"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// peer is a raw gRPC client speaking protoactor's Remoting protocol, the way a hostile or broken
// member would: it crafts every MessageBatch itself.
type peer struct {
	t      *testing.T
	conn   *grpc.ClientConn
	client remote.RemotingClient
	target string // the aggregator's remote address
}

func dialPeer(t *testing.T, target string, creds credentials.TransportCredentials) *peer {
	t.Helper()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &peer{t: t, conn: conn, client: remote.NewRemotingClient(conn), target: target}
}

// open starts a stream and performs protoactor's connect handshake announcing address.
func (p *peer) open(ctx context.Context, address string) (remote.Remoting_ReceiveClient, error) {
	s, err := p.client.Receive(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.Send(connect(address)); err != nil {
		return nil, err
	}
	m, err := s.Recv()
	if err != nil {
		return nil, err
	}
	if m.GetConnectResponse() == nil {
		return nil, fmt.Errorf("no ConnectResponse but %v", m)
	}
	return s, nil
}

func connect(address string) *remote.RemoteMessage {
	return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{SystemId: "hostile", Address: address}}}}}
}

func batchMsg(b *remote.MessageBatch) *remote.RemoteMessage {
	return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: b}}
}

// encode marshals a message the test itself built (it cannot fail).
func encode(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

var probeCount atomic.Int64

// alive checks that the aggregator process still runs, answers /healthz, accepts a new peer
// stream and applies a valid batch from it (the fleet actor was neither crashed nor stopped): a
// snapshot of node with a new incarnation must show up in /nodes as its boot ID.
func alive(t *testing.T, agg *fleettest.Proc, p *peer, self, node string) {
	t.Helper()
	require.False(t, agg.Exited(), "the aggregator died: %v", agg.Err())
	require.True(t, agg.Healthy(), "the aggregator stopped answering /healthz")
	inc := uint64(probeCount.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := p.open(ctx, self)
	require.NoError(t, err, "a new stream after the hostile one")
	require.NoError(t, s.Send(batchMsg(&remote.MessageBatch{
		TypeNames: []string{"probeactor.fleet.v1.Changes"},
		Targets:   []*actor.PID{{Address: agg.Remote, Id: "fleet"}},
		Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Target: 0, MessageData: encode(&fleetv1.Changes{Node: node, Incarnation: inc, Seq: 1, Snapshot: true})}},
	})))
	require.Eventually(t, func() bool { return bootID(agg, node) == fmt.Sprint(inc) }, 20*time.Second, 20*time.Millisecond,
		"the valid batch of %s (incarnation %d) was not applied", node, inc)
	_ = s.CloseSend()
}

// bootID returns a node's boot ID (its incarnation) from /nodes, "" when absent.
func bootID(agg *fleettest.Proc, name string) string {
	resp, err := http.Get(agg.API + "/nodes")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var list v1.NodeList
	if json.NewDecoder(resp.Body).Decode(&list) != nil {
		return ""
	}
	for _, n := range list.Items {
		if n.Name == name {
			return n.Status.NodeInfo.BootID
		}
	}
	return ""
}

// hostileCase sends one crafted conversation and expects the stream to be closed with code.
type hostileCase struct {
	name string
	// msgs builds what is sent after the handshake (or instead of it when noConnect).
	msgs      func(t *testing.T, agg, self string) []*remote.RemoteMessage
	noConnect bool
	code      codes.Code
}

func hostileCases() []hostileCase {
	fleetPID := func(agg string) []*actor.PID { return []*actor.PID{{Address: agg, Id: "fleet"}} }
	one := func(typ string, data []byte, env *remote.MessageEnvelope, mutate func(b *remote.MessageBatch)) func(t *testing.T, agg, self string) []*remote.RemoteMessage {
		return func(t *testing.T, agg, self string) []*remote.RemoteMessage {
			if env == nil {
				env = &remote.MessageEnvelope{}
			}
			e := proto.Clone(env).(*remote.MessageEnvelope)
			if e.MessageData == nil {
				e.MessageData = data
			}
			b := &remote.MessageBatch{TypeNames: []string{typ}, Targets: fleetPID(agg), Envelopes: []*remote.MessageEnvelope{e}}
			if mutate != nil {
				mutate(b)
			}
			return []*remote.RemoteMessage{batchMsg(b)}
		}
	}
	valid := func() []byte { return encode(&fleetv1.Heartbeat{Node: "h", Incarnation: 1}) }
	pd := codes.PermissionDenied
	return []hostileCase{
		{name: "unknown type name", msgs: one("evil.DoesNotExist", []byte{1, 2, 3}, nil, nil), code: pd},
		{name: "registered but unlisted type", msgs: one("remote.ActorPidRequest", encode(&remote.ActorPidRequest{Kind: "x"}), nil, nil), code: pd},
		{name: "type_id out of range", msgs: one("probeactor.fleet.v1.Heartbeat", valid(), &remote.MessageEnvelope{TypeId: 7}, nil), code: pd},
		{name: "negative type_id", msgs: one("probeactor.fleet.v1.Heartbeat", valid(), &remote.MessageEnvelope{TypeId: -1}, nil), code: pd},
		{name: "serializer_id 9", msgs: one("probeactor.fleet.v1.Heartbeat", valid(), &remote.MessageEnvelope{SerializerId: 9}, nil), code: pd},
		{name: "JSON serializer with an unknown type", msgs: one("evil.Json", []byte(`{}`), &remote.MessageEnvelope{SerializerId: 1}, nil), code: pd},
		{name: "JSON serializer with a listed type", msgs: one("probeactor.fleet.v1.Heartbeat", []byte(`{"node":"h"}`), &remote.MessageEnvelope{SerializerId: 1}, nil), code: pd},
		{name: "target index out of range", msgs: one("probeactor.fleet.v1.Heartbeat", valid(), &remote.MessageEnvelope{Target: 5}, nil), code: pd},
		{name: "sender index out of range", msgs: one("probeactor.fleet.v1.Heartbeat", valid(), &remote.MessageEnvelope{Sender: 3}, nil), code: pd},
		{name: "actor.Stop to the fleet actor", msgs: one("actor.Stop", encode(&actor.Stop{}), nil, nil), code: pd},
		{name: "actor.PoisonPill to the fleet actor", msgs: one("actor.PoisonPill", encode(&actor.PoisonPill{}), nil, nil), code: pd},
		{name: "target eventstream", msgs: one("probeactor.fleet.v1.Heartbeat", valid(), nil, func(b *remote.MessageBatch) { b.Targets[0].Id = "eventstream" }), code: pd},
		{name: "target activator", msgs: one("probeactor.fleet.v1.Heartbeat", valid(), nil, func(b *remote.MessageBatch) { b.Targets[0].Id = "activator" }), code: pd},
		{name: "target on another address (relay)", msgs: one("probeactor.fleet.v1.Heartbeat", valid(), nil, func(b *remote.MessageBatch) { b.Targets[0].Address = "10.1.2.3:80" }), code: pd},
		{name: "spoofed sender address", msgs: one("probeactor.fleet.v1.Heartbeat", valid(), &remote.MessageEnvelope{Sender: 1}, func(b *remote.MessageBatch) {
			b.Senders = []*actor.PID{{Address: "10.9.9.9:1234", Id: "future$1"}}
		}), code: pd},
		{name: "watch on behalf of another address", msgs: one("actor.Watch", encode(&actor.Watch{Watcher: &actor.PID{Address: "10.9.9.9:1234", Id: "x"}}), nil, nil), code: pd},
		{name: "terminated of another address's actor", msgs: one("actor.Terminated", encode(&actor.Terminated{Who: &actor.PID{Address: "10.9.9.9:1234", Id: "x"}}), nil, nil), code: pd},
		{name: "batch before connect", noConnect: true, msgs: func(t *testing.T, agg, self string) []*remote.RemoteMessage {
			return one("probeactor.fleet.v1.Heartbeat", valid(), nil, nil)(t, agg, self)
		}, code: pd},
		{name: "connect announcing another host", noConnect: true, msgs: func(t *testing.T, agg, self string) []*remote.RemoteMessage {
			return []*remote.RemoteMessage{connect("10.9.9.9:1234")}
		}, code: pd},
		{name: "client connection (unimplemented in protoactor)", noConnect: true, msgs: func(t *testing.T, agg, self string) []*remote.RemoteMessage {
			return []*remote.RemoteMessage{{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
				ConnectionType: &remote.ConnectRequest_ClientConnection{ClientConnection: &remote.ClientConnection{SystemId: "x"}}}}}}
		}, code: pd},
		{name: "a disconnect request from a client", msgs: func(t *testing.T, agg, self string) []*remote.RemoteMessage {
			return []*remote.RemoteMessage{{MessageType: &remote.RemoteMessage_DisconnectRequest{DisconnectRequest: &remote.DisconnectRequest{}}}}
		}, code: pd},
		{name: "a second connect on one stream", msgs: func(t *testing.T, agg, self string) []*remote.RemoteMessage {
			return []*remote.RemoteMessage{connect(self)}
		}, code: pd},
		{name: "a message over the size bound", msgs: one("probeactor.fleet.v1.Heartbeat", make([]byte, 17<<20), nil, nil), code: codes.ResourceExhausted},
	}
}

// runHostileSuite runs every hostile case against one aggregator process, checking after each
// that it is alive and still applying valid batches, and ends with the unary RPCs.
func runHostileSuite(t *testing.T, agg *fleettest.Proc, creds credentials.TransportCredentials, self, node string) {
	p := dialPeer(t, agg.Remote, creds)
	alive(t, agg, p, self, node) // the control: a valid batch on a well-formed stream is applied
	for _, hc := range hostileCases() {
		t.Run(hc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var s remote.Remoting_ReceiveClient
			var err error
			if hc.noConnect {
				s, err = p.client.Receive(ctx)
			} else {
				s, err = p.open(ctx, self)
			}
			require.NoError(t, err)
			for _, m := range hc.msgs(t, agg.Remote, self) {
				require.NoError(t, s.Send(m))
			}
			for {
				_, err = s.Recv()
				if err != nil {
					break
				}
			}
			assert.Equal(t, hc.code, status.Code(err), "the stream must be closed by the guard: %v", err)
			alive(t, agg, p, self, node)
		})
	}
	for _, call := range []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"unary ListProcesses", func(ctx context.Context) error {
			_, err := p.client.ListProcesses(ctx, &remote.ListProcessesRequest{Pattern: ""})
			return err
		}},
		{"unary GetProcessDiagnostics", func(ctx context.Context) error {
			_, err := p.client.GetProcessDiagnostics(ctx, &remote.GetProcessDiagnosticsRequest{Pid: &actor.PID{Address: agg.Remote, Id: "fleet"}})
			return err
		}},
	} {
		t.Run(call.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			assert.Equal(t, codes.Unimplemented, status.Code(call.do(ctx)))
			alive(t, agg, p, self, node)
		})
	}
	guarded := 2 // the unary RPCs; gRPC itself refuses oversized messages before the guard sees them
	for _, hc := range hostileCases() {
		if hc.code == codes.PermissionDenied {
			guarded++
		}
	}
	refused := metric(t, agg, "probeactor_remote_refused_total")
	assert.GreaterOrEqual(t, refused, float64(guarded), "every refusal of the guard is counted")
	assert.NotContains(t, agg.Stderr(), "panic")
}

// metric sums a metric's samples from /metrics.
func metric(t *testing.T, agg *fleettest.Proc, name string) float64 {
	resp, err := http.Get(agg.API + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	all, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var sum float64
	for _, line := range strings.Split(string(all), "\n") {
		if strings.HasPrefix(line, name) {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// selfAddress is the address the raw peer announces: a loopback port nobody listens on (the
// aggregator never needs to answer it in these tests).
func selfAddress(t *testing.T) string { return fmt.Sprintf("127.0.0.1:%d", fleettest.FreePort(t)) }

func TestHostilePeersCannotCrashOrStopThePlaintextAggregator(t *testing.T) {
	agg := fleettest.StartAggregator(t)
	runHostileSuite(t, agg, insecure.NewCredentials(), selfAddress(t), "probe")
}

func TestHostilePeersWithAValidCertificateCannotCrashTheMTLSAggregator(t *testing.T) {
	ca := remotesectest.NewCA(t, "fleet")
	agg := fleettest.StartAggregator(t, ca.Issue(t, "aggregator", "127.0.0.1").Flags()...)
	// An authenticated member gone bad: mTLS keeps strangers out, the guard does the rest.
	member := clientCreds(t, ca.Issue(t, "system:node:member", "127.0.0.1"), ca.CAFile)
	runHostileSuite(t, agg, member, selfAddress(t), "member")

	t.Run("a node reporting under another node's name", func(t *testing.T) {
		p := dialPeer(t, agg.Remote, member)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		s, err := p.open(ctx, selfAddress(t))
		require.NoError(t, err)
		require.NoError(t, s.Send(batchMsg(&remote.MessageBatch{
			TypeNames: []string{"probeactor.fleet.v1.Changes"},
			Targets:   []*actor.PID{{Address: agg.Remote, Id: "fleet"}},
			Envelopes: []*remote.MessageEnvelope{{MessageData: encode(&fleetv1.Changes{Node: "victim", Incarnation: 1, Seq: 1, Snapshot: true})}},
		})))
		_, err = s.Recv()
		assert.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
		assert.Empty(t, bootID(agg, "victim"))
		alive(t, agg, p, selfAddress(t), "member")
	})

	t.Run("a certificate that does not name the announced host", func(t *testing.T) {
		p := dialPeer(t, agg.Remote, clientCreds(t, ca.Issue(t, "other", "127.0.0.2"), ca.CAFile))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := p.open(ctx, selfAddress(t))
		assert.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	})
	t.Run("a rogue CA's certificate is refused in the handshake", func(t *testing.T) {
		rogue := remotesectest.NewCA(t, "rogue")
		p := dialPeer(t, agg.Remote, clientCreds(t, rogue.Issue(t, "member", "127.0.0.1"), ca.CAFile))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := p.open(ctx, selfAddress(t))
		assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	})
	t.Run("a plaintext peer is refused", func(t *testing.T) {
		p := dialPeer(t, agg.Remote, insecure.NewCredentials())
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := p.open(ctx, selfAddress(t))
		assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	})
	t.Run("a peer without a client certificate is refused", func(t *testing.T) {
		pool := x509.NewCertPool()
		pem, err := os.ReadFile(ca.CAFile)
		require.NoError(t, err)
		pool.AppendCertsFromPEM(pem)
		p := dialPeer(t, agg.Remote, credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err = p.open(ctx, selfAddress(t))
		assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	})
	alive(t, agg, dialPeer(t, agg.Remote, clientCreds(t, ca.Issue(t, "member2", "127.0.0.1"), ca.CAFile)), selfAddress(t), "member2")
}

func clientCreds(t *testing.T, f remotesectest.Files, caFile string) credentials.TransportCredentials {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	require.NoError(t, err)
	pem, err := os.ReadFile(caFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	return credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS13})
}

// TestVersionWatchUnguardedMemberDiesOnAnUnknownType pins the defect the guard exists for: in the
// pinned protoactor an unregistered type name kills the receiving process (nil dereference in
// protoSerializer.Deserialize, fixed upstream by PR #1229). When an upgrade makes this test fail,
// revisit remotesec and ARCHITECTURE.md's trust-boundary section.
func TestVersionWatchUnguardedMemberDiesOnAnUnknownType(t *testing.T) {
	port := fleettest.FreePort(t)
	target := fmt.Sprintf("127.0.0.1:%d", port)
	member := fleettest.StartRole(t, "unguarded", fmt.Sprint(port))
	p := dialPeer(t, target, insecure.NewCredentials())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var s remote.Remoting_ReceiveClient
	require.Eventually(t, func() bool {
		var err error
		s, err = p.open(ctx, selfAddress(t))
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the unguarded member never accepted a stream")
	require.NoError(t, s.Send(batchMsg(&remote.MessageBatch{
		TypeNames: []string{"evil.DoesNotExist"},
		Targets:   []*actor.PID{{Address: target, Id: "fleet"}},
		Envelopes: []*remote.MessageEnvelope{{MessageData: []byte{1}}},
	})))
	select {
	case <-member.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the unguarded member survived an unknown type: protoactor changed; revisit remotesec")
	}
	assert.Contains(t, member.Stderr(), "panic", "it died of the nil dereference")
}
