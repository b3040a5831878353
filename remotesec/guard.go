package remotesec

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/netip"

	"github.com/asynkron/protoactor-go/remote"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// receiveMethod is the one RPC a protoactor member serves: the bidirectional message stream.
const receiveMethod = "/remote.Remoting/Receive"

// guard holds the interceptors that stand between the network and protoactor's endpoint reader.
type guard struct {
	policy   *policy
	tls      bool
	log      hclog.Logger
	rejected *prometheus.CounterVec
}

// unary refuses every unary RPC: protoactor's ListProcesses and GetProcessDiagnostics panic with
// "implement me" in the pinned version, and nothing else exists.
func (g *guard) unary(ctx context.Context, _ any, info *grpc.UnaryServerInfo, _ grpc.UnaryHandler) (any, error) {
	g.refused(ctx, reject(reasonRPC, "unary RPC %s is not served", info.FullMethod))
	return nil, status.Errorf(codes.Unimplemented, "%s is not served", info.FullMethod)
}

// stream lets only Remoting/Receive through and inspects every message it receives.
func (g *guard) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if info.FullMethod != receiveMethod {
		g.refused(ss.Context(), reject(reasonRPC, "stream RPC %s is not served", info.FullMethod))
		return status.Errorf(codes.Unimplemented, "%s is not served", info.FullMethod)
	}
	gs := &guardedStream{ServerStream: ss, g: g, peerOK: g.peerCheck(ss.Context())}
	if p, ok := peer.FromContext(ss.Context()); ok && g.tls {
		gs.state.cert, _ = peerCertificate(p)
	}
	return handler(srv, gs)
}

// guardedStream checks each received message before protoactor's reader sees it. A refused message
// ends the stream: RecvMsg returns PermissionDenied, the reader returns it and gRPC closes the stream.
type guardedStream struct {
	grpc.ServerStream
	g      *guard
	peerOK peerCheck
	state  streamState
}

func (s *guardedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	msg, ok := m.(*remote.RemoteMessage)
	if !ok {
		r := reject(reasonProtocol, "unexpected message type %T", m)
		s.g.refused(s.Context(), r)
		return status.Error(codes.PermissionDenied, r.Error())
	}
	if r := s.g.policy.check(&s.state, msg, s.peerOK); r != nil {
		s.g.refused(s.Context(), r)
		return status.Error(codes.PermissionDenied, r.Error())
	}
	return nil
}

func (g *guard) refused(ctx context.Context, r *rejection) {
	from := "unknown"
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		from = p.Addr.String()
	}
	g.log.Warn("refused a remote peer's message; closing its stream", "peer", from, "reason", r.reason, "error", r.err)
	if g.rejected != nil {
		g.rejected.WithLabelValues(r.reason).Inc()
	}
}

// peerCheck returns the rule for the addresses this stream's peer may announce as its own (in
// ConnectRequest; every sender, watcher and terminated actor must then be at that address):
//   - with mTLS, the host must be named by the peer's verified certificate (an IP or DNS SAN);
//   - without TLS (loopback only), the host must be the peer's own IP, or localhost for a
//     loopback peer.
//
// So a peer cannot make this process dial, or send replies and terminations to, someone else.
func (g *guard) peerCheck(ctx context.Context) peerCheck {
	p, _ := peer.FromContext(ctx)
	return func(address string) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		if host == "" {
			return errNoHost
		}
		if p == nil {
			return fmt.Errorf("no peer information")
		}
		if g.tls {
			cert, err := peerCertificate(p)
			if err != nil {
				return err
			}
			if err := cert.VerifyHostname(host); err != nil {
				return fmt.Errorf("the peer's certificate does not name %s: %w", host, err)
			}
			return nil
		}
		return sameHost(host, p.Addr)
	}
}

func peerCertificate(p *peer.Peer) (*x509.Certificate, error) {
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return nil, fmt.Errorf("no verified client certificate")
	}
	return info.State.PeerCertificates[0], nil
}

// sameHost says whether host (from an announced address) is the peer's IP.
func sameHost(host string, addr net.Addr) error {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("peer address %v is not TCP", addr)
	}
	peerIP, _ := netip.AddrFromSlice(tcp.IP)
	peerIP = peerIP.Unmap()
	if host == "localhost" && peerIP.IsLoopback() {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("host %q is not an IP address (use an IP, or mTLS with a DNS SAN)", host)
	}
	if ip.Unmap() != peerIP {
		return fmt.Errorf("host %s is not the peer's address %s", host, peerIP)
	}
	return nil
}
