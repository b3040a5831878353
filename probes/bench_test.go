package probes

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
)

// BenchmarkHTTPProbe: one HTTP GET attempt (fresh connection, request, 2-byte body, abortive close)
// against a local server.
func BenchmarkHTTPProbe(b *testing.B) {
	s := newServer(b, statusHandler(200))
	spec := httpProbe(b, s.URL, "/", 1)
	benchProbe(b, spec)
}

// BenchmarkAttemptTransports: building and closing an HTTP attempt's transport, for an http:// and an
// https:// request (transports: the HTTP/2 set-up only for the second).
func BenchmarkAttemptTransports(b *testing.B) {
	cfg := New(nil).transport
	for _, scheme := range []string{"http", "https"} {
		b.Run("scheme="+scheme, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				a := &transports{cfg: cfg}
				a.forScheme(scheme)
				a.close()
			}
		})
	}
}

// BenchmarkTCPProbe: one connect+close attempt against a local listener.
func BenchmarkTCPProbe(b *testing.B) {
	s := newRawServer(b, func(c net.Conn) {
		buf := make([]byte, 1)
		_, _ = c.Read(buf)
	})
	addr := s.ln.Addr().(*net.TCPAddr)
	spec := tcpProbe("127.0.0.1", addr.Port, 1)
	benchProbe(b, spec)
}

// BenchmarkGRPCProbe: one gRPC health check attempt (fresh connection, Check, close) against a
// local grpc.health.v1 server.
func BenchmarkGRPCProbe(b *testing.B) {
	port := startGRPC(b, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, health.NewServer()) })
	benchProbe(b, grpcProbe(port, nil, 1))
}

// BenchmarkExecProbe: one exec attempt of `true` as a local process in its own process group.
func BenchmarkExecProbe(b *testing.B) {
	spec := &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	benchProbe(b, spec)
}

// benchProbe measures one successful attempt of spec.
func benchProbe(b *testing.B, spec *v1.Probe) {
	p := New(nil)
	b.ReportAllocs()
	for b.Loop() {
		out, err := p.Probe(context.Background(), spec, Target{})
		if err != nil || out.Result != Success {
			b.Fatalf("probe: %v %v %s", err, out.Result, out.Output)
		}
	}
}
