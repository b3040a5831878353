package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/probeactor/probeactor/internal/procfs"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run dispatches the roles: `target` and `bare` are children of the benchmark; anything else is
// the benchmark itself.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "target":
			return serveTarget(stdout, stderr)
		case "bare":
			return runBare(args[1:], stdout, stderr)
		default:
		}
	}
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "nodebench:", err)
		return 2
	}
	runs, err := bench(cfg, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "nodebench:", err)
		return 1
	}
	s := Summarise(cfg.pods, cfg.window, runs)
	fmt.Fprintln(stdout, s)
	if !s.Valid() {
		return 1
	}
	return 0
}

// config is the command line; the NODEBENCH_* variables give the defaults (doc.go).
type config struct {
	node, baseline string
	pods, rounds   int
	window, warmup time.Duration
	profile        string
}

func parseConfig(args []string, stderr io.Writer) (config, error) {
	c := config{pods: 500, rounds: 3, window: 30 * time.Second, warmup: 10 * time.Second}
	for _, e := range []struct {
		name string
		n    *int
		d    *time.Duration
	}{{"NODEBENCH_PODS", &c.pods, nil}, {"NODEBENCH_ROUNDS", &c.rounds, nil},
		{"NODEBENCH_DURATION", nil, &c.window}, {"NODEBENCH_WARMUP", nil, &c.warmup}} {
		v := os.Getenv(e.name)
		if v == "" {
			continue
		}
		var err error
		if e.n != nil {
			*e.n, err = strconv.Atoi(v)
		} else {
			*e.d, err = time.ParseDuration(v)
		}
		if err != nil {
			return c, fmt.Errorf("%s %q: %w", e.name, v, err)
		}
	}
	c.profile = os.Getenv("NODEBENCH_PROFILE")
	fs := flag.NewFlagSet("nodebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.node, "node", "bin/node", "the node binary")
	fs.StringVar(&c.baseline, "baseline", "", "a second node binary (e.g. before a change), run after node in every round and reported beside it")
	fs.IntVar(&c.pods, "pods", c.pods, "pods, each with an HTTP readiness and a TCP liveness probe at 1 s (NODEBENCH_PODS)")
	fs.IntVar(&c.rounds, "rounds", c.rounds, "bare/node pairs of runs (NODEBENCH_ROUNDS)")
	fs.DurationVar(&c.window, "duration", c.window, "each run's measurement window (NODEBENCH_DURATION)")
	fs.DurationVar(&c.warmup, "warmup", c.warmup, "the wait before each window (NODEBENCH_WARMUP)")
	fs.StringVar(&c.profile, "profile", c.profile, "a directory for node's CPU and heap profiles of each window (NODEBENCH_PROFILE)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	case c.pods < 1 || c.rounds < 1:
		return c, errors.New("-pods and -rounds must be at least 1")
	case c.window < 5*time.Second || c.warmup < 0:
		return c, errors.New("-duration must be at least 5s and -warmup not negative")
	}
	return c, nil
}

// bench runs the rounds: bare then node, each against the same target process.
func bench(cfg config, stdout io.Writer) ([]Run, error) {
	if _, err := os.Stat(cfg.node); err != nil {
		return nil, fmt.Errorf("-node: %w (make bench-node builds it)", err)
	}
	if cfg.baseline != "" {
		if _, err := os.Stat(cfg.baseline); err != nil {
			return nil, fmt.Errorf("-baseline: %w", err)
		}
	}
	if cfg.profile != "" {
		if err := os.MkdirAll(cfg.profile, 0o755); err != nil {
			return nil, err
		}
	}
	tg, err := startTarget()
	if err != nil {
		return nil, err
	}
	defer func() { _, _ = tg.stop() }()
	fmt.Fprintf(stdout, "nodebench: %d pods × (HTTP readiness + TCP liveness) at 1 s = %d probes/s against one target process (HTTP :%d, TCP :%d); "+
		"%d rounds of bare and node in turns, warm-up %v, window %v; node %s; baseline %q; load %s\n",
		cfg.pods, 2*cfg.pods, tg.httpPort, tg.tcpPort, cfg.rounds, cfg.warmup, cfg.window, cfg.node, cfg.baseline, loadAvg())
	var runs []Run
	for round := 1; round <= cfg.rounds; round++ {
		order := Order(round, cfg.baseline != "")
		byProber := map[string]Run{}
		for _, p := range order {
			var r Run
			var err error
			switch p {
			case "bare":
				r, err = benchBare(cfg, tg, round)
			case "baseline":
				r, err = benchNode(cfg, tg, round, p, cfg.baseline)
			default:
				r, err = benchNode(cfg, tg, round, p, cfg.node)
			}
			if err != nil {
				return runs, fmt.Errorf("round %d, %s: %w", round, p, err)
			}
			fmt.Fprintln(stdout, r.Line())
			runs = append(runs, r)
			byProber[p] = r
		}
		for _, p := range order {
			if p != "bare" {
				fmt.Fprintf(stdout, "round %d %s/bare %.2f\n", round, p, byProber[p].PerProbe()/byProber["bare"].PerProbe())
			}
		}
	}
	return runs, nil
}

// Order is who runs when in a round: bare and node, bare first in odd rounds and last in even ones
// (so a drift of the machine's load over the sitting weighs on both alike), the baseline (with
// -baseline) between them and node.
func Order(round int, baseline bool) []string {
	o := []string{"bare", "node"}
	if baseline {
		o = []string{"bare", "node", "baseline"}
		if round%4 == 3 || round%4 == 0 { // node and baseline take turns too
			o[1], o[2] = o[2], o[1]
		}
	}
	if round%2 == 0 {
		slices.Reverse(o)
	}
	return o
}

// window measures one prober over cfg.window: the target's counts and the CPU of pid's tree.
func window(cfg config, tg *targetProc, pid int) (probes int64, cpu cpuSplit, took time.Duration, err error) {
	h0, t0, err := tg.counts()
	if err != nil {
		return 0, cpu, 0, err
	}
	start := time.Now()
	all, err := procfs.Processes()
	if err != nil {
		return 0, cpu, 0, err
	}
	c0, err := treeCPU(all, pid)
	if err != nil {
		return 0, cpu, 0, err
	}
	time.Sleep(cfg.window) // the measurement window itself
	all, err = procfs.Processes()
	if err != nil {
		return 0, cpu, 0, err
	}
	c1, err := treeCPU(all, pid)
	if err != nil {
		return 0, cpu, 0, err
	}
	took = time.Since(start)
	h1, t1, err := tg.counts()
	if err != nil {
		return 0, cpu, 0, err
	}
	return (h1 - h0) + (t1 - t0), c1.sub(c0), took, nil
}

func benchBare(cfg config, tg *targetProc, round int) (Run, error) {
	args := []string{"-pods", strconv.Itoa(cfg.pods), "-http", "127.0.0.1:" + strconv.Itoa(tg.httpPort), "-tcp", "127.0.0.1:" + strconv.Itoa(tg.tcpPort)}
	if cfg.profile != "" {
		args = append(args, "-cpuprofile", filepath.Join(cfg.profile, fmt.Sprintf("bare-cpu-%d.pprof", round)),
			"-profile-after", cfg.warmup.String(), "-profile-for", cfg.window.String())
	}
	c, err := startChild("bare", args...)
	if err != nil {
		return Run{}, err
	}
	if l, err := c.line(); err != nil || l != "RUNNING" {
		_, _ = c.stop()
		return Run{}, fmt.Errorf("bare did not start (%q): %v", l, err)
	}
	time.Sleep(cfg.warmup)
	probes, cpu, took, err := window(cfg, tg, c.cmd.Process.Pid)
	r := Run{Prober: "bare", Round: round, Window: took, Probes: probes, CPU: cpu.self, Load: loadAvg()}
	last, stopErr := c.stop()
	if err != nil {
		return r, err
	}
	if stopErr != nil {
		return r, fmt.Errorf("bare: %w", stopErr)
	}
	var probed int64
	if _, err := fmt.Sscanf(last, "probed=%d failed=%d", &probed, &r.Failed); err != nil {
		return r, fmt.Errorf("bare's last line %q: %w", last, err)
	}
	return r, nil
}

// benchNode measures one run of the node binary bin as prober (node or baseline).
func benchNode(cfg config, tg *targetProc, round int, prober, bin string) (Run, error) {
	dir, err := os.MkdirTemp("", "nodebench-")
	if err != nil {
		return Run{}, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "pods.yaml")
	if err := os.WriteFile(path, Manifest(cfg.pods, tg.httpPort, tg.tcpPort), 0o600); err != nil {
		return Run{}, err
	}
	n, err := startNode(bin, dir, path, cfg.profile != "")
	if err != nil {
		return Run{}, err
	}
	defer func() {
		if !n.exited() {
			_ = n.stop()
		}
	}()
	if err := n.awaitReady(cfg.pods, 10*time.Minute); err != nil {
		return Run{}, err
	}
	time.Sleep(cfg.warmup)
	all0, bad0, err := n.probeTotals()
	if err != nil {
		return Run{}, err
	}
	profiled := make(chan error, 2)
	if cfg.profile != "" {
		secs := strconv.Itoa(int(cfg.window.Seconds()))
		for _, p := range []string{"profile", "allocs"} { // CPU, and the allocations of the window
			file := filepath.Join(cfg.profile, fmt.Sprintf("%s-%s-%d.pprof", prober, strings.Replace(p, "profile", "cpu", 1), round))
			go func() { profiled <- n.saveProfile("/debug/pprof/"+p+"?seconds="+secs, file) }() // ends after the window
		}
	} else {
		profiled <- nil
		profiled <- nil
	}
	probes, cpu, took, err := window(cfg, tg, n.cmd.Process.Pid)
	if err != nil {
		return Run{}, err
	}
	r := Run{Prober: prober, Round: round, Window: took, Probes: probes, CPU: cpu.self, Shims: cpu.children, Containers: cpu.below,
		NShims: cpu.nChildren, NContainers: cpu.nBelow, Load: loadAvg()}
	for range 2 {
		if err := <-profiled; err != nil {
			return r, fmt.Errorf("profile: %w", err)
		}
	}
	all1, bad1, err := n.probeTotals()
	if err != nil {
		return r, err
	}
	r.Failed = int64(bad1 - bad0)
	if counted := all1 - all0; counted < 0.9*float64(probes) {
		return r, fmt.Errorf("node counted %.0f probes in its /metrics, the target %d", counted, probes)
	}
	st, err := n.pods()
	if err != nil {
		return r, err
	}
	r.Restarts = st.restarts
	if err := n.stop(); err != nil && !strings.Contains(err.Error(), "signal: terminated") {
		return r, fmt.Errorf("node's stop: %w\nstderr tail:\n%s", err, n.stderr)
	}
	return r, nil
}
