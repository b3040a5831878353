package remotesectest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Peer is a raw gRPC client speaking protoactor's Remoting protocol, the way a hostile or broken
// member would: it crafts every MessageBatch itself.
type Peer struct {
	Client remote.RemotingClient
	// Target is the remote address of the process under test.
	Target string
}

// Dial connects a Peer to target (closed when the test ends).
func Dial(t testing.TB, target string, creds credentials.TransportCredentials) *Peer {
	t.Helper()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &Peer{Client: remote.NewRemotingClient(conn), Target: target}
}

// Open starts a stream and performs protoactor's connect handshake announcing address.
func (p *Peer) Open(ctx context.Context, address string) (remote.Remoting_ReceiveClient, error) {
	s, err := p.Client.Receive(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.Send(Connect(address)); err != nil {
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

// Connect is protoactor's handshake message announcing address.
func Connect(address string) *remote.RemoteMessage {
	return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{SystemId: "hostile", Address: address}}}}}
}

// Batch wraps a MessageBatch.
func Batch(b *remote.MessageBatch) *remote.RemoteMessage {
	return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: b}}
}

// Encode marshals a message the test itself built (it cannot fail).
func Encode(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// Valid describes a message the process under test accepts: its full type name, the exposed actor
// it goes to, and its bytes as the peer announcing self sends them.
type Valid struct {
	Type  string
	Actor string
	Data  func(self string) []byte
}

// Hostile is one crafted conversation the guard must end with Code.
type Hostile struct {
	Name string
	// Msgs builds what is sent after the handshake (or instead of it when NoConnect), given the
	// process's remote address and the address the peer announced.
	Msgs      func(target, self string) []*remote.RemoteMessage
	NoConnect bool
	Code      codes.Code
}

// HostileCases are the conversations that crash or abuse an unguarded protoactor member
// (../shared/design/scaleout.md §1.2), built around v: every one must close the stream and leave
// the process serving.
func HostileCases(v Valid) []Hostile {
	pids := func(target string) []*actor.PID { return []*actor.PID{{Address: target, Id: v.Actor}} }
	one := func(typ string, data func(self string) []byte, env *remote.MessageEnvelope, mutate func(b *remote.MessageBatch)) func(target, self string) []*remote.RemoteMessage {
		return func(target, self string) []*remote.RemoteMessage {
			if env == nil {
				env = &remote.MessageEnvelope{}
			}
			e := proto.Clone(env).(*remote.MessageEnvelope)
			if e.MessageData == nil {
				e.MessageData = data(self)
			}
			b := &remote.MessageBatch{TypeNames: []string{typ}, Targets: pids(target), Envelopes: []*remote.MessageEnvelope{e}}
			if mutate != nil {
				mutate(b)
			}
			return []*remote.RemoteMessage{Batch(b)}
		}
	}
	fixed := func(b []byte) func(string) []byte { return func(string) []byte { return b } }
	pd := codes.PermissionDenied
	return []Hostile{
		{Name: "unknown type name", Msgs: one("evil.DoesNotExist", fixed([]byte{1, 2, 3}), nil, nil), Code: pd},
		{Name: "registered but unlisted type", Msgs: one("remote.ActorPidRequest", fixed(Encode(&remote.ActorPidRequest{Kind: "x"})), nil, nil), Code: pd},
		{Name: "type_id out of range", Msgs: one(v.Type, v.Data, &remote.MessageEnvelope{TypeId: 7}, nil), Code: pd},
		{Name: "negative type_id", Msgs: one(v.Type, v.Data, &remote.MessageEnvelope{TypeId: -1}, nil), Code: pd},
		{Name: "serializer_id 9", Msgs: one(v.Type, v.Data, &remote.MessageEnvelope{SerializerId: 9}, nil), Code: pd},
		{Name: "JSON serializer with an unknown type", Msgs: one("evil.Json", fixed([]byte(`{}`)), &remote.MessageEnvelope{SerializerId: 1}, nil), Code: pd},
		{Name: "JSON serializer with a listed type", Msgs: one(v.Type, fixed([]byte(`{}`)), &remote.MessageEnvelope{SerializerId: 1}, nil), Code: pd},
		{Name: "target index out of range", Msgs: one(v.Type, v.Data, &remote.MessageEnvelope{Target: 5}, nil), Code: pd},
		{Name: "sender index out of range", Msgs: one(v.Type, v.Data, &remote.MessageEnvelope{Sender: 3}, nil), Code: pd},
		{Name: "actor.Stop to the exposed actor", Msgs: one("actor.Stop", fixed(Encode(&actor.Stop{})), nil, nil), Code: pd},
		{Name: "actor.PoisonPill to the exposed actor", Msgs: one("actor.PoisonPill", fixed(Encode(&actor.PoisonPill{})), nil, nil), Code: pd},
		{Name: "target eventstream", Msgs: one(v.Type, v.Data, nil, func(b *remote.MessageBatch) { b.Targets[0].Id = "eventstream" }), Code: pd},
		{Name: "target activator", Msgs: one(v.Type, v.Data, nil, func(b *remote.MessageBatch) { b.Targets[0].Id = "activator" }), Code: pd},
		{Name: "target on another address (relay)", Msgs: one(v.Type, v.Data, nil, func(b *remote.MessageBatch) { b.Targets[0].Address = "10.1.2.3:80" }), Code: pd},
		{Name: "spoofed sender address", Msgs: one(v.Type, v.Data, &remote.MessageEnvelope{Sender: 1}, func(b *remote.MessageBatch) {
			b.Senders = []*actor.PID{{Address: "10.9.9.9:1234", Id: "future$1"}}
		}), Code: pd},
		{Name: "watch on behalf of another address", Msgs: one("actor.Watch", fixed(Encode(&actor.Watch{Watcher: &actor.PID{Address: "10.9.9.9:1234", Id: "x"}})), nil, nil), Code: pd},
		{Name: "terminated of another address's actor", Msgs: one("actor.Terminated", fixed(Encode(&actor.Terminated{Who: &actor.PID{Address: "10.9.9.9:1234", Id: "x"}})), nil, nil), Code: pd},
		{Name: "batch before connect", NoConnect: true, Msgs: one(v.Type, v.Data, nil, nil), Code: pd},
		{Name: "connect announcing another host", NoConnect: true, Msgs: func(string, string) []*remote.RemoteMessage {
			return []*remote.RemoteMessage{Connect("10.9.9.9:1234")}
		}, Code: pd},
		{Name: "client connection (unimplemented in protoactor)", NoConnect: true, Msgs: func(string, string) []*remote.RemoteMessage {
			return []*remote.RemoteMessage{{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
				ConnectionType: &remote.ConnectRequest_ClientConnection{ClientConnection: &remote.ClientConnection{SystemId: "x"}}}}}}
		}, Code: pd},
		{Name: "a disconnect request from a client", Msgs: func(string, string) []*remote.RemoteMessage {
			return []*remote.RemoteMessage{{MessageType: &remote.RemoteMessage_DisconnectRequest{DisconnectRequest: &remote.DisconnectRequest{}}}}
		}, Code: pd},
		{Name: "a second connect on one stream", Msgs: func(_, self string) []*remote.RemoteMessage {
			return []*remote.RemoteMessage{Connect(self)}
		}, Code: pd},
		{Name: "a message over the size bound", Msgs: one(v.Type, fixed(make([]byte, 17<<20)), nil, nil), Code: codes.ResourceExhausted},
	}
}

