package aggregator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/remotesec"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// Defaults of `node fleet` (cmd/node).
const (
	DefaultListen       = "127.0.0.1:10256"
	DefaultRemoteListen = "127.0.0.1:10257"
	// DefaultGracePeriod is kube-controller-manager's --node-monitor-grace-period default.
	DefaultGracePeriod = 40 * time.Second
)

// Config configures an aggregator.
type Config struct {
	Listen          string        // HTTP API
	RemoteListen    string        // protoactor remote (gRPC) server
	RemoteAdvertise string        // address nodes dial, when RemoteListen's host is unspecified
	GracePeriod     time.Duration // contact-less time after which a node turns Unknown
	TLS             *remotesec.TLS
	Logger          hclog.Logger
	ActorLogger     hclog.Logger // protoactor's own logs; default: none
}

// Aggregator is one fleet aggregator: the fleet actor, the guarded remote and the HTTP API. It
// keeps internal/lifecycle's contract: New validates and starts nothing, Start brings everything
// up (or nothing), Stop takes it down, Failed reports the HTTP server failing on its own.
type Aggregator struct {
	cfg      Config
	log      hclog.Logger
	actorLog hclog.Logger

	// Set by a successful Start.
	sys    *actor.ActorSystem
	remote *remote.Remote
	fleet  *actor.PID
	srv    *http.Server
	api    string
	failed chan error    // the HTTP server's failure (buffered 1, never closed)
	served chan struct{} // closed when the HTTP server's goroutine ended
}

// Validate checks the addresses and the grace period (not TLS: LoadTLS checked it); a bad field is
// an error naming its `node fleet` flag.
func (c Config) Validate() error {
	_, port, err := net.SplitHostPort(c.Listen)
	if err == nil {
		_, err = net.LookupPort("tcp", port) // a number or a service name, as net.Listen takes it
	}
	if err != nil {
		return fmt.Errorf("--listen %q: %w", c.Listen, err)
	}
	if err := remotesec.CheckListen(c.RemoteListen); err != nil {
		return fmt.Errorf("--remote-listen: %w", err)
	}
	if c.RemoteAdvertise != "" {
		host, port, err := net.SplitHostPort(c.RemoteAdvertise)
		if err != nil || host == "" {
			return fmt.Errorf("--remote-advertise %q: want host:port", c.RemoteAdvertise)
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
			return fmt.Errorf("--remote-advertise %q: port %q: want 1-65535", c.RemoteAdvertise, port)
		}
	}
	if c.GracePeriod <= 0 {
		return fmt.Errorf("--node-monitor-grace-period %v: must be a positive duration (e.g. 40s)", c.GracePeriod)
	}
	return nil
}

// New validates cfg (Validate) and returns an aggregator that has not started: it binds nothing
// and spawns nothing until Start.
func New(cfg Config) (*Aggregator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Aggregator{cfg: cfg, log: cfg.Logger, actorLog: cfg.ActorLogger, failed: make(chan error, 1), served: make(chan struct{})}
	if a.log == nil {
		a.log = hclog.NewNullLogger()
	}
	if a.actorLog == nil {
		a.actorLog = hclog.NewNullLogger()
	}
	return a, nil
}

