package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/probeactor/probeactor/actors"
	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/cmd/node/internal/events"
	"github.com/probeactor/probeactor/cmd/node/internal/proc"
	"github.com/probeactor/probeactor/cmd/node/internal/server"
	"github.com/probeactor/probeactor/cmd/node/internal/staticpod"
	"github.com/probeactor/probeactor/cmd/node/internal/statuspage"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/pidregistry"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// The process runtime is the actor core's container runtime; node is the HTTP server's source and
// runs the static pod watcher's pods.
var (
	_ actors.Runtime   = (*proc.Runtime)(nil)
	_ server.Source    = (*node)(nil)
	_ staticpod.Runner = (*node)(nil)
)

// node is everything `node run` runs: the listener and HTTP API, the event recorder, the process
// runtime, and the probe tree in its actor system. buildNode makes it, serve runs it, shutdown takes
// it down.
type node struct {
	log     hclog.Logger
	rootDir string
	ln      net.Listener
	http    *server.Server
	rec     *events.Recorder
	tries   *statuspage.Recorder // every probe attempt, for the status page at /
	rt      *proc.Runtime
	sys     *actor.ActorSystem
	tree    *actors.Tree
	static  *staticpod.Watcher // nil without --pod-manifest-path

	nodeName string       // --node-name ("" = none)
	fleet    *fleetLink   // nil without --fleet (fleet.go)
	cluster  *clusterLink // nil without --cluster (cluster.go)

	manifestPath string        // --pod-manifest-path
	fileCheck    time.Duration // --file-check-frequency

	podsMu           sync.Mutex    // a static pod's start, and housekeeping's look at which pods exist
	housekeepingStop chan struct{} // closed by shutdown
	housekeepingDone chan struct{} // closed when housekeeping has ended; nil if it never ran

	serveErr chan error // the HTTP server's end (buffered: Serve's goroutine never blocks on it)
}

// buildNode constructs the node without starting any container or serving any request. The listener
// comes first, so an address in use fails node before anything else exists. On error, whatever was
// built is taken down again.
func buildNode(cfg runConfig, log hclog.Logger, stdout io.Writer) (*node, error) {
	n := &node{log: log, rootDir: cfg.rootDir, manifestPath: cfg.manifestPath, fileCheck: cfg.fileCheck, nodeName: cfg.fleet.nodeName,
		housekeepingStop: make(chan struct{}), serveErr: make(chan error, 1)}
	fail := func(err error) (*node, error) {
		n.shutdown(nil)
		return nil, err
	}
	var err error
	if n.ln, err = net.Listen("tcp", cfg.listen); err != nil {
		return nil, fmt.Errorf("--listen %s: %w", cfg.listen, err)
	}
	n.rec = events.New(stdout)
	n.tries = statuspage.NewRecorder(time.Now)

	probeReg := prometheus.NewRegistry()
	mainReg := prometheus.NewRegistry()
	mainReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	n.rt, err = proc.New(proc.Options{
		RootDir:        cfg.rootDir,
		Clock:          clock.Real(),
		Logger:         log,
		Events:         n.rec,
		Observe:        n.observeStatus,
		InitialBackoff: cfg.backoffInitial,
		MaxBackoff:     cfg.backoffMax,
	})
	if err != nil {
		return fail(err)
	}
	// protoactor's own chatter (system started, dead letters at shutdown) only from warn on, unless
	// debugging.
	actorLog := hclog.New(&hclog.LoggerOptions{Name: "node", Level: max(log.GetLevel(), hclog.Warn), Output: cfg.logOutput, JSONFormat: cfg.logFormat == "json"})
	if log.GetLevel() <= hclog.Debug {
		actorLog = log
	}
	n.sys = actor.NewActorSystem(logging.SystemOption(actorLog))
	// node spawns a worker per probe of every pod it starts, for as long as it runs: a registry
	// of 64 buckets reaches its bound (~0.6 MiB) in the first minute, protoactor's 1,024 grow
	// towards ~9 MiB over hours (internal/pidregistry).
	if err := pidregistry.Compact(n.sys, pidregistry.DefaultBuckets); err != nil {
		return fail(err)
	}
	n.tree, err = actors.Start(n.sys.Root, // hands the runtime the tree's SetPodStatus
		actors.WithRuntime(n.rt),
		actors.WithLogger(log),
		actors.WithRegistry(probeReg),
		actors.WithEventSink(n.rec),
		actors.WithProber(n.tries.Prober(probes.New(n.rt))), // the default prober, recorded
	)
	if err != nil {
		return fail(fmt.Errorf("start probe tree: %w", err))
	}
	// A sidecar with a startup probe has started when the probe passes: the runtime learns it from
	// the tree's startup results (the subscription ends with the tree).
	err = n.tree.SubscribeFunc(context.Background(), func(b messages.ResultChanges) {
		for _, c := range b.Changes {
			if c.Result == messages.Success {
				n.rt.StartupSucceeded(c.PodUID, c.Container, string(c.ContainerID))
			}
		}
	}, actors.OfTypes(messages.Startup))
	if err != nil {
		return fail(fmt.Errorf("subscribe to startup results: %w", err))
	}
	if err := n.buildCluster(cfg, mainReg); err != nil {
		return fail(err)
	}
	if err := n.buildFleet(cfg); err != nil {
		return fail(err)
	}
	n.http = server.New(server.Options{
		Source:    n,
		Metrics:   prometheus.Gatherers{mainReg, probeReg},
		Probes:    probeReg,
		Index:     statuspage.Handler(statuspage.Options{Source: n, Attempts: n.tries, Logger: log.Named("statuspage")}),
		Logger:    log.Named("http"),
		Profiling: cfg.profiling,
	})
	return n, nil
}
