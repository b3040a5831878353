package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/actors"
	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/cluster/membership"
	"github.com/probeactor/probeactor/cluster/runner"
	"github.com/probeactor/probeactor/cluster/sharder"
	"github.com/probeactor/probeactor/cmd/node/internal/events"
	"github.com/probeactor/probeactor/cmd/node/internal/health"
	"github.com/probeactor/probeactor/cmd/node/internal/nodeobject"
	"github.com/probeactor/probeactor/cmd/node/internal/podhost"
	"github.com/probeactor/probeactor/cmd/node/internal/proc"
	"github.com/probeactor/probeactor/cmd/node/internal/server"
	"github.com/probeactor/probeactor/cmd/node/internal/staticpod"
	"github.com/probeactor/probeactor/cmd/node/internal/statuspage"
	resourceusage "github.com/probeactor/probeactor/cmd/node/internal/usage"
	"github.com/probeactor/probeactor/fleet/link"
	"github.com/probeactor/probeactor/fleet/uplink"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/lifecycle"
	"github.com/probeactor/probeactor/internal/pidregistry"
	"github.com/probeactor/probeactor/internal/procfs"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
	"github.com/probeactor/probeactor/remotesec"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// The process runtime is the actor core's container runtime; the pod host is the HTTP API's
// source and runs the static pod watcher's and the cluster runner's pods.
var (
	_ actors.Runtime      = (*proc.Runtime)(nil)
	_ server.Source       = (*podhost.Host)(nil)
	_ staticpod.Runner    = (*podhost.Host)(nil)
	_ runner.PodOps       = (*podhost.Host)(nil)
	_ lifecycle.Component = (*actors.Tree)(nil)
	_ lifecycle.Failing   = (*server.Server)(nil)
	_ lifecycle.Budgeted  = (*podhost.Host)(nil)
)

// The parts of node, by name. A mode is which of them are in the list (assemble).
const (
	partEvents       = "events"         // the event recorder: prints what is still queued when it stops
	partActorSystem  = "actor-system"   // protoactor's system (its Shutdown comes after every actor stopped)
	partRuntime      = "runtime"        // the process runtime; its stop ends the exec-probe guard
	partProbeTree    = "probe-tree"     // probeManager, workers, resultsCache, statusManager, syncLoop
	partRemote       = "remote"         // the guarded protoactor remote (--fleet-listen or --cluster-listen)
	partHTTPAPI      = "http-api"       // kubelet's read-only API and the status page
	partFleetLink    = "fleet-link"     // the feed and the uplink to the aggregator (--fleet)
	partFleetUsage   = "fleet-usage"    // samples the node's and its containers' usage, and its machine, for the aggregator (--fleet)
	partPods         = "pods"           // the pod host: starts the -f pods; its stop terminates every pod
	partHousekeeping = "housekeeping"   // forgets removed pods (static pods, a cluster's share)
	partMembership   = "membership"     // the cluster's failure detector (--cluster)
	partRunner       = "cluster-runner" // the sharder and this member's share of the pods (--cluster)
	partStaticPods   = "static-pods"    // the --pod-manifest-path and --manifest-url watcher
	partOrphans      = "orphans"        // stops what an earlier node left that no source claims
	partWatchdog     = "watchdog"       // systemd: READY=1 once every other part runs; WATCHDOG=1 while healthy
)

// node is `node run` assembled: the ordered list of the parts the flags ask for, and the pieces
// tests look at.
type node struct {
	list  *lifecycle.List
	ln    net.Listener // the API's, bound by assemble so a busy --listen fails before anything runs
	tree  *actors.Tree
	rt    *proc.Runtime
	host  *podhost.Host
	tries *statuspage.Recorder // every probe attempt, for the status page at /
	// With --cluster: the membership and the runner, told to leave the pods running on SIGUSR2.
	member *membership.Member
	runner *runner.Runner
}