// RunHostile sends every case on its own stream of p announcing self, expects the stream to be
// closed with the case's code, and calls alive after each; then the two unary RPCs protoactor
// does not implement. It returns how many refusals the guard itself must have counted (gRPC
// refuses oversized messages before the guard sees them).
func RunHostile(t *testing.T, p *Peer, self string, cases []Hostile, alive func(t *testing.T)) (guarded int) {
	alive(t) // the control: a valid message on a well-formed stream is applied
	for _, hc := range cases {
		t.Run(hc.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var s remote.Remoting_ReceiveClient
			var err error
			if hc.NoConnect {
				s, err = p.Client.Receive(ctx)
			} else {
				s, err = p.Open(ctx, self)
			}
			require.NoError(t, err)
			for _, m := range hc.Msgs(p.Target, self) {
				require.NoError(t, s.Send(m))
			}
			for {
				if _, err = s.Recv(); err != nil {
					break
				}
			}
			assert.Equal(t, hc.Code, status.Code(err), "the stream must be closed by the guard: %v", err)
			alive(t)
		})
		if hc.Code == codes.PermissionDenied {
			guarded++
		}
	}
	for _, call := range []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"unary ListProcesses", func(ctx context.Context) error {
			_, err := p.Client.ListProcesses(ctx, &remote.ListProcessesRequest{Pattern: ""})
			return err
		}},
		{"unary GetProcessDiagnostics", func(ctx context.Context) error {
			_, err := p.Client.GetProcessDiagnostics(ctx, &remote.GetProcessDiagnosticsRequest{Pid: &actor.PID{Address: p.Target, Id: "x"}})
			return err
		}},
	} {
		t.Run(call.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			assert.Equal(t, codes.Unimplemented, status.Code(call.do(ctx)))
			alive(t)
		})
		guarded++
	}
	return guarded
}
