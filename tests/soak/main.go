// Command soak runs the node binary for a long time under churn and checks that nothing grows
// (issue 10 §2; `make soak`, never part of `make test`).
//
// It plans a run (schedule.go: pure, unit-tested): N pod slots whose HTTP, TCP, gRPC and exec
// targets — served by this tool, so what a probe sees is a function of the schedule alone — flap
// readiness every 30–60 s and fail liveness every few minutes, and whose pods are replaced
// continuously through node's static pod path (a generation's manifest removed, the next one
// written, one slot in three edited half-way through a generation's life). It starts
// `node run --pod-manifest-path DIR`, carries the schedule out, and every --interval samples node's
// own RSS (split into anonymous and executable pages), OS threads, CPU use since the last sample
// and open descriptors (/proc/<pid>; the processes below node — container shims, containers,
// exec probes, the guard — are counted separately and are not in those figures), its live heap
// (HeapAlloc right after a forced GC, /debug/pprof/heap?debug=1&gc=1) and goroutines (/metrics:
// go_goroutines; heap, descriptors and goroutines are the least of three reads 300 ms apart, so
// probes in flight at one instant are not counted as growth), the actor tree's scheduler entries
// and mailbox lengths (/metrics: probeactor_scheduler_entries, probeactor_mailbox_messages; n/a
// while node does not expose them), and the pods it reports.
//
// At the end of the run the schedule freezes (every target keeps its last answer, no manifest
// changes), node gets --settle to catch up, and every pod is checked against what the schedule
// implies (expect.go). The output directory gets samples.csv, soak.png, node's stdout and stderr,
// and heap and goroutine profiles of node after the warm-up and at the end (compare with
// `go tool pprof -base heap-warmup.pb.gz heap-end.pb.gz`; node inherits the environment, so
// GODEBUG=memprofilerate=16384 makes those profiles fine enough to name a growth of a few hundred
// KB, at some CPU cost). The last line printed is
//
//	soak: pods=N duration=D rss-growth=X% heap-growth=X% goroutine-growth=X% fd-growth=X% lost=N
//
// where a growth is the last sample against the first one after the warm-up (2 minutes, or a fifth
// of a shorter run). The exit code is 1 when a target is missed (a growth of 5 % or more, a lost
// pod) or the run could not be done, 0 otherwise. `soak -replot DIR [-title LINE]` only draws
// DIR/soak.png again from DIR/samples.csv (after a change to the plot).
//
// Nothing is left behind: node runs in its own process group, this tool is the child subreaper of
// everything below it, and on the end of the run or SIGINT/SIGTERM node is stopped (SIGTERM, then
// SIGKILL to its group), orphans are reaped and any process still alive after that is killed and
// reported.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/probeactor/probeactor/internal/procfs"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// PodsEvery is how often a sample also reads /pods (for the pods and ready-pods series). Each
// /pods costs node one protoactor future per pod (Tree.PodStatus), and every distinct future or
// actor leaves a little memory in protoactor's process registry until all of its 32,768 shard maps
// have been used (at most ~9 MiB, see ARCHITECTURE.md's Soak section): read every 10 s, /pods would
// make the sampler itself the main source of heap growth in a 10-minute run.
const PodsEvery = time.Minute

// sampler is the transport the soak reads node with: uncompressed, as the loopback gains nothing
// from gzip, and node would otherwise compress every 1.5 MB /metrics (three a sample) in a
// fresh 600 KB gzip writer (its pool is emptied by the GCs between samples) — the sampler's own
// load, not node's (a Prometheus scrapes once per 15-60 s).
var sampler = &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 2}

