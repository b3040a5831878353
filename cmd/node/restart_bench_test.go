package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/fleettest"
	"github.com/probeactor/probeactor/internal/freeport"
)

// BenchmarkNodeRestart is issue 20's measurement: PROBEACTOR_RESTART_PODS pods (default 500, the
// node-scale workload), each one `sleep` container (a real process under its shim) with an HTTP
// readiness probe (/ready/N, period 1 s for even N, 2 s for odd) and a TCP liveness probe (its own
// loopback port, 2 s / 1 s), all served by this process. node runs as a child with a fresh
// --root-dir and --reattach-timeout 60s; once every container runs, is ready and has been probed,
// node is SIGKILLed and started again, and the benchmark reports:
//
//   - answered-s (logged): restart's exec → /pods' first answer;
//   - listed-s: restart's exec → the first /pods answer that lists every pod;
//   - adopted-s: restart's exec → every container in /pods has the container ID it had before,
//     runs and is ready;
//   - probed-s: restart's exec → the last pod's first readiness request and first liveness
//     connection after the restart (the target's own timestamps);
//   - settled-s: the later of adopted-s and probed-s: every container adopted and probing again
//     (also ns/op: the timer runs from the restart to there);
//   - restarts: containers whose ID or restartCount changed (goal 0).
//
// It then stops node with SIGTERM and waits until every container and shim process is gone and
// node left no record or socket behind. Not part of make test: `make restart-bench`.
func BenchmarkNodeRestart(b *testing.B) {
	pods := envInt(b, "PROBEACTOR_RESTART_PODS", 500)
	dir := b.TempDir()
	tg := startRestartTargets(b, pods)
	defer tg.close()
	manifest := restartBenchManifest(b, dir, tg, pods)
	listen := freeport.Addr(b)
	api := "http://" + listen
	root := filepath.Join(dir, "root")
	node := fleettest.StartRole(b, "node", "-f", manifest, "--listen", listen, "--root-dir", root, "--reattach-timeout", "60s")

	// Before: every container running and ready and probed on both probes.
	start := time.Now()
	var before map[int]v1.ContainerStatus
	waitPods(b, node, api, 10*time.Minute, 500*time.Millisecond, "every container running, ready and probed", func(list []v1.Pod) bool {
		var ok bool
		before, ok = restartBenchStatuses(list, pods)
		return ok && len(before) == pods && allRunningReady(before) && tg.allProbedSince(0)
	})
	b.Logf("%d pods running, ready and probed %v after node's start", pods, time.Since(start).Round(100*time.Millisecond))
	// Steady state, not the start-up burst: two periods of the slowest probe.
	time.Sleep(4 * time.Second)
	list, err := podList(api)
	require.NoError(b, err)
	before, ok := restartBenchStatuses(list, pods)
	require.True(b, ok && len(before) == pods && allRunningReady(before), "still all running and ready")
	procs := make([]benchProc, pods) // each container's sleep and its shim
	for i := range pods {
		procs[i] = readBenchProc(b, filepath.Join(dir, fmt.Sprintf("pid-%03d", i)))
	}
	b.Logf("load average before the kill: %s", loadAvg())

	node.Kill() // SIGKILL: node stops nothing
	// In-flight probes of the dead node land before the restart, so that every request counted
	// below comes from the new node (a service manager's restart delay is of this order).
	time.Sleep(200 * time.Millisecond)
	for i, p := range procs {
		require.True(b, p.alive(), "container %d outlives node", i)
	}

	b.ResetTimer()
	t0 := time.Now()
	tg.since.Store(t0.UnixNano())
	node.Restart()
	var answered, listed, adopted, running time.Duration
	var after map[int]v1.ContainerStatus
	// Ends once every container runs, is ready and was probed again, adopted or not: a container
	// started afresh is counted below, not waited for until the timeout.
	waitPods(b, node, api, 5*time.Minute, 50*time.Millisecond, "every container running, ready and probed again", func(list []v1.Pod) bool {
		if answered == 0 {
			answered = time.Since(t0)
		}
		var all bool
		after, all = restartBenchStatuses(list, pods)
		if !all {
			return false
		}
		if listed == 0 {
			listed = time.Since(t0)
		}
		if !allRunningReady(after) {
			return false
		}
		if running == 0 {
			running = time.Since(t0)
		}
		same := true
		for i, c := range after {
			same = same && c.ContainerID == before[i].ContainerID
		}
		if same && adopted == 0 {
			adopted = time.Since(t0)
		}
		return tg.allProbedSince(t0.UnixNano())
	})
	b.StopTimer()
	probed := tg.lastFirstProbe().Sub(t0)
	if adopted == 0 { // some container is not the one it was: count it below; settled is then when all ran
		adopted = running
	}
	settled := max(adopted, probed)
	changed := 0
	for i, c := range after {
		was := before[i]
		if c.ContainerID != was.ContainerID || c.RestartCount != was.RestartCount {
			changed++
			b.Logf("pod-%03d: container %s (restarts %d) is now %s (restarts %d)", i, was.ContainerID, was.RestartCount, c.ContainerID, c.RestartCount)
		}
	}
	gone := 0
	for _, p := range procs {
		if !p.alive() {
			gone++
		}
	}
	b.Logf("restart with %d pods: /pods answers %.3f s after the restart's exec and lists every pod %.3f s after it; every container adopted and ready %.3f s; "+
		"every pod probed again (readiness and liveness) %.3f s; settled %.3f s; containers with a new ID or restart count: %d; "+
		"container processes gone: %d; load average: %s",
		pods, answered.Seconds(), listed.Seconds(), adopted.Seconds(), probed.Seconds(), settled.Seconds(), changed, gone, loadAvg())
	b.ReportMetric(listed.Seconds(), "listed-s")
	b.ReportMetric(adopted.Seconds(), "adopted-s")
	b.ReportMetric(probed.Seconds(), "probed-s")
	b.ReportMetric(settled.Seconds(), "settled-s")
	b.ReportMetric(float64(changed), "restarts")
	if changed > 0 || gone > 0 {
		b.Errorf("%d containers restarted, %d container processes gone: the goal is 0", changed, gone)
	}

	// A graceful stop ends every container: no process, record or socket is left.
	stopped := time.Now()
	if err := node.Stop(); err != nil {
		b.Errorf("node's graceful stop: %v\nstderr tail:\n%s", err, tail(node.Stderr(), 4000))
	}
	stopTook := time.Since(stopped)
	deadline := time.Now().Add(90 * time.Second) // past the re-attach window, should the stop have failed
	for time.Now().Before(deadline) && anyAlive(procs) {
		time.Sleep(100 * time.Millisecond)
	}
	left := 0
	for i, p := range procs {
		if p.alive() {
			left++
			b.Errorf("pod-%03d: container pid %d or shim pid %d still runs after node stopped", i, p.pid, p.shim)
		}
	}
	for _, sub := range []string{"state", "shims"} {
		entries, err := os.ReadDir(filepath.Join(root, sub))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			b.Errorf("%s: %v", sub, err)
		}
		if len(entries) > 0 {
			b.Errorf("%s/%s: %d entries left after a graceful stop", root, sub, len(entries))
		}
	}
	b.Logf("graceful stop: node exited %.1f s after SIGTERM, %d of %d container processes and shims left", stopTook.Seconds(), left, pods)
}

