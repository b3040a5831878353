package aggregator

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/remotesec"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// Defaults of `node fleet`.
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

// Running is a started aggregator.
type Running struct {
	API, Remote string // the addresses actually listened on
	done        chan error
	cancel      context.CancelFunc
}

// Wait blocks until the aggregator stopped and returns why (nil after Stop or a cancelled context).
func (r *Running) Wait() error { return <-r.done }

// Stop stops the aggregator and waits for it.
func (r *Running) Stop() error { r.cancel(); return r.Wait() }

// Start starts an aggregator: the fleet actor, the guarded remote and the HTTP API. It returns
// once both listen; the aggregator runs until ctx ends or Stop.
func Start(ctx context.Context, cfg Config) (*Running, error) {
	if cfg.GracePeriod <= 0 {
		return nil, fmt.Errorf("--node-monitor-grace-period %v: must be positive", cfg.GracePeriod)
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	actorLog := cfg.ActorLogger
	if actorLog == nil {
		actorLog = hclog.NewNullLogger()
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	sys := actor.NewActorSystem(logging.SystemOption(actorLog))
	r, err := remotesec.Start(sys, remotesec.Config{
		Listen:     cfg.RemoteListen,
		Advertise:  cfg.RemoteAdvertise,
		TLS:        cfg.TLS,
		Accept:     fleetv1.ToAggregator(),
		Targets:    []string{ActorName},
		Logger:     log.Named("remote"),
		Registerer: reg,
		Inspect:    checkNodeIdentity,
	})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("--remote-listen: %w", err)
	}
	g := &gauges{}
	registerGauges(reg, g)
	tickEvery := min(time.Second, cfg.GracePeriod/4)
	fa := &fleetActor{book: NewBook(uint64(time.Now().UnixNano()), cfg.GracePeriod), now: time.Now, tickEvery: tickEvery, log: log.Named("fleet"), g: g}
	pid, err := sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return fa }), ActorName)
	if err != nil {
		remotesec.Stop(r)
		ln.Close()
		return nil, fmt.Errorf("spawn the fleet actor: %w", err)
	}
	srv := &http.Server{Handler: newHandler(sys.Root, pid, reg, log.Named("http")), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }() // ends with srv.Shutdown

	ctx, cancel := context.WithCancel(ctx)
	run := &Running{API: ln.Addr().String(), Remote: sys.Address(), done: make(chan error, 1), cancel: cancel}
	log.Info("fleet aggregator is running", "api", "http://"+run.API, "remote", run.Remote, "mtls", cfg.TLS != nil, "node_monitor_grace_period", cfg.GracePeriod)
	go func() { // ends when ctx ends or the HTTP server fails, after everything stopped
		var err error
		select {
		case <-ctx.Done():
		case err = <-serveErr:
			err = fmt.Errorf("http server: %w", err)
		}
		shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), 5*time.Second)
		if serr := srv.Shutdown(shutdownCtx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			log.Warn("http server shutdown", "error", serr)
		}
		cancelShutdown()
		remotesec.Stop(r)
		if perr := sys.Root.PoisonFuture(pid).Wait(); perr != nil {
			log.Warn("fleet actor did not stop cleanly", "error", perr)
		}
		sys.Shutdown()
		run.done <- err
	}()
	return run, nil
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

// Main is `node fleet`: it parses flags, runs an aggregator until SIGINT/SIGTERM and returns the
// exit code (2 for bad usage, 1 for failures).
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	var certFile, keyFile, caFile, logLevel, logFormat string
	fs.StringVar(&cfg.Listen, "listen", DefaultListen, "address of the HTTP API (/pods, /nodes, /events, /results, /metrics, /healthz)")
	fs.StringVar(&cfg.RemoteListen, "remote-listen", DefaultRemoteListen, "address nodes connect to (protoactor remote, gRPC); a non-loopback address needs mutual TLS")
	fs.StringVar(&cfg.RemoteAdvertise, "remote-advertise", "", "host:port nodes dial, when --remote-listen's host is 0.0.0.0 or ::")
	fs.DurationVar(&cfg.GracePeriod, "node-monitor-grace-period", DefaultGracePeriod, "time without contact after which a node's Ready condition turns Unknown")
	fs.StringVar(&certFile, "tls-cert-file", "", "PEM certificate of this aggregator (serverAuth and clientAuth, naming the advertised host); enables mutual TLS")
	fs.StringVar(&keyFile, "tls-private-key-file", "", "PEM private key of --tls-cert-file")
	fs.StringVar(&caFile, "client-ca-file", "", "PEM CA bundle that signed every node's certificate (a node's Common Name must be system:node:<node name>)")
	fs.StringVar(&logLevel, "log-level", "info", "log level: trace, debug, info, warn, error")
	fs.StringVar(&logFormat, "log-format", "text", "log format on stderr: text or json")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: node fleet [--listen ADDR] [--remote-listen ADDR] [flags]\n\nRuns the fleet aggregator: nodes' uplinks report their pods and probe results to it; it serves them\nin the API server's shapes (node get nodes, node get pods -A).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "error: unexpected arguments %q\n", fs.Args())
		return 2
	}
	lvl := hclog.LevelFromString(logLevel)
	if lvl == hclog.NoLevel {
		fmt.Fprintf(stderr, "error: --log-level %q: use trace, debug, info, warn or error\n", logLevel)
		return 2
	}
	if logFormat != "text" && logFormat != "json" {
		fmt.Fprintf(stderr, "error: --log-format %q: use text or json\n", logFormat)
		return 2
	}
	for name, addr := range map[string]string{"--listen": cfg.Listen, "--remote-listen": cfg.RemoteListen} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			fmt.Fprintf(stderr, "error: %s %q: %v\n", name, addr, err)
			return 2
		}
	}
	if cfg.GracePeriod <= 0 {
		fmt.Fprintf(stderr, "error: --node-monitor-grace-period %v: must be a positive duration (e.g. 40s)\n", cfg.GracePeriod)
		return 2
	}
	tlsCfg, err := remotesec.LoadTLS(certFile, keyFile, caFile)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	cfg.TLS = tlsCfg
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "fleet", Level: lvl, Output: stderr, JSONFormat: logFormat == "json"})
	if lvl <= hclog.Debug {
		cfg.ActorLogger = cfg.Logger.Named("protoactor")
	} else {
		cfg.ActorLogger = hclog.New(&hclog.LoggerOptions{Name: "fleet.protoactor", Level: hclog.Warn, Output: stderr, JSONFormat: logFormat == "json"})
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	run, err := Start(ctx, cfg)
	if err != nil {
		cfg.Logger.Error("fleet aggregator failed to start", "error", err)
		return 1
	}
	if err := run.Wait(); err != nil {
		cfg.Logger.Error("fleet aggregator failed", "error", err)
		return 1
	}
	cfg.Logger.Info("fleet aggregator stopped")
	return 0
}
