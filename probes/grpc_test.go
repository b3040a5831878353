package probes

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
)

// startGRPC serves register's services on 127.0.0.1:0 until the test ends; it returns the port.
func startGRPC(t testing.TB, register func(*grpc.Server)) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	register(s)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ln) }()
	t.Cleanup(func() { s.Stop(); <-done })
	return ln.Addr().(*net.TCPAddr).Port
}

// slowHealth answers Check after delay (or when the RPC's context ends) and records the user agent.
type slowHealth struct {
	healthpb.UnimplementedHealthServer
	delay time.Duration
	mu    sync.Mutex
	ua    string
	svc   string
}

func (s *slowHealth) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	s.ua, s.svc = strings.Join(md.Get("user-agent"), ","), req.GetService()
	s.mu.Unlock()
	waitCtx(ctx, s.delay)
	if ctx.Err() != nil {
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func grpcProbe(port int, service *string, timeoutSeconds int32) *v1.Probe {
	return &v1.Probe{TimeoutSeconds: timeoutSeconds,
		ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(port), Service: service}}}
}

// TestGrpcProber_Probe is kubelet's grpc_test TestGrpcProber_Probe against a real health server.
func TestGrpcProber_Probe(t *testing.T) {
	p := New(nil)
	str := func(s string) *string { return &s }

	t.Run("no server: connect timeout", func(t *testing.T) {
		out, err := p.doGRPC(context.Background(), "", "", 32, time.Second, false)
		require.NoError(t, err)
		assert.Equal(t, Failure, out.Result)
		assert.Equal(t, `timeout: failed to connect service ":32" within 1s: context deadline exceeded`, out.Output)
		assert.Equal(t, ReasonTimeout, out.Reason)
	})
	t.Run("plain HTTP server", func(t *testing.T) {
		s := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello")) }))
		_, port := hostPort(t, s.URL)
		out, err := p.Probe(context.Background(), grpcProbe(port, nil, 1), Target{PodIP: "127.0.0.1"})
		require.NoError(t, err)
		assert.Equal(t, Failure, out.Result, out.Output)
	})
	t.Run("not serving", func(t *testing.T) {
		hs := health.NewServer()
		hs.SetServingStatus("svc", healthpb.HealthCheckResponse_NOT_SERVING)
		port := startGRPC(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, hs) })
		out, err := p.Probe(context.Background(), grpcProbe(port, str("svc"), 1), Target{PodIP: "127.0.0.1"})
		require.NoError(t, err)
		assert.Equal(t, Failure, out.Result)
		assert.Equal(t, `service unhealthy (responded with "NOT_SERVING")`, out.Output)
		assert.Equal(t, ReasonNotServing, out.Reason)
	})
	t.Run("rpc timeout", func(t *testing.T) {
		slow := &slowHealth{delay: 4 * time.Second}
		port := startGRPC(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, slow) })
		out, err := p.Probe(context.Background(), grpcProbe(port, nil, 1), Target{PodIP: "127.0.0.1"})
		require.NoError(t, err)
		assert.Equal(t, Failure, out.Result)
		assert.Equal(t, "timeout: health rpc did not complete within 1s", out.Output)
		assert.Equal(t, ReasonTimeout, out.Reason)
		assert.Less(t, out.Duration, 3*time.Second)
	})
	t.Run("serving, server-wide", func(t *testing.T) {
		port := startGRPC(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, health.NewServer()) })
		out, err := p.Probe(context.Background(), grpcProbe(port, nil, 1), Target{PodIP: "127.0.0.1"})
		require.NoError(t, err)
		assert.Equal(t, Success, out.Result, out.Output)
		assert.Equal(t, "service healthy", out.Output)
	})
	t.Run("serving, named service, user agent", func(t *testing.T) {
		fast := &slowHealth{}
		port := startGRPC(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, fast) })
		out, err := p.Probe(context.Background(), grpcProbe(port, str("my.Service"), 1), Target{PodIP: "127.0.0.1"})
		require.NoError(t, err)
		assert.Equal(t, Success, out.Result, out.Output)
		fast.mu.Lock()
		defer fast.mu.Unlock()
		assert.Equal(t, "my.Service", fast.svc)
		assert.True(t, strings.HasPrefix(fast.ua, UserAgent), "user agent %q", fast.ua)
	})
	t.Run("unknown service", func(t *testing.T) {
		port := startGRPC(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, health.NewServer()) })
		out, err := p.Probe(context.Background(), grpcProbe(port, str("nope"), 1), Target{PodIP: "127.0.0.1"})
		require.NoError(t, err)
		assert.Equal(t, Failure, out.Result)
		assert.True(t, strings.HasPrefix(out.Output, "error: health rpc probe failed: "), out.Output)
		assert.Contains(t, out.Output, codes.NotFound.String())
	})
	t.Run("no health service", func(t *testing.T) {
		port := startGRPC(t, func(*grpc.Server) {})
		out, err := p.Probe(context.Background(), grpcProbe(port, nil, 1), Target{PodIP: "127.0.0.1"})
		require.NoError(t, err)
		assert.Equal(t, Failure, out.Result)
		assert.True(t, strings.HasPrefix(out.Output,
			"error: this server does not implement the grpc health protocol (grpc.health.v1.Health): "), out.Output)
		assert.Equal(t, ReasonProtocol, out.Reason)
	})
	t.Run("invalid port", func(t *testing.T) {
		out, err := p.Probe(context.Background(), grpcProbe(0, nil, 1), Target{PodIP: "127.0.0.1"})
		require.ErrorIs(t, err, ErrInvalidPort)
		assert.Equal(t, Unknown, out.Result)
	})
}