// restartTargets is the probes' far end: one HTTP server (/ready/N) and one TCP listener per pod.
// Each records whether pod N was ever probed, and when it was first probed at or after since (Unix
// ns; since is the largest int64 until the restart, so nothing before it counts).
type restartTargets struct {
	http   *httptest.Server
	tcp    []net.Listener
	since  atomic.Int64
	ready  []atomic.Int64 // first readiness request at or after since (Unix ns), 0: none yet
	live   []atomic.Int64 // first liveness connection at or after since
	any    []atomic.Bool  // any readiness and liveness before since (the start)
	anyTCP []atomic.Bool
	wg     sync.WaitGroup
}

func startRestartTargets(b *testing.B, pods int) *restartTargets {
	tg := &restartTargets{ready: make([]atomic.Int64, pods), live: make([]atomic.Int64, pods), any: make([]atomic.Bool, pods), anyTCP: make([]atomic.Bool, pods)}
	tg.since.Store(1<<63 - 1)
	tg.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/ready/"))
		if err != nil || n < 0 || n >= pods {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		tg.seen(tg.ready, tg.any, n)
		w.WriteHeader(http.StatusOK)
	}))
	for i := range pods {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tg.close()
			b.Fatalf("TCP target %d of %d: %v", i, pods, err)
		}
		tg.tcp = append(tg.tcp, ln)
		tg.wg.Add(1)
		go func() { // ends when close closes the listener
			defer tg.wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				tg.seen(tg.live, tg.anyTCP, i)
				_ = c.Close()
			}
		}()
	}
	return tg
}

func (tg *restartTargets) seen(first []atomic.Int64, any []atomic.Bool, n int) {
	now := time.Now().UnixNano()
	any[n].Store(true)
	if now >= tg.since.Load() {
		first[n].CompareAndSwap(0, now)
	}
}

// allProbedSince says whether every pod's readiness and liveness target was probed at or after
// since (0: ever).
func (tg *restartTargets) allProbedSince(since int64) bool {
	for i := range tg.ready {
		if since == 0 {
			if !tg.any[i].Load() || !tg.anyTCP[i].Load() {
				return false
			}
		} else if tg.ready[i].Load() < since || tg.live[i].Load() < since {
			return false
		}
	}
	return true
}