// config is the command line; SOAK_PODS, SOAK_DURATION and SOAK_OUT give the defaults.
type config struct {
	node      string
	pods      int
	duration  time.Duration
	out       string
	interval  time.Duration
	settle    time.Duration
	fileCheck time.Duration
	registry  bool
	replot    string // a run's output directory: draw its soak.png again from its samples.csv
	title     string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{pods: 300, duration: 10 * time.Minute, out: "soak-out"}
	if v := os.Getenv("SOAK_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return c, fmt.Errorf("SOAK_PODS %q: %w", v, err)
		}
		c.pods = n
	}
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return c, fmt.Errorf("SOAK_DURATION %q: %w", v, err)
		}
		c.duration = d
	}
	if v := os.Getenv("SOAK_OUT"); v != "" {
		c.out = v
	}
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.node, "node", "bin/node", "the node binary")
	fs.IntVar(&c.pods, "pods", c.pods, "pods running at any time (SOAK_PODS)")
	fs.DurationVar(&c.duration, "duration", c.duration, "length of the run, settling not included (SOAK_DURATION)")
	fs.StringVar(&c.out, "out", c.out, "output directory: samples.csv, soak.png, node's output, profiles (SOAK_OUT)")
	fs.DurationVar(&c.interval, "interval", 10*time.Second, "time between samples")
	fs.DurationVar(&c.settle, "settle", 45*time.Second, "time node gets after the run before the pods are checked")
	// node's default, as an operator runs it: the soak's changes reach node through inotify, and
	// the full read of the period is the safety net (until 2026-11-24 the soak read every second,
	// from before node followed the path with inotify).
	fs.DurationVar(&c.fileCheck, "file-check-frequency", 20*time.Second, "node's --file-check-frequency")
	fs.BoolVar(&c.registry, "registry-fill", false, "only measure how protoactor's process registry grows with the futures it has seen, and exit")
	fs.StringVar(&c.replot, "replot", "", "only draw DIR/soak.png again from DIR/samples.csv (after a change to the plot), and exit")
	fs.StringVar(&c.title, "title", "", "with -replot: the plot's title (the run's last line)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	case c.pods < 1:
		return c, fmt.Errorf("-pods %d: want at least 1", c.pods)
	case c.duration < time.Minute:
		return c, fmt.Errorf("-duration %s: want at least 1m", c.duration)
	case c.interval <= 0 || c.interval > c.duration/5:
		return c, fmt.Errorf("-interval %s: want more than 0 and at most a fifth of -duration", c.interval)
	case c.settle < 0 || c.fileCheck <= 0:
		return c, errors.New("-settle must not be negative and -file-check-frequency must be positive")
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return 2
	}
	if cfg.replot != "" {
		if err := replot(cfg.replot, cfg.title); err != nil {
			fmt.Fprintf(stderr, "soak: -replot %s: %v\n", cfg.replot, err)
			return 1
		}
		return 0
	}
	if cfg.registry {
		if err := registryFill(stdout); err != nil {
			fmt.Fprintf(stderr, "soak: %v\n", err)
			return 1
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := soak(ctx, cfg, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return 1
	}
	missed := res.Missed()
	if len(missed) > 0 {
		fmt.Fprintf(stdout, "targets missed: %v\n", missed)
	} else {
		fmt.Fprintf(stdout, "targets met: every growth under %.0f%%, lost 0\n", GrowthLimit)
	}
	fmt.Fprintln(stdout, res.Line())
	if len(missed) > 0 {
		return 1
	}
	return 0
}

// soak does the run and writes its files; the result is complete only when err is nil.
func soak(ctx context.Context, cfg config, stdout io.Writer) (Result, error) {
	res := Result{Pods: cfg.pods, Duration: cfg.duration}
	nodeBin, err := filepath.Abs(cfg.node)
	if err != nil {
		return res, err
	}
	if _, err := os.Stat(nodeBin); err != nil {
		return res, fmt.Errorf("node binary: %w (make soak builds it)", err)
	}
	out, err := filepath.Abs(cfg.out)
	if err != nil {
		return res, err
	}
	dirs := map[string]string{}
	for _, d := range []string{"manifests", "root", "exec"} {
		dirs[d] = filepath.Join(out, d)
		if err := os.RemoveAll(dirs[d]); err != nil {
			return res, err
		}
		if err := os.MkdirAll(dirs[d], 0o755); err != nil {
			return res, err
		}
	}
	// Orphans below node (should node die) become ours, so we can reap and count them.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return res, fmt.Errorf("become child subreaper: %w", err)
	}

	sched := NewSchedule(cfg.pods, cfg.duration)
	added, removed, edits, liveFails := sched.Counts()
	load, _ := LoadAverage()
	fmt.Fprintf(stdout, "soak: %d pods for %s (+%s settling), sampling every %s, warm-up %s; schedule: %d pods added and %d removed after the start, %d edits, %d liveness failures; load average %.2f on %d CPUs; output in %s\n",
		cfg.pods, cfg.duration, cfg.settle, cfg.interval, Warmup(cfg.duration), added, removed, edits, liveFails, load, numCPU(), out)

	targets, where, err := startTargets(sched, dirs["exec"])
	if err != nil {
		return res, fmt.Errorf("targets: %w", err)
	}
	defer targets.Close()
	write := func(slot, gen, edit int) error {
		b, err := sched.Manifest(slot, gen, edit, where)
		if err != nil {
			return err
		}
		// Written beside and renamed in: node never reads half a manifest.
		name := sched.Slots[slot].File(gen)
		tmp := filepath.Join(dirs["manifests"], "."+name+".tmp")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, filepath.Join(dirs["manifests"], name))
	}
	for i := range sched.Slots {
		if err := write(i, 0, 0); err != nil {
			return res, err
		}
	}

	n, err := startNode(ctx, nodeBin, cfg, dirs, out)
	if err != nil {
		return res, err
	}
	defer func() {
		if left := n.stop(); left > 0 {
			fmt.Fprintf(stdout, "soak: %d processes below node were still alive after it exited; killed\n", left)
		}
	}()
	if err := n.waitHealthy(ctx); err != nil {
		return res, err
	}

	warmup := Warmup(cfg.duration)
	ops := sched.Ops()
	next := 0
	nextSample := time.Duration(0)
	profiledWarm := false
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		t := targets.elapsed()
		for next < len(ops) && ops[next].At <= t {
			op := ops[next]
			next++
			var err error
			if op.Remove {
				err = os.Remove(filepath.Join(dirs["manifests"], sched.Slots[op.Slot].File(op.Gen)))
			} else {
				err = write(op.Slot, op.Gen, op.Edit)
			}
			if err != nil {
				return res, fmt.Errorf("schedule at %s: %w", op.At, err)
			}
		}
		if t >= nextSample {
			at := min(nextSample, cfg.duration)
			s := n.sample(ctx, at, at%PodsEvery == 0)
			res.Samples = append(res.Samples, s)
			fmt.Fprintf(stdout, "%6s rss=%.1fMiB (anon %.1f) cpu=%.2f heap-live=%.1fMiB goroutines=%.0f(..%.0f) fds=%.0f(..%.0f) scheduler=%s mailbox=%s children=%.0f pods=%s ready=%s load=%.2f\n",
				at.Round(time.Second), s.RSS/(1<<20), s.RSSAnon/(1<<20), s.CPU, s.HeapLive/(1<<20), s.Goroutines, s.GoroutinesPeak, s.FDs, s.FDsPeak,
				orNA(s.SchedulerEntries), orNA(s.MailboxMessages), s.Children, orNA(s.Pods), orNA(s.ReadyPods), s.Load1)
			if at >= warmup && !profiledWarm {
				profiledWarm = true
				n.profiles(ctx, "warmup")
			}
			if at >= cfg.duration {
				break
			}
			nextSample = min(nextSample+cfg.interval, cfg.duration)
		}
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("interrupted at %s", t.Round(time.Second))
		case <-ticker.C:
		}
	}
	n.profiles(ctx, "end")
	if e := targets.errors.Load(); e > 0 {
		fmt.Fprintf(stdout, "soak: warning: %d times a TCP target could not reopen its port (taken meanwhile; tried again 100 ms later)\n", e)
	}

	fmt.Fprintf(stdout, "soak: run over; the schedule is frozen, node settles for %s\n", cfg.settle)
	select {
	case <-ctx.Done():
		return res, errors.New("interrupted while settling")
	case <-time.After(cfg.settle):
	}
	pods, err := n.pods(ctx)
	if err != nil {
		return res, fmt.Errorf("final /pods: %w", err)
	}
	lost, reasons := Lost(sched.Final(), pods)
	res.Lost = lost
	for i, r := range reasons {
		if i == 20 {
			fmt.Fprintf(stdout, "lost: ... and %d more\n", len(reasons)-20)
			break
		}
		fmt.Fprintf(stdout, "lost: %s\n", r)
	}

	if err := writeFile(filepath.Join(out, "samples.csv"), func(w io.Writer) error { return WriteCSV(w, res.Samples) }); err != nil {
		return res, err
	}
	if err := writeFile(filepath.Join(out, "soak.png"), func(w io.Writer) error { return WritePlot(w, res.Line(), res.Samples, warmup) }); err != nil {
		return res, err
	}
	res.WriteTable(stdout)
	load, _ = LoadAverage()
	fmt.Fprintf(stdout, "soak: load average %.2f at the end; wrote %s and %s\n", load, filepath.Join(out, "samples.csv"), filepath.Join(out, "soak.png"))
	return res, nil
}