// assemble builds node's parts for cfg in start order, without starting any: the only resources
// held on return are the API's listener and the event recorder's printer, which the list's first
// part and its HTTP API part release. pods are the -f pods (with --cluster: the set every member
// shares). On error nothing is left open.
func assemble(cfg runConfig, pods []*v1.Pod, log hclog.Logger, stdout io.Writer, opts ...lifecycle.Option) (_ *node, err error) {
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", cfg.listen, err)
	}
	rec := events.New(stdout)
	defer func() {
		if err != nil {
			rec.Close()
			_ = ln.Close()
		}
	}()
	n := &node{ln: ln, tries: statuspage.NewRecorder(time.Now)}
	probeReg := prometheus.NewRegistry()
	mainReg := prometheus.NewRegistry()
	mainReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	if n.rt, err = proc.New(proc.Options{RootDir: cfg.rootDir, ReattachTimeout: cfg.reattach, Clock: clock.Real(), Logger: log, Events: rec,
		InitialBackoff: cfg.backoffInitial, MaxBackoff: cfg.backoffMax, Gates: cfg.gates}); err != nil {
		return nil, err
	}
	// One fan-out of pod changes: the status page's recorder learns a pod's container IDs before
	// the tree attributes its attempts (the runtime calls subscribers before the tree's push).
	n.rt.Subscribe(n.tries.PodEvent)

	// protoactor's own chatter (system started, dead letters at shutdown) only from warn on, unless
	// debugging.
	actorLog := hclog.New(&hclog.LoggerOptions{Name: "node", Level: max(log.GetLevel(), hclog.Warn), Output: cfg.logOutput, JSONFormat: cfg.logFormat == "json"})
	if log.GetLevel() <= hclog.Debug {
		actorLog = log
	}
	sys := actor.NewActorSystem(logging.SystemOption(actorLog))
	// node spawns a worker per probe of every pod it starts, for as long as it runs: a registry
	// of 64 buckets reaches its bound (~0.6 MiB) in the first minute, protoactor's 1,024 grow
	// towards ~9 MiB over hours (internal/pidregistry).
	if err := pidregistry.Compact(sys, pidregistry.DefaultBuckets); err != nil {
		return nil, err
	}
	if cfg.cluster.enabled() { // before the tree: with --restart-budget, the member is the tree's shared budget
		if n.member, err = membership.New(sys, membership.Config{Cluster: cfg.cluster.name, Self: cfg.cluster.listen,
			Peers: strings.Split(cfg.cluster.peers, ","), FailureTimeout: cfg.cluster.failureTimeout, AwaitApplied: true,
			Logger: log.Named("cluster"), Registerer: mainReg, RestartBudget: cfg.budget.value(),
			Lease: n.rt.SetLease}); err != nil { // every container's shim holds the member's quorum lease (fencing)
			return nil, err
		}
	}
	if n.tree, err = actors.NewTree(sys.Root, append([]actors.Option{ // Start hands the runtime the tree's SetPodStatus
		actors.WithRuntime(n.rt),
		actors.WithLogger(log),
		actors.WithRegistry(probeReg),
		actors.WithEventSink(rec),
		actors.WithProber(n.tries.Prober(probes.New(n.rt, probes.WithFeatureGates(cfg.gates)))), // the default prober, recorded
	}, cfg.budget.treeOptions(n.member)...)...); err != nil {
		return nil, fmt.Errorf("probe tree: %w", err)
	}
	initial := pods
	if cfg.cluster.enabled() {
		initial = nil // the cluster runner starts this member's share
	}
	n.host = podhost.New(podhost.Options{Tree: n.tree, Runtime: n.rt, Events: rec.List, NodeName: cfg.fleet.nodeName, Initial: initial, Logger: log})
	page := statuspage.Handler(statuspage.Options{Source: n.host, Attempts: n.tries, Logger: log.Named("statuspage"),
		Startups: n.tree.ContainerStartups}) // each container's time to started and to ready
	checks := []health.Check{health.Ping,
		{Name: "probe-tree", Run: n.tree.Check},
		{Name: "runtime", Run: func(ctx context.Context) error { // its lock, which every pod operation takes
			return health.Within(ctx, func() error { n.rt.Pods(); return nil })
		}},
	}
	var housekeeping *podhost.Housekeeping         // static pods and --cluster
	if cfg.staticPods() || cfg.cluster.enabled() { // pods come and go
		housekeeping = n.host.Housekeeping(podhost.HousekeepingPeriod, n.tries.Retain)
		checks = append(checks, health.Check{Name: "housekeeping", Run: housekeeping.Check})
	}
	watchdog, err := health.FromEnvironment(checks, log.Named("systemd"))
	if err != nil {
		return nil, err
	}
	// node's own Node object (/nodes): the machine, Ready while every check passes, and with
	// --cluster the ClusterQuorum condition it reports to the fleet.
	nodeObject := nodeobject.New(nodeobject.Options{Name: cfg.fleet.nodeName, Start: time.Now(), Port: ln.Addr().(*net.TCPAddr).Port,
		NodeVersion: version, Failures: func(ctx context.Context) []string { return health.Failures(ctx, checks) }})
	resourceReg := prometheus.NewRegistry() // kubelet's /metrics/resource: what each container uses
	collector := resourceusage.NewCollector(n.rt.Running, procfs.Processes, procfs.Host)
	resourceReg.MustRegister(collector)
	var clusterWarning atomic.Pointer[func() string] // set below with --cluster: why the member runs no pods
	var fleetLink *link.Link                         // with --fleet
	api := server.New(server.Options{
		Warning: func() string {
			if f := clusterWarning.Load(); f != nil {
				return (*f)()
			}
			return ""
		},
		Listener:    ln,
		Source:      n.host,
		Metrics:     prometheus.Gatherers{mainReg, probeReg},
		Probes:      probeReg,
		Resource:    resourceReg,
		Index:       page,
		Logger:      log.Named("http"),
		Profiling:   cfg.profiling,
		ProbeStates: n.tree.ProbeStates, // node describe
		Health:      health.Handler(checks, log.Named("health")),
		Node:        nodeObject.Node,
	})

	parts := []lifecycle.Part{
		{Name: partEvents, Component: lifecycle.Funcs{StopFunc: func(context.Context) error { rec.Close(); return nil }}},
		{Name: partActorSystem, Component: lifecycle.Funcs{StopFunc: func(context.Context) error { sys.Shutdown(); return nil }}},
		{Name: partRuntime, Component: n.rt},
		{Name: partProbeTree, Component: lifecycle.Funcs{StartFunc: n.startTree, StopFunc: n.tree.Stop}},
	}
	if r := remoteConfig(cfg, log); r != nil {
		parts = append(parts, lifecycle.Part{Name: partRemote, Component: remotesec.NewServer(sys, *r)})
	}
	parts = append(parts, lifecycle.Part{Name: partHTTPAPI, Component: api})
	if cfg.fleet.aggregator != "" {
		l, err := link.New(link.Config{System: sys, Results: n.tree, Pods: n.rt.Pods, View: n.host.View,
			Aggregator: cfg.fleet.aggregator, Node: cfg.fleet.nodeName, Heartbeat: cfg.fleet.statusEvery, MTLS: cfg.fleet.tls != nil, Logger: log.Named("fleet")})
		if err != nil {
			return nil, fmt.Errorf("--fleet: %w", err)
		}
		n.rt.Subscribe(func(e proc.PodEvent) { l.PodChanged(e.Pod.UID) })
		// What the node and its containers use, as rates over each --node-status-update-frequency
		// (the aggregator's top), and what the node says of itself (capacity, system info, labels;
		// the aggregator's /nodes, with its own Ready), read as often: right after the link, so it
		// stops before the link's flush, which sends the last window.
		parts = append(parts, lifecycle.Part{Name: partFleetLink, Component: l}, lifecycle.Part{Name: partFleetUsage, Component: &usageReporter{
			sample: collector.Sample, report: l.SetUsage, machine: nodeObject.Machine, setNode: l.SetNode,
			period: cfg.fleet.statusEvery, clock: clock.Real(), log: log.Named("fleet")}})
		fleetLink = l
	}
	parts = append(parts, lifecycle.Part{Name: partPods, Component: n.host})
	if housekeeping != nil {
		parts = append(parts, lifecycle.Part{Name: partHousekeeping, Component: housekeeping})
	}
	static := staticpod.Options{Path: cfg.manifestPath, Period: cfg.fileCheck, URL: cfg.manifestURL, Header: cfg.urlHeader.header,
		URLPeriod: cfg.httpCheck, Runner: n.host, Logger: log, Reserved: pods, Gates: cfg.gates, Registerer: mainReg}
	if cfg.cluster.enabled() {
		m := n.member
		r, err := runner.New(runner.Config{System: sys, Membership: m, Pods: n.host, FilePods: pods, Logger: log.Named("cluster"), Registerer: mainReg,
			Margin: sharder.Margin(cfg.cluster.failureTimeout), Quorum: func(reason string) {
				cond := quorumCondition(reason, time.Now())
				nodeObject.SetCondition(nodeCondition(cond)) // the member's own /nodes says what the aggregator says
				if fleetLink != nil {
					fleetLink.SetCondition(cond)
				}
			},
			// What an earlier node on this --root-dir left running is held (no peer starts it) until
			// this member adopts it or, a failure timeout on, sweeps it: the orphans part's job.
			Recovered: n.rt.Recovered, Sweep: n.rt.StopOrphans, HoldFor: cfg.cluster.failureTimeout})
		if err != nil {
			return nil, err
		}
		parts = append(parts, lifecycle.Part{Name: partMembership, Component: m}, lifecycle.Part{Name: partRunner, Component: r})
		n.runner = r
		warning := r.Warning
		clusterWarning.Store(&warning)
		// The watcher only reads; the runner runs this member's share (cluster.go).
		static.Set, static.Cluster = r.SetStaticPods, cfg.cluster.name
	}
	var seen <-chan struct{} // nil: every source was read by now (the -f pods)
	if cfg.staticPods() {
		w := staticpod.New(static)
		parts = append(parts, lifecycle.Part{Name: partStaticPods, Component: w})
		seen = w.Seen()
	}
	// Last: every source had its first say (the -f pods started, the static pods' first read). With
	// --cluster the runner sweeps instead, once the cluster had its time to give them back.
	if !cfg.cluster.enabled() {
		parts = append(parts, lifecycle.Part{Name: partOrphans, Component: n.host.Orphans(seen)})
	}
	// After all of them: READY=1 says node runs; stopped first, STOPPING=1 says the stop is node's.
	parts = append(parts, lifecycle.Part{Name: partWatchdog, Component: watchdog})
	n.list = lifecycle.New(parts, append([]lifecycle.Option{lifecycle.WithLogger(log.Named("lifecycle"))}, opts...)...)
	return n, nil
}

