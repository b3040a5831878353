package probes

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// maxGRPCResponseBytes bounds the health response a gRPC probe accepts.
const maxGRPCResponseBytes = 64 << 10

// grpcBufferBytes sizes a probe connection's read and write buffers: a health exchange's frames
// (settings, headers, a few-byte message, trailers) fit in one read and one write.
const grpcBufferBytes = 4 << 10

// doGRPC is kubelet's gRPC prober: grpc.health.v1.Health/Check{service} over an insecure connection
// (useTLS: over TLS without verifying the target's certificate, kubelet 1.37's grpc.mode TLS), with
// one deadline covering connect and RPC, and kubelet's output strings for every outcome.
//
// A connect the prober could not make for want of its own resources ends the attempt as
// ErrExhausted (gRPC would otherwise retry it until the deadline and report a timeout).
func (p *Prober) doGRPC(ctx context.Context, host, service string, port int, timeout time.Duration, useTLS bool) (Outcome, error) {
	addr := joinHostPort(host, port)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A connect refused for want of the prober's own resources ends the wait at once: gRPC would
	// only retry it after a back-off, and the answer is already known.
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	var ownErr atomic.Pointer[error]
	creds := insecure.NewCredentials()
	if useTLS {
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // kubelet does not verify probe targets
	}

	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithUserAgent(p.userAgent),
		grpc.WithTransportCredentials(creds),
		// A health response is a few bytes; do not let a hostile target make us buffer 4 MiB.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxGRPCResponseBytes)),
		// One connection carries one health check: a few hundred bytes each way. gRPC's default
		// 32 KiB read and write buffers were most of what a probe allocated (and, in a soak with
		// gRPC probes, a fifth of node's allocations).
		grpc.WithReadBufferSize(grpcBufferBytes),
		grpc.WithWriteBufferSize(grpcBufferBytes),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			conn, err := p.dialer.DialContext(ctx, "tcp", a, 0)
			if exhausted(err) {
				ownErr.Store(&err)
				stopWaiting()
			}
			return conn, err
		}),
	)
	if err != nil {
		return Outcome{Result: Failure, Reason: ReasonError,
			Output: fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err)}, nil
	}
	defer func() { _ = conn.Close() }()

	// kubelet dials with WithBlock: wait until the connection is ready or the deadline passes.
	if err := waitReady(waitCtx, conn); err != nil {
		if own := ownErr.Load(); own != nil {
			return exhaustedOutcome(*own)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return Outcome{Result: Failure, Reason: ReasonTimeout,
				Output: fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err)}, nil
		}
		return Outcome{Result: Failure, Reason: classifyNetError(err),
			Output: fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err)}, nil
	}

	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		st, ok := status.FromError(err)
		if ok {
			switch st.Code() {
			case codes.Unimplemented:
				return Outcome{Result: Failure, Reason: ReasonProtocol,
					Output: "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " + st.Message()}, nil
			case codes.DeadlineExceeded:
				return Outcome{Result: Failure, Reason: ReasonTimeout,
					Output: fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)}, nil
			default:
			}
		}
		return Outcome{Result: Failure, Reason: ReasonError, Output: fmt.Sprintf("error: health rpc probe failed: %+v", err)}, nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Outcome{Result: Failure, Reason: ReasonNotServing,
			Output: fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())}, nil
	}
	return Outcome{Result: Success, Output: "service healthy"}, nil
}

// waitReady connects conn and waits for the Ready state (or ctx's end), like a blocking dial:
// transient failures are retried by gRPC until the deadline.
func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		s := conn.GetState()
		switch s {
		case connectivity.Ready:
			return nil
		case connectivity.Shutdown:
			return errors.New("grpc: the client connection is closing")
		default:
		}
		if !conn.WaitForStateChange(ctx, s) {
			return ctx.Err()
		}
	}
}
