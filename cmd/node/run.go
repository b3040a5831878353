package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors"
	"github.com/probeactor/probeactor/actors/clock"
	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/cmd/node/internal/demo"
	"github.com/probeactor/probeactor/cmd/node/internal/events"
	"github.com/probeactor/probeactor/cmd/node/internal/podapi"
	"github.com/probeactor/probeactor/cmd/node/internal/proc"
	"github.com/probeactor/probeactor/cmd/node/internal/server"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// The process runtime is the actor core's container runtime, and node is the HTTP server's source.
var (
	_ actors.Runtime = (*proc.Runtime)(nil)
	_ server.Source  = (*node)(nil)
)

// runConfig is `node run`'s flags.
type runConfig struct {
	files          fileList
	listen         string
	rootDir        string
	logLevel       string
	logFormat      string
	backoffInitial time.Duration
	backoffMax     time.Duration
	profiling      bool
	logOutput      io.Writer
	cleanup        func() // removes the demo's scratch directory
}

func defaultRootDir() string { return filepath.Join(os.TempDir(), "probeactor-node") }

func runCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var cfg runConfig
	fs := newFlagSet("run", "run [-f FILE]... [flags]   (no -f: the embedded demo)", stderr)
	fs.Var(&cfg.files, "f", "a manifest file (YAML or JSON, several documents allowed; \"-\" = stdin); repeatable")
	fs.StringVar(&cfg.listen, "listen", server.DefaultListen, "address of the HTTP API (kubelet's read-only port); use a non-loopback address only on purpose")
	fs.StringVar(&cfg.rootDir, "root-dir", defaultRootDir(), "directory for container logs: <root-dir>/pods/<ns>_<name>_<uid>/<container>/<restartCount>.log")
	fs.StringVar(&cfg.logLevel, "log-level", "info", "log level: trace, debug, info, warn, error")
	fs.StringVar(&cfg.logFormat, "log-format", "text", "log format on stderr: text or json")
	fs.DurationVar(&cfg.backoffInitial, "crashloop-backoff-initial", proc.DefaultInitialBackoff, "CrashLoopBackOff: delay before the second restart (doubles up to the max)")
	fs.DurationVar(&cfg.backoffMax, "crashloop-backoff-max", proc.DefaultMaxBackoff, "CrashLoopBackOff: longest delay between restarts (reset after a run of twice this)")
	fs.BoolVar(&cfg.profiling, "profiling", false, "serve Go's profiles at /debug/pprof/ on the --listen address (kubelet's enableProfilingHandler)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "error: unexpected arguments %q (manifests go after -f)\n", rest)
		return 2
	}
	cfg.logOutput = stderr
	log, err := newLogger(cfg.logLevel, cfg.logFormat, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	if cfg.backoffInitial <= 0 || cfg.backoffMax <= 0 {
		fmt.Fprintln(stderr, "error: --crashloop-backoff-initial and --crashloop-backoff-max must be positive durations (e.g. 10s, 5m)")
		return 2
	}
	if _, _, err := net.SplitHostPort(cfg.listen); err != nil {
		fmt.Fprintf(stderr, "error: --listen %q: %v\n", cfg.listen, err)
		return 2
	}

	var pods []*v1.Pod
	if len(cfg.files) > 0 {
		if pods, err = loadPods(cfg.files, stdin, stderr, time.Now()); err != nil {
			fmt.Fprintln(stderr, "node: nothing was started")
			return 1
		}
	}
	// After validation (an invalid manifest creates nothing), before anything starts.
	if err := checkRootDir(cfg.rootDir); err != nil {
		fmt.Fprintf(stderr, "error: --root-dir %q: %v\n", cfg.rootDir, err)
		return 1
	}
	if len(cfg.files) == 0 {
		if pods, cfg.cleanup, err = demoPods(); err != nil {
			fmt.Fprintf(stderr, "error: demo: %v\n", err)
			return 1
		}
		log.Info("no -f given: running the embedded demo", "hint", "watch `node get pods` or curl http://"+cfg.listen+"/pods; Ctrl-C stops it")
		log.Info("demo container web: an HTTP startup probe fails for ~6 s and holds back readiness (HTTP) and liveness (TCP); readiness then fails from 14 s to 20 s")
		log.Info("demo container api: readiness is an exec probe (cat ready); its gRPC liveness probe fails at 20 s, so it is killed and restarted once")
	}
	if cfg.cleanup != nil {
		defer cfg.cleanup()
	}
	if err := run(cfg, pods, log, stdout); err != nil {
		log.Error("node failed", "error", err)
		return 1
	}
	return 0
}

