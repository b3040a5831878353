package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/cluster/runner"
	"github.com/probeactor/probeactor/cmd/node/internal/demo"
	"github.com/probeactor/probeactor/cmd/node/internal/manifest"
	"github.com/probeactor/probeactor/cmd/node/internal/proc"
	"github.com/probeactor/probeactor/cmd/node/internal/rootlock"
	"github.com/probeactor/probeactor/cmd/node/internal/server"
	"github.com/probeactor/probeactor/cmd/node/internal/staticpod"
	"github.com/probeactor/probeactor/features"
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
	gates          features.Gates // --feature-gates
	profiling      bool
	manifestPath   string        // --pod-manifest-path: kubelet's static pod path ("" = none)
	fileCheck      time.Duration // --file-check-frequency
	manifestURL    string        // --manifest-url: kubelet's static pods from a URL ("" = none)
	urlHeader      headerFlag    // --manifest-url-header
	httpCheck      time.Duration // --http-check-frequency
	reattach       time.Duration // --reattach-timeout: how long containers outlive node (0: not at all)
	logOutput      io.Writer
	cleanup        func()        // removes the demo's scratch directory
	fleet          fleetConfig   // --fleet, --node-name and the TLS flags (fleet.go)
	cluster        clusterConfig // --cluster, --cluster-listen, --cluster-peers (cluster.go)
	budget         budgetFlag    // --restart-budget (budget.go)
	configFile     string        // --config: kubelet's configuration file (kubeletconfig.go)
	configDir      string        // --config-dir: its drop-in directory
}

// defaultReattachTimeout is --reattach-timeout's default: long enough for a restart or an upgrade
// of node, short enough that the containers of a node that does not come back are not left alone.
const defaultReattachTimeout = 60 * time.Second

func defaultRootDir() string { return filepath.Join(os.TempDir(), "probeactor-node") }

func runCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var cfg runConfig
	fs, recursive := runFlags(&cfg, stderr)
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "error: unexpected arguments %q (manifests go after -f)\n", rest)
		return 2
	}
	cfg.logOutput = stderr
	set := flagsSet(fs) // the command line's; --config's settings do not count as given
	var kc *kubeletConfig
	if cfg.configFile != "" || cfg.configDir != "" {
		if kc, err = applyKubeletConfig(fs, &cfg, set); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 2
		}
	}
	refuse := func(err error) int { // a bad setting: exit 2, naming the field and file it came from
		fmt.Fprintf(stderr, "error: %s\n", kc.explain(err))
		return 2
	}
	log, err := newLogger(cfg.logLevel, cfg.logFormat, stderr)
	if err != nil {
		return refuse(err)
	}
	kc.log(log)
	if cfg.backoffInitial, cfg.backoffMax, err = crashLoopBackOff(cfg.gates, cfg.backoffInitial, set["crashloop-backoff-initial"],
		cfg.backoffMax, set["crashloop-backoff-max"] || kc.sets("crashloop-backoff-max")); err != nil { // kubelet refuses the field without its gate too
		return refuse(err)
	}
	if err := checkListen(cfg.listen); err != nil {
		return refuse(fmt.Errorf("--listen %q: %w", cfg.listen, err))
	}
	if cfg.rootDir == "" {
		fmt.Fprintln(stderr, "error: --root-dir is empty: name the directory for container logs (default "+defaultRootDir()+")")
		return 2
	}
	if cfg.reattach < 0 {
		fmt.Fprintf(stderr, "error: --reattach-timeout %v: must be 0 (containers die with node) or a positive duration (e.g. 60s)\n", cfg.reattach)
		return 2
	}
	if cfg.fileCheck <= 0 {
		return refuse(errors.New("--file-check-frequency must be a positive duration (e.g. 20s)"))
	}
	if err := cfg.checkManifestURL(set); err != nil {
		return refuse(err)
	}
	cfg.cluster.given, cfg.fleet.given = set, set
	if err := cfg.cluster.validate(len(cfg.files), cfg.staticPods()); err != nil {
		return refuse(err)
	}
	if err := cfg.fleet.validate(cfg.cluster.enabled()); err != nil {
		return refuse(err)
	}
	if kc != nil && len(cfg.files) == 0 && !cfg.staticPods() { // not the demo: a node was meant
		return refuse(errors.New("--config, --config-dir: the files set neither staticPodPath nor staticPodURL, and no -f, --pod-manifest-path or --manifest-url was given: node would run no pods"))
	}

	var pods []*v1.Pod
	if !expandRecursive(&cfg.files, *recursive, stderr) {
		fmt.Fprintln(stderr, "node: nothing was started")
		return 1
	}
	if len(cfg.files) > 0 {
		assignUID := manifest.ContentUID // the same manifest, the same pod (a restarted node adopts it)
		if cfg.cluster.enabled() {       // alike on every member (cluster.go)
			assignUID = runner.ClusterUID(cfg.cluster.name)
		}
		if pods, err = loadPodsWith(cfg.files, stdin, stderr, time.Now(), cfg.gates, assignUID); err != nil {
			fmt.Fprintln(stderr, "node: nothing was started")
			return 1
		}
	}
	// After validation (an invalid manifest creates nothing), before anything starts.
	lock, err := claimRootDir(cfg.rootDir)
	if err != nil {
		fmt.Fprintf(stderr, "error: --root-dir %q: %v\n", cfg.rootDir, err)
		return 1
	}
	defer lock.Release() // the kernel releases it too, however node ends
	if cfg.manifestPath != "" {
		if _, err := os.Stat(cfg.manifestPath); err != nil {
			fmt.Fprintf(stderr, "error: %s\n", kc.explain(fmt.Errorf("--pod-manifest-path: %w", err)))
			return 1
		}
	}
	if len(cfg.files) == 0 && !cfg.staticPods() {
		if pods, cfg.cleanup, err = demoPods(cfg.gates); err != nil {
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
	ctx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	if err := run(ctx, stopSignals, cfg, pods, log, stdout); err != nil {
		log.Error("node failed", "error", err)
		return 1
	}
	return 0
}

// runFlags defines `node run`'s flags on cfg; recursive is -R's.
func runFlags(cfg *runConfig, stderr io.Writer) (fs *flag.FlagSet, recursive *bool) {
	fs = newFlagSet("run", "run [-f FILE]... [--pod-manifest-path DIR] [--manifest-url URL] [flags]   (none: the embedded demo)", stderr)
	recursive = addManifestFlags(fs, &cfg.files)
	fs.StringVar(&cfg.listen, "listen", server.DefaultListen, "address of the HTTP API (kubelet's read-only port); use a non-loopback address only on purpose")
	fs.StringVar(&cfg.rootDir, "root-dir", defaultRootDir(), "directory for container logs: <root-dir>/pods/<ns>_<name>_<uid>/<container>/<restartCount>.log")
	fs.StringVar(&cfg.logLevel, "log-level", "info", "log level: trace, debug, info, warn, error")
	fs.StringVar(&cfg.logFormat, "log-format", "text", "log format on stderr: text or json")
	fs.DurationVar(&cfg.backoffInitial, "crashloop-backoff-initial", kubeletInitialBackoff, "CrashLoopBackOff: delay before the second restart (doubles up to the max); default kubelet's: 10s, or 1s with ReduceDefaultCrashLoopBackOffDecay")
	fs.DurationVar(&cfg.backoffMax, "crashloop-backoff-max", kubeletMaxBackoff, "CrashLoopBackOff: longest delay between restarts, 1s to 300s (reset after a run of twice this); kubelet's crashLoopBackOff.maxContainerRestartPeriod: may be set only with KubeletCrashLoopBackOffMax (on by default)")
	addFeatureGatesFlag(fs, &cfg.gates, "what node does follows them as kubelet does")
	fs.BoolVar(&cfg.profiling, "profiling", false, "serve Go's profiles at /debug/pprof/ on the --listen address (kubelet's enableProfilingHandler)")
	fs.StringVar(&cfg.manifestPath, "pod-manifest-path", "", "a directory of Pod manifests (or one manifest file), followed with inotify and read in full every --file-check-frequency, as kubelet's static pods: files added start pods, removed stop them, changed replace them (with --cluster: on the member that owns each pod; give every member the same files)")
	fs.DurationVar(&cfg.fileCheck, "file-check-frequency", staticpod.DefaultPeriod, "how often --pod-manifest-path is read in full (changes are also seen as they happen, through inotify)")
	fs.StringVar(&cfg.manifestURL, "manifest-url", "", "an http(s) URL of Pod manifests, read with a GET at start and every --http-check-frequency, as kubelet's: pods it adds start, pods it drops stop, changed pods are replaced; an answer that is not 200, or empty, changes nothing; an empty List stops them all")
	fs.Var(&cfg.urlHeader, "manifest-url-header", "`NAME:VALUE,...`: HTTP headers for --manifest-url's GET, as kubelet's ('a:hello,b:again'); repeatable, and a name given twice sends both values, in order")
	fs.DurationVar(&cfg.httpCheck, "http-check-frequency", staticpod.DefaultPeriod, "how often --manifest-url is read")
	fs.DurationVar(&cfg.reattach, "reattach-timeout", defaultReattachTimeout, "how long a container outlives node (its crash, SIGKILL, an upgrade: SIGUSR2) waiting for a node on the same --root-dir to adopt it; then it is killed; 0: containers die with node; with --cluster a container outlives node only within the member's lease (about --cluster-failure-timeout), then its shim stops it")
	addFleetFlags(fs, &cfg.fleet)
	addClusterFlags(fs, &cfg.cluster)
	fs.Var(&cfg.budget, "restart-budget", budgetUsage)
	fs.StringVar(&cfg.configFile, "config", "", configUsage)
	fs.StringVar(&cfg.configDir, "config-dir", "", configDirUsage)
	return fs, recursive
}

// checkListen refuses an address net.Listen would refuse for its form: no port, or a port that
// is neither a number nor a service name. Taken or unreachable addresses fail at start.
func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return err
	}
	return nil
}

// claimRootDir makes this node the one owner of dir for as long as it runs (rootlock: a second
// node on it exits naming the holder's pid, having written nothing but an empty lock file the
// first time), then makes sure container logs can be written under it before anything starts, so
// an unusable --root-dir is a clear error rather than pods that fail one by one.
func claimRootDir(dir string) (*rootlock.Lock, error) {
	if err := os.MkdirAll(filepath.Join(dir, "pods"), 0o755); err != nil {
		return nil, fmt.Errorf("cannot create the log directory: %w", err)
	}
	lock, err := rootlock.Acquire(dir)
	if err != nil {
		return nil, err
	}
	if err := checkWritable(filepath.Join(dir, "pods")); err != nil {
		_ = lock.Release()
		return nil, err
	}
	return lock, nil
}

// checkWritable creates and removes a file in pods.
func checkWritable(pods string) error {
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

// demoPods builds the embedded demo's pod, validated under gates; cleanup removes its scratch
// directory.
func demoPods(gates features.Gates) (pods []*v1.Pod, cleanup func(), err error) {
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
	if errs := proc.Prepare(pod, time.Now(), gates); len(errs) > 0 {
		cleanup()
		return nil, nil, errs.ToAggregate()
	}
	return []*v1.Pod{pod}, cleanup, nil
}