func orNA(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func numCPU() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0
	}
	return set.Count()
}

func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// nodeProc is the running node.
type nodeProc struct {
	cmd    *exec.Cmd
	base   string
	out    string
	client *http.Client
	done   chan struct{} // closed when node has exited (and was reaped)
	stdout *os.File
	stderr *os.File

	cpu     time.Duration // node's CPU at the previous sample
	cpuWall time.Time     // when it was read
}

func startNode(ctx context.Context, bin string, cfg config, dirs map[string]string, out string) (*nodeProc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	n := &nodeProc{base: "http://" + addr, out: out, client: &http.Client{Timeout: 10 * time.Second, Transport: sampler}, done: make(chan struct{})}
	if n.stdout, err = os.Create(filepath.Join(out, "node.stdout")); err != nil {
		return nil, err
	}
	if n.stderr, err = os.Create(filepath.Join(out, "node.stderr")); err != nil {
		n.stdout.Close()
		return nil, err
	}
	n.cmd = exec.Command(bin, "run", "--listen", addr, "--root-dir", dirs["root"],
		"--pod-manifest-path", dirs["manifests"], "--file-check-frequency", cfg.fileCheck.String(),
		"--crashloop-backoff-initial", "1s", "--crashloop-backoff-max", "4s", "--profiling")
	n.cmd.Stdout, n.cmd.Stderr = n.stdout, n.stderr
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a Ctrl-C reaches us; we stop node
	if err := n.cmd.Start(); err != nil {
		n.stdout.Close()
		n.stderr.Close()
		return nil, fmt.Errorf("start node: %w", err)
	}
	go func() { _ = n.cmd.Wait(); close(n.done) }() // ends when node exits
	return n, nil
}