// startTree starts the probe tree and subscribes the runtime to its readiness and startup results
// (the subscription ends with the tree): a sidecar with a startup probe has started when the probe
// passes, and the runtime keeps each container's latest outcomes with its record, so a node that
// adopts the container reports it ready and started at once (kubelet 1.35+, KEP-4781).
func (n *node) startTree(ctx context.Context) error {
	if err := n.tree.Start(ctx); err != nil {
		return err
	}
	err := n.tree.SubscribeFunc(context.Background(), func(b messages.ResultChanges) {
		for _, c := range b.Changes {
			n.rt.ProbeResult(c.PodUID, c.Container, string(c.ContainerID), c.Type, c.Result == messages.Success)
			if c.Type == messages.Startup && c.Result == messages.Success {
				n.rt.StartupSucceeded(c.PodUID, c.Container, string(c.ContainerID))
			}
		}
	}, actors.OfTypes(messages.Readiness, messages.Startup))
	if err != nil {
		_ = n.tree.Stop(ctx)
		return fmt.Errorf("subscribe to startup results: %w", err)
	}
	return nil
}

// remoteConfig is the process's one remote: the cluster's (--cluster-listen; it also takes the
// aggregator's answers to the uplink with --fleet), else the fleet's (--fleet-listen), else none.
func remoteConfig(cfg runConfig, log hclog.Logger) *remotesec.Config {
	var rc remotesec.Config
	switch {
	case cfg.cluster.enabled():
		rc = remotesec.Config{Listen: cfg.cluster.listen, TLS: cfg.fleet.tls, Logger: log.Named("remote")}
	case cfg.fleet.aggregator != "":
		rc = remotesec.Config{Listen: cfg.fleet.listen, TLS: cfg.fleet.tls, Logger: log.Named("remote")}
	default:
		return nil
	}
	if cfg.fleet.aggregator != "" {
		rc.Accept, rc.Targets, rc.Futures = fleetv1.ToNode(), []string{uplink.ActorName}, true
	}
	if cfg.cluster.enabled() {
		rc = membership.RemoteConfig(rc)
	}
	return &rc
}

