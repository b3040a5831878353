package probes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/features"
)

// UserAgent is the User-Agent of HTTP and gRPC probes: kubelet's "kube-probe/<major>.<minor>" for the
// Kubernetes API version this module tracks (k8s.io/api v0.37, kubelet 1.37.2).
const UserAgent = "kube-probe/1.37"

// MaxOutputLength caps the output kept from one attempt (HTTP body, exec stdout+stderr): kubelet's
// 10 KiB. Anything beyond it is discarded without being held in memory.
const MaxOutputLength = 10 * 1 << 10

// DefaultTimeout is the attempt timeout used when a probe's timeoutSeconds is 0 (the API default).
const DefaultTimeout = 1 * time.Second

// DefaultMaxResponseHeaderBytes bounds the HTTP response header a probe will read (Go's default is
// 10 MiB, which a hostile target could make every probe allocate).
const DefaultMaxResponseHeaderBytes = 64 << 10

// Prober runs single probe attempts. It is safe for concurrent use by any number of goroutines; each
// HTTP attempt has its own transport, closed with it (no keep-alives: nothing is held between attempts).
type Prober struct {
	runner                 CommandRunner
	transport              transportConfig
	dialer                 dialer
	followNonLocal         bool
	userAgent              string
	maxResponseHeaderBytes int64
	h2c                    bool // H2CContainerProbe: httpGet.protocol HTTP2 speaks h2c
	grpcTLS                bool // GRPCContainerProbeTLS: grpc.mode TLS connects over TLS
}

// Option configures a Prober.
type Option func(*Prober)

// WithFollowNonLocalRedirects makes HTTP probes follow redirects to other hosts too (kubelet's
// prober is built with false, the default here; kubelet's own tests exercise both).
func WithFollowNonLocalRedirects(follow bool) Option {
	return func(p *Prober) { p.followNonLocal = follow }
}

// WithGracefulClose makes probe sockets close exactly as kubelet's do: SO_LINGER 1 s and a FIN, which
// leaves the closing side in TIME_WAIT for 60 s. The default instead aborts the connection (RST) once
// the attempt has its answer, so neither side keeps a TIME_WAIT entry; the cost is that the target
// sees "connection reset" rather than EOF after the exchange.
func WithGracefulClose() Option {
	return func(p *Prober) { p.dialer.graceful = true }
}

// WithMaxResponseHeaderBytes overrides DefaultMaxResponseHeaderBytes (n > 0).
func WithMaxResponseHeaderBytes(n int64) Option {
	return func(p *Prober) {
		if n > 0 {
			p.maxResponseHeaderBytes = n
		}
	}
}

// WithFeatureGates makes the Prober follow kubelet's gates for the probe fields they control, as
// kubelet 1.37's prober does: with H2CContainerProbe on, an httpGet probe with protocol HTTP2 speaks
// HTTP/2 in cleartext with prior knowledge (h2c); with GRPCContainerProbeTLS on, a grpc probe with
// mode TLS connects over TLS without verifying the target's certificate. A gate that is off leaves
// its field ignored (HTTP/1.1, plaintext gRPC). The default is features.Gates{}, kubelet 1.37.2's
// defaults: both off.
func WithFeatureGates(g features.Gates) Option {
	return func(p *Prober) {
		p.h2c = g.Enabled(features.H2CContainerProbe)
		p.grpcTLS = g.Enabled(features.GRPCContainerProbeTLS)
	}
}

// New returns a Prober. runner executes exec probes; nil selects LocalRunner{} (the command runs as a
// local process in its own process group).
func New(runner CommandRunner, opts ...Option) *Prober {
	if runner == nil {
		runner = LocalRunner{}
	}
	p := &Prober{
		runner:                 runner,
		userAgent:              UserAgent,
		maxResponseHeaderBytes: DefaultMaxResponseHeaderBytes,
	}
	for _, o := range opts {
		o(p)
	}
	p.transport = transportConfig{dialer: p.dialer, maxHeaderBytes: p.maxResponseHeaderBytes, http2: os.Getenv(disableHTTP2Env) == ""}
	return p
}