// checkRootDir makes sure container logs can be written under dir before anything starts, so an
// unusable --root-dir is a clear error rather than pods that fail one by one.
func checkRootDir(dir string) error {
	pods := filepath.Join(dir, "pods")
	if err := os.MkdirAll(pods, 0o755); err != nil {
		return fmt.Errorf("cannot create the log directory: %w", err)
	}
	f, err := os.CreateTemp(pods, ".write-check-")
	if err != nil {
		return fmt.Errorf("not writable: %w", err)
	}
	name := f.Name()
	err = f.Close()
	if rmErr := os.Remove(name); err == nil {
		err = rmErr
	}
	return err
}

func newLogger(level, format string, out io.Writer) (hclog.Logger, error) {
	lvl := hclog.LevelFromString(level)
	if lvl == hclog.NoLevel || strings.EqualFold(level, "off") {
		return nil, fmt.Errorf("--log-level %q: use trace, debug, info, warn or error", level)
	}
	if format != "text" && format != "json" {
		return nil, fmt.Errorf("--log-format %q: use text or json", format)
	}
	return hclog.New(&hclog.LoggerOptions{Name: "node", Level: lvl, Output: out, JSONFormat: format == "json"}), nil
}

// demoPods builds the embedded demo's pod; cleanup removes its scratch directory.
func demoPods() (pods []*v1.Pod, cleanup func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	ports, err := demo.FreePorts()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "probeactor-demo-")
	if err != nil {
		return nil, nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	pod := demo.Pod(self, dir, ports)
	for _, c := range pod.Spec.Containers {
		if err := os.MkdirAll(c.WorkingDir, 0o755); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	proc.SetDefaults(pod)
	probes.SetDefaults(pod)
	pod.CreationTimestamp = metav1.Now()
	if errs := append(probes.ValidatePod(pod), proc.Validate(pod)...); len(errs) > 0 {
		cleanup()
		return nil, nil, errs.ToAggregate()
	}
	return []*v1.Pod{pod}, cleanup, nil
}

// node is a running node: the process runtime, the probe tree and the HTTP server.
type node struct {
	log  hclog.Logger
	rt   *proc.Runtime
	tree *actors.Tree
	rec  *events.Recorder
}

// run starts everything, waits for SIGINT/SIGTERM and shuts down: liveness and startup probes
// stop, every container is killed with its grace period, the tree stops, nothing is left behind.
func run(cfg runConfig, pods []*v1.Pod, log hclog.Logger, stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// Listen first: an address in use fails node before any container starts.
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.listen, err)
	}
	defer ln.Close()

	n := &node{log: log, rec: events.New(stdout)}
	defer n.rec.Close()

	probeReg := prometheus.NewRegistry()
	mainReg := prometheus.NewRegistry()
	mainReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	n.rt, err = proc.New(proc.Options{
		RootDir:        cfg.rootDir,
		Clock:          clock.Real(),
		Logger:         log,
		Events:         n.rec,
		OnStatus:       func(pod *v1.Pod, st v1.PodStatus) { n.tree.SetPodStatus(pod, st) },
		SidecarStarted: n.sidecarStarted,
		InitialBackoff: cfg.backoffInitial,
		MaxBackoff:     cfg.backoffMax,
	})
	if err != nil {
		return err
	}
	// protoactor's own chatter (system started, dead letters at shutdown) only from warn on, unless
	// debugging.
	actorLog := hclog.New(&hclog.LoggerOptions{Name: "node", Level: max(log.GetLevel(), hclog.Warn), Output: cfg.logOutput, JSONFormat: cfg.logFormat == "json"})
	if log.GetLevel() <= hclog.Debug {
		actorLog = log
	}
	sys := actor.NewActorSystem(logging.SystemOption(actorLog))
	defer sys.Shutdown()
	n.tree, err = actors.Start(sys.Root,
		actors.WithRuntime(n.rt),
		actors.WithLogger(log),
		actors.WithRegistry(probeReg),
		actors.WithEventSink(n.rec),
	)
	if err != nil {
		return fmt.Errorf("start probe tree: %w", err)
	}

	srv := server.New(server.Options{
		Source:    n,
		Metrics:   prometheus.Gatherers{mainReg, probeReg},
		Probes:    probeReg,
		Logger:    log.Named("http"),
		Profiling: cfg.profiling,
	})
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }() // ends with srv.Shutdown

	// All pods or none: a pod that cannot start stops the ones already started and fails node.
	var runErr error
	added := pods[:0:0]
	for _, pod := range pods {
		n.tree.AddPod(pod)
		added = append(added, pod)
		if err := n.rt.Run(pod); err != nil {
			runErr = fmt.Errorf("start pod %s/%s: %w", pod.Namespace, pod.Name, err)
			break
		}
	}
	if runErr == nil {
		log.Info("node is running", "pods", len(pods), "api", "http://"+ln.Addr().String(), "root_dir", cfg.rootDir)
		select {
		case <-ctx.Done():
			log.Info("shutting down: stopping liveness and startup probes, killing containers with their grace periods")
		case err := <-serveErr:
			runErr = fmt.Errorf("http server: %w", err)
		}
	} else {
		log.Error("stopping the pods already started", "error", runErr)
	}
	stop() // a second Ctrl-C now kills node at once; the shims still take every container down

	n.terminatePods(added) // the API keeps answering while containers stop

	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("http server shutdown", "error", err)
	}
	if err := n.tree.Stop(); err != nil {
		log.Error("probe tree did not stop cleanly", "error", err)
	}
	n.rt.Close() // nothing probes any more: end the exec-probe guard
	if runErr == nil {
		log.Info("node stopped; no container left running")
	}
	return runErr
}

