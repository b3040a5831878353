package remotesec

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
)

// Defaults of the remote settings Start applies.
const (
	// DefaultMaxMessageBytes bounds one gRPC message (a MessageBatch) both ways: a node's snapshot
	// of ~100,000 result keys fits.
	DefaultMaxMessageBytes = 16 << 20
	// WriterQueueSize is the initial capacity of each endpoint writer's ring buffer. protoactor's
	// default (1,000,000) costs ~15 MiB of heap per peer; the fleet keeps at most a few requests
	// in flight per peer.
	WriterQueueSize = 4096
	// KeepaliveTime and KeepaliveTimeout detect a silent peer (a partition rather than a reset)
	// within ~15 s on both the client and the server side.
	KeepaliveTime    = 10 * time.Second
	KeepaliveTimeout = 5 * time.Second
	// DialTimeout bounds one connect attempt of an endpoint writer (protoactor retries 5 times,
	// 2 s apart, then reports the endpoint terminated).
	DialTimeout = 2 * time.Second
	// maxTableEntries bounds the type/target/sender tables of one batch.
	maxTableEntries = 1024
)

// Config configures a guarded protoactor remote.
type Config struct {
	// Listen is the host:port of the remote (gRPC) server; port 0 picks a free port. A host that
	// is not loopback requires TLS.
	Listen string
	// Advertise is the host:port peers dial to reach this process (the address in its PIDs).
	// Default: the listen address; required when Listen's host is unspecified (0.0.0.0, ::).
	Advertise string
	// TLS enables mutual TLS (TLS 1.3, client certificates required); see LoadTLS.
	TLS *TLS
	// Accept lists the full protobuf names of the messages peers may send (besides protoactor's
	// remote watch messages and DeadLetterResponse, always accepted).
	Accept []string
	// Targets lists the actor ids peers may address (e.g. "fleet").
	Targets []string
	// Futures lets peers answer this process's RequestFuture calls ("future$…" targets).
	Futures bool
	// MaxMessageBytes bounds one gRPC message; default DefaultMaxMessageBytes.
	MaxMessageBytes int
	// Logger receives refusals (Warn). Default: none.
	Logger hclog.Logger
	// Registerer, when set, gets probeactor_remote_refused_total{reason}.
	Registerer prometheus.Registerer
	// Inspect, when set, sees every envelope that passed the guard's own checks (typeName, the
	// serialized message) with what is known of the peer; an error refuses it like the guard's
	// own checks (reason "identity"). The aggregator binds a node's name to its certificate here.
	Inspect func(typeName string, data []byte, peer Peer) error
}

// Start configures protoactor's remote on sys with the guard, keepalives, small writer queues, a
// message size bound and (when configured) mutual TLS, and starts it. It returns an error instead
// of panicking when the address cannot be listened on, and refuses a non-loopback listener
// without TLS. Stop it with Stop.
func Start(sys *actor.ActorSystem, cfg Config) (*remote.Remote, error) {
	rc, err := configure(sys, cfg)
	if err != nil {
		return nil, err
	}
	r := remote.NewRemote(sys, rc)
	if err := startRemote(r); err != nil {
		return nil, fmt.Errorf("remote listen %s: %w", cfg.Listen, err)
	}
	return r, nil
}