func (n *nodeProc) exited() bool {
	select {
	case <-n.done:
		return true
	default:
		return false
	}
}

func (n *nodeProc) waitHealthy(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if n.exited() {
			return fmt.Errorf("node exited at start: %s (see %s)", n.cmd.ProcessState, n.stderr.Name())
		}
		if resp, err := n.client.Get(n.base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return errors.New("node's /healthz did not answer within 60 s")
}

// stop ends node (SIGTERM; SIGKILL to its process group after 2 minutes), then reaps whatever was
// left below it and kills what still lives 10 s later. It returns how many processes that were.
func (n *nodeProc) stop() int {
	defer n.stdout.Close()
	defer n.stderr.Close()
	n.client.CloseIdleConnections()
	if !n.exited() {
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.done:
		case <-time.After(2 * time.Minute):
			_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
			<-n.done
		}
	}
	// node has been reaped by cmd.Wait; whatever is below us now is an orphan of its tree.
	deadline := time.Now().Add(10 * time.Second)
	for {
		for {
			var ws unix.WaitStatus
			if pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
		all, _ := procfs.Processes()
		left := procfs.Descendants(all, os.Getpid())
		if len(left) == 0 {
			return 0
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				_ = syscall.Kill(p.PID, syscall.SIGKILL)
			}
			return len(left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sample observes node once; what cannot be read is NaN. It reads Reads times (Combine): /metrics,
// then node's heap right after a forced GC (HeapAfterGC: what node keeps, not where its GC cycle
// happens to be; go_gc_heap_live_bytes would count a GC during the scrape's own allocations), then
// node's descriptors. withPods also reads /pods (PodsEvery).
func (n *nodeProc) sample(ctx context.Context, at time.Duration, withPods bool) Sample {
	began := time.Now()
	pid := n.cmd.Process.Pid
	reads := make([]Sample, 0, Reads)
	for i := range Reads {
		if i > 0 {
			time.Sleep(ReadGap)
		}
		var r Sample
		if m, err := n.metrics(ctx); err == nil {
			FromMetrics(m, &r)
		} else {
			r = NaNSample()
		}
		r.HeapLive, r.HeapSpans, r.HeapFree, r.FDs = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		if resp, err := n.get(ctx, "/debug/pprof/heap?debug=1&gc=1"); err == nil {
			if v, err := HeapAfterGC(resp.Body); err == nil {
				r.HeapLive, r.HeapSpans, r.HeapFree = v.Live, v.Spans, v.Free
			}
			resp.Body.Close()
		}
		if v, err := FDs(pid); err == nil {
			r.FDs = float64(v)
		}
		reads = append(reads, r)
	}
	s := Combine(reads) // what is read below stays NaN when its read fails
	s.At = at
	if m, err := ReadStatus(pid); err == nil {
		s.RSS, s.RSSAnon, s.RSSFile, s.Threads = m.RSS, m.Anon, m.File, m.Threads
	}
	if all, err := procfs.Processes(); err == nil {
		for _, p := range all {
			if p.PID == pid {
				now := time.Now()
				if !n.cpuWall.IsZero() {
					s.CPU = (p.CPU - n.cpu).Seconds() / now.Sub(n.cpuWall).Seconds()
				}
				n.cpu, n.cpuWall = p.CPU, now
			}
		}
		below := procfs.Descendants(all, pid)
		s.Children, s.ChildRSS = float64(len(below)), 0
		for _, p := range below {
			s.ChildRSS += p.RSS
		}
	}
	if v, err := LoadAverage(); err == nil {
		s.Load1 = v
	}
	if !withPods {
		s.SampleTook = time.Since(began).Seconds()
		return s
	}
	if pods, err := n.pods(ctx); err == nil {
		s.Pods, s.ReadyPods = float64(len(pods)), 0
		for _, p := range pods {
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
					s.ReadyPods++
				}
			}
		}
	}
	s.SampleTook = time.Since(began).Seconds()
	return s
}

func (n *nodeProc) get(ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", path, resp.Status)
	}
	return resp, nil
}

func (n *nodeProc) metrics(ctx context.Context) (map[string][]float64, error) {
	resp, err := n.get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return ParseMetrics(resp.Body)
}

func (n *nodeProc) pods(ctx context.Context) ([]v1.Pod, error) {
	resp, err := n.get(ctx, "/pods")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("/pods: %w", err)
	}
	return list.Items, nil
}