// terminatePods is kubelet's SyncTerminatingPod for every pod: liveness and startup probes stop,
// containers are killed with their grace periods (readiness keeps probing meanwhile), then the pod's
// workers are removed.
func (n *node) terminatePods(pods []*v1.Pod) {
	maxGrace := podapi.DefaultGracePeriod
	for _, pod := range pods {
		n.tree.StopLivenessAndStartup(pod)
		maxGrace = max(maxGrace, podapi.GracePeriod(pod))
	}
	// Apps and then sidecars each get their grace period; allow for both and some slack.
	ctx, cancel := context.WithTimeout(context.Background(), 2*maxGrace+10*time.Second)
	defer cancel()
	if err := n.rt.Shutdown(ctx); err != nil {
		n.log.Error("containers did not stop in time", "error", err)
	}
	for _, pod := range pods {
		n.tree.RemovePod(pod)
	}
}

// sidecarStarted asks the tree whether a sidecar's startup probe has succeeded.
func (n *node) sidecarStarted(ctx context.Context, _ *v1.Pod, containerID string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	res, ok, err := n.tree.Result(ctx, messages.ContainerID(containerID), messages.Startup)
	return err == nil && ok && res == messages.Success
}

// Pods implements server.Source: every pod with the statusManager's probe-adjusted status (the
// runtime's own view until the statusManager has one).
func (n *node) Pods(ctx context.Context) ([]v1.Pod, error) {
	specs := n.rt.Pods()
	out := make([]v1.Pod, 0, len(specs))
	for _, spec := range specs {
		pod := *spec.DeepCopy()
		pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, ok, err := n.tree.PodStatus(qctx, pod.UID)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("pod status of %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if !ok {
			st, _ = n.rt.Status(pod.UID)
		}
		if st.Phase == "" {
			st.Phase = v1.PodPending // accepted, nothing started yet
		}
		pod.Status = st
		out = append(out, pod)
	}
	return out, nil
}

// LogPath implements server.Source: the runtime's log file, running while that is the container's
// current instance and it runs.
func (n *node) LogPath(uid types.UID, container string, previous bool) (string, bool, error) {
	path, err := n.rt.LogPath(uid, container, previous)
	if err != nil || previous {
		return path, false, err
	}
	st, _ := n.rt.Status(uid)
	cs, ok := podapi.ContainerStatus(&st, container)
	return path, ok && cs.State.Running != nil, nil
}

// Events implements server.Source.
func (n *node) Events() v1.EventList { return n.rec.List() }