// configure validates cfg and returns protoactor's remote configuration with everything Start
// applies (the guard, keepalives, writer queues, size bounds, mutual TLS): Start's first half,
// apart so that tests can check the configuration without listening. Only Start uses it.
func configure(sys *actor.ActorSystem, cfg Config) (*remote.Config, error) {
	host, port, err := splitListen(cfg.Listen)
	if err != nil {
		return nil, err
	}
	if cfg.TLS == nil && !isLoopback(host) {
		return nil, fmt.Errorf("remote listen address %s is not loopback: configure mutual TLS (--tls-cert-file, --tls-private-key-file, --client-ca-file) to listen on it", cfg.Listen)
	}
	if cfg.Advertise == "" && isUnspecified(host) {
		return nil, fmt.Errorf("remote listen address %s listens on every interface: give the address peers dial (advertise)", cfg.Listen)
	}
	dialHost := host
	if cfg.Advertise != "" {
		ahost, _, err := net.SplitHostPort(cfg.Advertise)
		if err != nil || ahost == "" {
			return nil, fmt.Errorf("advertised address %q: want host:port", cfg.Advertise)
		}
		dialHost = ahost
	}
	if cfg.TLS != nil {
		if err := cfg.TLS.names(dialHost); err != nil {
			return nil, err
		}
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	g := &guard{tls: cfg.TLS != nil, log: log}
	g.policy = newPolicy(cfg, sys.Address)
	if cfg.Registerer != nil {
		g.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probeactor_remote_refused_total",
			Help: "Messages and RPCs the remote guard refused (the peer's stream was closed), by reason.",
		}, []string{"reason"})
		for _, r := range []string{reasonProtocol, reasonPeer, reasonType, reasonSerializer, reasonIndex, reasonTarget, reasonSender, reasonRPC, reasonIdentity} {
			g.rejected.WithLabelValues(r)
		}
		if err := cfg.Registerer.Register(g.rejected); err != nil {
			return nil, fmt.Errorf("register remote metrics: %w", err)
		}
	}

	serverCreds := insecure.NewCredentials()
	clientCreds := insecure.NewCredentials()
	if cfg.TLS != nil {
		serverCreds = credentials.NewTLS(cfg.TLS.Server)
		clientCreds = credentials.NewTLS(cfg.TLS.Client)
	}
	opts := []remote.ConfigOption{
		remote.WithServerOptions(
			grpc.Creds(serverCreds),
			grpc.ChainUnaryInterceptor(g.unary),
			grpc.ChainStreamInterceptor(g.stream),
			grpc.MaxRecvMsgSize(cfg.MaxMessageBytes),
			grpc.MaxSendMsgSize(cfg.MaxMessageBytes),
			grpc.MaxConcurrentStreams(16),
			grpc.ConnectionTimeout(10*time.Second),
			grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: KeepaliveTime / 2, PermitWithoutStream: true}),
			grpc.KeepaliveParams(keepalive.ServerParameters{Time: KeepaliveTime, Timeout: KeepaliveTimeout}),
		),
		remote.WithDialOptions(
			grpc.WithTransportCredentials(clientCreds),
			// A blocking dial with a timeout: protoactor's endpoint writer overwrites its connection
			// on every failed connect attempt without closing it, so a non-blocking dial to a peer
			// that is down leaks a ClientConn (and its reconnect loop) per attempt. A blocking dial
			// that fails is closed by gRPC itself.
			grpc.WithBlock(),
			grpc.WithReturnConnectionError(),
			grpc.WithTimeout(DialTimeout),
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}, MinConnectTimeout: DialTimeout}),
			grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: KeepaliveTime, Timeout: KeepaliveTimeout, PermitWithoutStream: true}),
			grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(cfg.MaxMessageBytes), grpc.MaxCallRecvMsgSize(cfg.MaxMessageBytes)),
		),
		remote.WithEndpointWriterQueueSize(WriterQueueSize),
		remote.WithEndpointManagerQueueSize(WriterQueueSize),
	}
	if cfg.Advertise != "" {
		opts = append(opts, remote.WithAdvertisedHost(cfg.Advertise))
	}
	return remote.Configure(host, port, opts...), nil
}

// startRemote turns remote.Start's panic on a listen failure into an error. The panic happens
// before anything is registered or started, so nothing is left half-started.
func startRemote(r *remote.Remote) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	r.Start()
	return nil
}

// Stop shuts a started remote down: it tells connected peers it is leaving and closes every
// endpoint, waiting at most gracefulStopWait for gRPC to drain, then stops the gRPC server hard.
//
// The pinned protoactor's graceful shutdown has two faults Stop works around:
//   - It can panic with "send on closed channel": its endpoint manager signals every endpoint
//     reader on the reader's disconnect channel, which a reader whose stream just ended has closed
//     but not yet removed (endpoint_reader.go's deferred close). Peers that stop together hit it
//     (reproduced by cluster/membership's tests under load). The panic leaves the endpoint manager
//     stopped and the gRPC server running, so Stop recovers exactly that panic and finishes with a
//     hard stop of the server; any other panic propagates.
//   - A peer that connects while the remote stops (a fleet aggregator dialling back a node that
//     said hello a moment before) gets a stream the suspended endpoint reader never ends, and
//     gRPC's graceful stop waits for it until protoactor's own 10 s timer: node's stop overran its
//     deadline (cmd/node's assembly test, under load). Past gracefulStopWait Stop stops the server
//     hard, which ends that stream and the graceful stop with it.
func Stop(r *remote.Remote) {
	if r != nil {
		stop(r.Shutdown, gracefulStopWait, func(cut bool) {
			if cut {
				r.Logger().Warn("protoactor's graceful remote shutdown did not finish within " + gracefulStopWait.String() +
					" (a peer's stream stayed open); stopped the gRPC server hard")
				return
			}
			r.Logger().Warn("protoactor's graceful remote shutdown panicked (send on a closed endpoint reader channel); stopped the gRPC server hard")
		})
	}
}

// gracefulStopWait bounds the graceful part of Stop. A graceful stop that ends normally takes a
// few milliseconds (every reader answers at once); the bound only matters for a stream that
// protoactor leaves open.
const gracefulStopWait = 2 * time.Second