// lastFirstProbe is the latest of every pod's first readiness and liveness probe since the restart.
func (tg *restartTargets) lastFirstProbe() time.Time {
	var last int64
	for i := range tg.ready {
		last = max(last, tg.ready[i].Load(), tg.live[i].Load())
	}
	return time.Unix(0, last)
}

func (tg *restartTargets) close() {
	if tg.http != nil {
		tg.http.Close()
	}
	for _, ln := range tg.tcp {
		_ = ln.Close()
	}
	tg.wg.Wait()
}

// restartBenchManifest writes the pods: pod-NNN runs `sleep` (exec'd by a shell that first writes
// its pid to <dir>/pid-NNN; $$$$ because Kubernetes expands $$ to $ in a command).
func restartBenchManifest(b *testing.B, dir string, tg *restartTargets, pods int) string {
	_, httpPort, err := net.SplitHostPort(tg.http.Listener.Addr().String())
	require.NoError(b, err)
	var m strings.Builder
	for i := range pods {
		_, tcpPort, err := net.SplitHostPort(tg.tcp[i].Addr().String())
		require.NoError(b, err)
		fmt.Fprintf(&m, `---
apiVersion: v1
kind: Pod
metadata: {name: pod-%03[1]d}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    command: ["sh", "-c", "echo $$$$ > %[2]s/pid-%03[1]d; exec sleep 100000"]
    readinessProbe: {httpGet: {host: 127.0.0.1, port: %[3]s, path: /ready/%[1]d}, periodSeconds: %[4]d, timeoutSeconds: 5}
    livenessProbe: {tcpSocket: {host: 127.0.0.1, port: %[5]s}, periodSeconds: %[6]d, timeoutSeconds: 5}
`, i, dir, httpPort, 1+i%2, tcpPort, 2-i%2)
	}
	path := filepath.Join(dir, "pods.yaml")
	require.NoError(b, os.WriteFile(path, []byte(m.String()), 0o600))
	return path
}

// restartBenchStatuses is each pod-NNN's container status by N; the bool says whether every one
// of the pods is listed with one container status.
func restartBenchStatuses(list []v1.Pod, pods int) (map[int]v1.ContainerStatus, bool) {
	out := map[int]v1.ContainerStatus{}
	for _, p := range list {
		var n int
		if _, err := fmt.Sscanf(p.Name, "pod-%d", &n); err != nil || len(p.Status.ContainerStatuses) != 1 {
			continue
		}
		out[n] = p.Status.ContainerStatuses[0]
	}
	return out, len(out) == pods
}

func allRunningReady(st map[int]v1.ContainerStatus) bool {
	for _, c := range st {
		if c.ContainerID == "" || c.State.Running == nil || !c.Ready {
			return false
		}
	}
	return true
}

// waitPods polls /pods every interval until done says so; it fails the benchmark after timeout or
// when node exits.
func waitPods(b *testing.B, node *fleettest.Proc, api string, timeout, interval time.Duration, what string, done func([]v1.Pod) bool) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		if node.Exited() {
			b.Fatalf("node exited while waiting for %s: %v\nstderr tail:\n%s", what, node.Err(), tail(node.Stderr(), 4000))
		}
		list, err := podList(api)
		if err == nil && done(list) {
			return
		}
		lastErr = err
		time.Sleep(interval)
	}
	b.Fatalf("%s: not within %v (last error: %v)\nstderr tail:\n%s", what, timeout, lastErr, tail(node.Stderr(), 4000))
}

// benchProc is a container's main process and its shim, each with its start time (so that a
// reused pid is not mistaken for it).
type benchProc struct {
	pid, shim             int
	pidStart, shimStarted string
}

func readBenchProc(b *testing.B, pidFile string) benchProc {
	raw, err := os.ReadFile(pidFile)
	require.NoError(b, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(b, err, pidFile)
	ppid, start, _, ok := procStat(pid)
	require.True(b, ok, "container pid %d (%s) runs", pid, pidFile)
	_, shimStart, _, ok := procStat(ppid)
	require.True(b, ok, "shim pid %d runs", ppid)
	return benchProc{pid: pid, shim: ppid, pidStart: start, shimStarted: shimStart}
}

// alive says whether the container process or its shim still runs (a zombie does not).
func (p benchProc) alive() bool {
	_, start, state, ok := procStat(p.pid)
	if ok && start == p.pidStart && state != "Z" {
		return true
	}
	_, start, state, ok = procStat(p.shim)
	return ok && start == p.shimStarted && state != "Z"
}

func anyAlive(ps []benchProc) bool {
	for _, p := range ps {
		if p.alive() {
			return true
		}
	}
	return false
}

// procStat reads a process's parent, start time (clock ticks since boot) and state from
// /proc/<pid>/stat.
func procStat(pid int) (ppid int, start, state string, ok bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", "", false
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // after "pid (comm)": state, ppid, …
	if len(f) < 20 {
		return 0, "", "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[19], f[0], true
}

func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