// profiles saves node's heap profile and goroutine dump as heap-<tag>.pb.gz and
// goroutines-<tag>.txt (a failure is reported, not fatal).
func (n *nodeProc) profiles(ctx context.Context, tag string) {
	for path, file := range map[string]string{
		"/debug/pprof/heap":              "heap-" + tag + ".pb.gz",
		"/debug/pprof/goroutine?debug=1": "goroutines-" + tag + ".txt",
	} {
		resp, err := n.get(ctx, path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "soak: profile %s: %v\n", path, err)
			continue
		}
		err = writeFile(filepath.Join(n.out, file), func(w io.Writer) error { _, err := io.Copy(w, resp.Body); return err })
		resp.Body.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "soak: profile %s: %v\n", path, err)
		}
	}
}

// replot draws dir/soak.png again from dir/samples.csv, titled title (default: the directory).
func replot(dir, title string) error {
	f, err := os.Open(filepath.Join(dir, "samples.csv"))
	if err != nil {
		return err
	}
	defer f.Close()
	samples, err := ReadCSV(f)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	if len(samples) == 0 {
		return fmt.Errorf("%s has no samples", f.Name())
	}
	if title == "" {
		title = "soak: " + dir
	}
	warmup := Warmup(samples[len(samples)-1].At)
	return writeFile(filepath.Join(dir, "soak.png"), func(w io.Writer) error { return WritePlot(w, title, samples, warmup) })
}