// run is node's life: assemble the parts the flags ask for (nothing runs yet), start them in order
// (the API, then the pods, all or none), serve until ctx ends or a part fails, and stop them in
// reverse. stopSignals is called once serving ends, so a second Ctrl-C during shutdown kills node
// at once (the shims then keep the containers for --reattach-timeout, as after any death of node).
//
// SIGUSR2 is the planned restart (an upgrade, `systemctl restart` with KillMode=process): node stops
// as for SIGTERM except that it leaves its containers running, each waiting for the next node on
// the same --root-dir within --reattach-timeout (nginx's USR2 is its binary upgrade too).
func run(ctx context.Context, stopSignals func(), cfg runConfig, pods []*v1.Pod, log hclog.Logger, stdout io.Writer) error {
	leave := make(chan os.Signal, 1)
	signal.Notify(leave, syscall.SIGUSR2)
	defer signal.Stop(leave)
	n, err := assemble(cfg, pods, log, stdout)
	if err != nil {
		return err
	}
	defer n.ln.Close() // the API closes it when it stops; this covers a start that failed before it
	// A signal during the start does not fail it: the parts start, then stop at once, in order.
	if err := n.list.Start(context.Background()); err != nil {
		stopSignals()
		return err
	}
	log.Info("node is running", "pods", len(pods), "api", "http://"+n.ln.Addr().String(), "root_dir", cfg.rootDir, "pod_manifest_path", cfg.manifestPath, "manifest_url", cfg.manifestURL,
		"parts", strings.Join(n.list.Names(), ","))
	left := false
	select {
	case <-ctx.Done():
		log.Info("shutting down: stopping liveness and startup probes, killing containers with their grace periods")
	case <-leave:
		if cfg.reattach > 0 {
			left = true
			n.host.Leave()
			if n.runner != nil { // a cluster member stops nothing and announces no leave: its peers wait for the lease
				n.runner.Leave()
				n.member.Abandon()
			}
			log.Info("exiting for a restart: the containers keep running for the next node on this --root-dir", "reattach_timeout", cfg.reattach)
		} else {
			log.Warn("SIGUSR2 with --reattach-timeout 0: containers cannot outlive node; shutting down as for SIGTERM")
		}
	case err = <-n.list.Failed():
	}
	stopSignals()
	n.list.Stop()
	switch {
	case err != nil:
	case left:
		log.Info("node stopped; its containers wait for the next node", "reattach_timeout", cfg.reattach)
	default:
		log.Info("node stopped; no container left running")
	}
	return err
}