// Timeout returns the attempt timeout for spec: timeoutSeconds, or DefaultTimeout when it is not
// positive.
func Timeout(spec *v1.Probe) time.Duration {
	if spec == nil || spec.TimeoutSeconds <= 0 {
		return DefaultTimeout
	}
	return time.Duration(spec.TimeoutSeconds) * time.Second
}

// Probe makes one attempt of spec against t and reports what it observed. The attempt is bounded by
// the probe's timeout (Timeout(spec)) and by ctx.
//
// Handlers are chosen in kubelet's order: exec, httpGet, tcpSocket, grpc. A nil spec is a Success
// (kubelet: "probe is nil"). The error is non-nil where kubelet's probe returns one (the caller
// retries, then discards the result): no handler (wraps ErrNoHandler), an unresolvable or invalid
// port (wraps ErrInvalidPort), an HTTP request that cannot be built, an HTTP body that broke off
// (*BodyError, with Result Failure), a CommandRunner that could not run the command, or ctx ending
// first. An unhealthy target is otherwise a Failure with a nil error. Outcome.Duration is set in
// every case.
func (p *Prober) Probe(ctx context.Context, spec *v1.Probe, t Target) (Outcome, error) {
	start := time.Now()
	out, err := p.probe(ctx, spec, t)
	if ctx.Err() != nil && out.Result != Success && out.Result != Warning {
		// The caller gave up (not our timeout): whatever the transport reported is not a verdict.
		out = Outcome{Result: Unknown, Reason: ReasonCanceled}
		err = fmt.Errorf("probe attempt abandoned: %w", ctx.Err())
	}
	out.Duration = time.Since(start)
	return out, err
}

func (p *Prober) probe(ctx context.Context, spec *v1.Probe, t Target) (Outcome, error) {
	if spec == nil {
		return Outcome{Result: Success}, nil
	}
	timeout := Timeout(spec)
	switch h := &spec.ProbeHandler; {
	case h.Exec != nil:
		return p.probeExec(ctx, h.Exec, t, timeout)
	case h.HTTPGet != nil:
		req, err := newHTTPRequest(ctx, h.HTTPGet, t.Container, t.PodIP, p.userAgent)
		if err != nil {
			reason := ReasonError
			if errors.Is(err, ErrInvalidPort) {
				reason = ReasonInvalidPort
			}
			return Outcome{Result: Unknown, Reason: reason}, err
		}
		if p.h2c && h.HTTPGet.Protocol != nil && *h.HTTPGet.Protocol == v1.HTTPProtocolHTTP2 {
			return p.doHTTPWith(&transports{cfg: p.transport, h2c: true}, req, timeout)
		}
		return p.doHTTP(req, timeout)
	case h.TCPSocket != nil:
		port, err := ResolveContainerPort(h.TCPSocket.Port, t.Container)
		if err != nil {
			return Outcome{Result: Unknown, Reason: ReasonInvalidPort}, err
		}
		host := h.TCPSocket.Host
		if host == "" {
			host = t.PodIP
		}
		return p.doTCP(ctx, joinHostPort(host, port), timeout)
	case h.GRPC != nil:
		service := ""
		if h.GRPC.Service != nil {
			service = *h.GRPC.Service
		}
		if h.GRPC.Port <= 0 || h.GRPC.Port > 65535 {
			return Outcome{Result: Unknown, Reason: ReasonInvalidPort},
				fmt.Errorf("%w: invalid port number: %d", ErrInvalidPort, h.GRPC.Port)
		}
		useTLS := p.grpcTLS && h.GRPC.Mode != nil && *h.GRPC.Mode == v1.GRPCProbeModeTLS
		return p.doGRPC(ctx, t.PodIP, service, int(h.GRPC.Port), timeout, useTLS)
	default:
		name := ""
		if t.Container != nil {
			name = t.Container.Name
		}
		return Outcome{Result: Unknown, Reason: ReasonNoHandler}, fmt.Errorf("%w for container %q", ErrNoHandler, name)
	}
}

// errorsAsExitCode reports the exit code carried by err (an error with an ExitCode() int method).
func errorsAsExitCode(err error) (int, bool) {
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		return ec.ExitCode(), true
	}
	return 0, false
}