// stop runs shutdown(true) and falls back to shutdown(false), reported through fellBack, when it
// has not returned within wait (cut) or after protoactor's send on a closed reader channel (see
// Stop). Any other panic of shutdown(true) propagates.
func stop(shutdown func(graceful bool), wait time.Duration, fellBack func(cut bool)) {
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		shutdown(true)
	}()
	var p any
	select {
	case p = <-done:
	case <-time.After(wait):
		fellBack(true)
		shutdown(false) // gRPC's hard stop ends the streams the graceful stop waits for
		p = <-done
	}
	if p == nil {
		return
	}
	if e, ok := p.(runtime.Error); !ok || e.Error() != "send on closed channel" {
		panic(p)
	}
	fellBack(false)
	shutdown(false)
}

func newPolicy(cfg Config, self func() string) *policy {
	p := &policy{types: map[string]bool{}, targets: map[string]bool{}, futures: cfg.Futures, self: self, maxTypes: maxTableEntries, inspect: cfg.Inspect}
	for _, t := range builtinTypes {
		p.types[t] = true
	}
	for _, t := range cfg.Accept {
		p.types[t] = true
	}
	for _, t := range cfg.Targets {
		p.targets[t] = true
	}
	return p
}

// CheckListen refuses a listen address Start would refuse for its form: no port, or a port
// that is not a number from 0 to 65535 (protoactor remote takes no service name).
func CheckListen(listen string) error {
	_, _, err := splitListen(listen)
	return err
}

func splitListen(listen string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("remote listen address %q: %w", listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("remote listen address %q: port %q is not a number from 0 to 65535", listen, portStr)
	}
	return host, port, nil
}

// isLoopback: 127.0.0.0/8, ::1 or localhost.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

func isUnspecified(host string) bool {
	if host == "" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsUnspecified()
}

// TLS is the mutual-TLS configuration of one fleet member: its certificate (used both to serve and
// to dial: every member is both), and the fleet CA that must have signed every peer's.
type TLS struct {
	Server *tls.Config
	Client *tls.Config
	cert   *tls.Certificate
}

// LoadTLS reads a member's certificate and key (PEM) and the fleet CA bundle (PEM). Errors name
// the flag the file came from. The certificate must be usable as both server and client
// certificate (extended key usages serverAuth and clientAuth, or none).
func LoadTLS(certFile, keyFile, caFile string) (*TLS, error) {
	if certFile == "" && keyFile == "" && caFile == "" {
		return nil, nil
	}
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, errors.New("--tls-cert-file, --tls-private-key-file and --client-ca-file go together: give all three for mutual TLS, or none")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file %s / --tls-private-key-file %s: %w", certFile, keyFile, err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		return nil, fmt.Errorf("--tls-cert-file %s: no certificate", certFile)
	}
	if err := bothUsages(leaf); err != nil {
		return nil, fmt.Errorf("--tls-cert-file %s: %w", certFile, err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--client-ca-file %s: %w", caFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--client-ca-file %s: no PEM certificate in it", caFile)
	}
	return NewTLS(cert, pool), nil
}

// NewTLS builds the configuration from a loaded certificate and the fleet CA pool.
func NewTLS(cert tls.Certificate, ca *x509.CertPool) *TLS {
	return &TLS{
		Server: &tls.Config{
			MinVersion:   tls.VersionTLS13,
			Certificates: []tls.Certificate{cert},
			ClientCAs:    ca,
			ClientAuth:   tls.RequireAndVerifyClientCert,
		},
		Client: &tls.Config{
			MinVersion:   tls.VersionTLS13,
			Certificates: []tls.Certificate{cert},
			RootCAs:      ca,
		},
		cert: &cert,
	}
}

// names checks that the member's own certificate names the host peers dial, so a misconfigured
// certificate fails at start with a clear message rather than at every peer's handshake.
func (t *TLS) names(host string) error {
	if t.cert == nil || t.cert.Leaf == nil {
		return nil
	}
	if err := t.cert.Leaf.VerifyHostname(host); err != nil {
		return fmt.Errorf("--tls-cert-file: the certificate does not name the advertised host %s (add it as an IP or DNS subject alternative name): %w", host, err)
	}
	return nil
}

// bothUsages: a fleet member's certificate serves and dials, so it needs both extended key
// usages (or none, which Go accepts for both).
func bothUsages(c *x509.Certificate) error {
	if len(c.ExtKeyUsage) == 0 {
		return nil
	}
	var server, client bool
	for _, u := range c.ExtKeyUsage {
		switch u {
		case x509.ExtKeyUsageServerAuth:
			server = true
		case x509.ExtKeyUsageClientAuth:
			client = true
		case x509.ExtKeyUsageAny:
			server, client = true, true
		default:
		}
	}
	if !server || !client {
		return errors.New("the certificate must allow both serverAuth and clientAuth (every fleet member serves and dials)")
	}
	return nil
}