// Start binds the HTTP listener and the guarded remote, spawns the fleet actor and serves the
// API. It returns once both listen; on error it has undone everything it began, and the error
// names the flag whose address failed ("--listen ...", "--remote-listen: ..."). ctx bounds the
// start only. Call it once.
func (a *Aggregator) Start(ctx context.Context) error {
	cfg := a.cfg
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	sys := actor.NewActorSystem(logging.SystemOption(a.actorLog))
	r, err := remotesec.Start(sys, remotesec.Config{
		Listen:     cfg.RemoteListen,
		Advertise:  cfg.RemoteAdvertise,
		TLS:        cfg.TLS,
		Accept:     fleetv1.ToAggregator(),
		Targets:    []string{ActorName},
		Logger:     a.log.Named("remote"),
		Registerer: reg,
		Inspect:    checkNodeIdentity,
	})
	if err != nil {
		sys.Shutdown()
		ln.Close()
		return fmt.Errorf("--remote-listen: %w", err)
	}
	g := &gauges{}
	registerGauges(reg, g)
	tickEvery := min(time.Second, cfg.GracePeriod/4)
	fa := &fleetActor{book: NewBook(uint64(time.Now().UnixNano()), cfg.GracePeriod), now: time.Now, tickEvery: tickEvery, log: a.log.Named("fleet"), g: g}
	pid, err := sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return fa }), ActorName)
	if err != nil {
		remotesec.Stop(r)
		sys.Shutdown()
		ln.Close()
		return fmt.Errorf("spawn the fleet actor: %w", err)
	}
	a.sys, a.remote, a.fleet, a.api = sys, r, pid, ln.Addr().String()
	a.srv = &http.Server{Handler: newHandler(sys.Root, pid, reg, a.log.Named("http")), ReadHeaderTimeout: 10 * time.Second}
	go func() { // ends when the server fails or Stop shuts it down
		defer close(a.served)
		if err := a.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			a.failed <- fmt.Errorf("http server: %w", err)
		}
	}()
	a.log.Info("fleet aggregator is running", "api", "http://"+a.api, "remote", a.Remote(), "mtls", cfg.TLS != nil, "node_monitor_grace_period", cfg.GracePeriod)
	return nil
}

// API is the HTTP API's address as bound (host:port), once Start succeeded.
func (a *Aggregator) API() string { return a.api }

// Remote is the remote's address as nodes dial it (the advertised one, else the bound one), once
// Start succeeded.
func (a *Aggregator) Remote() string {
	if a.sys == nil {
		return ""
	}
	return a.sys.Address()
}

// Failed yields the HTTP server's failure, at most once (internal/lifecycle.Failing). The
// aggregator keeps running otherwise: stop it.
func (a *Aggregator) Failed() <-chan error { return a.failed }

// Stop shuts the HTTP server down (in-flight requests get until ctx ends, then their connections
// are closed), stops the remote, stops the fleet actor (within protoactor's 10 s poison future)
// and shuts the actor system down. It returns once all of it ended. Call it once, after a Start
// that succeeded.
func (a *Aggregator) Stop(ctx context.Context) error {
	var errs []error
	if err := a.srv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("http server shutdown: %w", err))
		_ = a.srv.Close() // the deadline passed: close the connections still open
	}
	<-a.served
	remotesec.Stop(a.remote)
	if err := a.sys.Root.PoisonFuture(a.fleet).Wait(); err != nil {
		errs = append(errs, fmt.Errorf("stop the fleet actor: %w", err))
	}
	a.sys.Shutdown()
	return errors.Join(errs...)
}

func registerGauges(reg *prometheus.Registry, g *gauges) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "probeactor_fleet_nodes", Help: "Nodes known to the aggregator, by Ready status.", ConstLabels: prometheus.Labels{"ready": "True"}},
			func() float64 { return float64(g.ready.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "probeactor_fleet_nodes", Help: "Nodes known to the aggregator, by Ready status.", ConstLabels: prometheus.Labels{"ready": "Unknown"}},
			func() float64 { return float64(g.unknown.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "probeactor_fleet_result_keys", Help: "Probe results held, all nodes."},
			func() float64 { return float64(g.keys.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "probeactor_fleet_pods", Help: "Pods held, all nodes."},
			func() float64 { return float64(g.pods.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "probeactor_fleet_changes_applied_total", Help: "Result and pod changes applied."},
			func() float64 { return float64(g.changesApplied.Load()) }),
	)
	for st := range g.batches {
		if st == 0 {
			continue
		}
		label := strings.ToLower(strings.TrimPrefix(fleetv1.AckStatus(st).String(), "ACK_STATUS_"))
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "probeactor_fleet_batches_total",
			Help: "Batches answered, by outcome.", ConstLabels: prometheus.Labels{"status": label}},
			func() float64 { return float64(g.batches[st].Load()) }))
	}
}
