package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/cluster/sharder"
	"github.com/probeactor/probeactor/internal/fleettest"
	"github.com/probeactor/probeactor/internal/freeport"
	"github.com/probeactor/probeactor/internal/podapi"
)

// clusterPodsManifest writes n pods (pod-00 …), one sleeping container each, whose readiness probe
// GETs host:port/ every period seconds (an external target: the probe names a host), and returns
// its path. Each container's environment names the manifest (FENCE_TOKEN, its path), its pod and
// its member (fieldRef spec.nodeName), so scanContainers(path) finds where each pod runs.
func clusterPodsManifest(t testing.TB, n int, hostPort string, period, probesPerPod int) string {
	t.Helper()
	host, port, err := net.SplitHostPort(hostPort)
	require.NoError(t, err)
	probe := fmt.Sprintf("{httpGet: {host: %q, port: %s, path: /}, periodSeconds: %d, timeoutSeconds: 5}", host, port, period)
	path := filepath.Join(t.TempDir(), "pods.yaml")
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata: {name: pod-%02d}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: app\n    command: [sleep, \"100000\"]\n    readinessProbe: %s\n", i, probe)
		fmt.Fprintf(&b, "    env:\n    - {name: FENCE_TOKEN, value: %q}\n    - {name: FENCE_POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n"+
			"    - {name: FENCE_NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}\n", path)
		if probesPerPod > 1 {
			fmt.Fprintf(&b, "    livenessProbe: %s\n", probe)
		}
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	return path
}

// clusterOfNodes is `node run --cluster` members on fixed loopback ports.
type clusterOfNodes struct {
	t        testing.TB
	addrs    []string // --cluster-listen, sorted
	apis     []string // http://… of each member's API
	names    []string // --node-name
	procs    []*fleettest.Proc
	manifest string
}

func startClusterOfNodes(t testing.TB, n int, manifest, aggregator string, failureTimeout time.Duration, extra ...string) *clusterOfNodes {
	t.Helper()
	c := startCluster(t, n, aggregator, failureTimeout, func(int) []string { return append([]string{"-f", manifest}, extra...) })
	c.manifest = manifest
	return c
}

// startCluster starts n members of the cluster "demo"; member i (0-based, in --cluster-listen
// order) also gets args(i), its pod sources among them.
func startCluster(t testing.TB, n int, aggregator string, failureTimeout time.Duration, args func(i int) []string) *clusterOfNodes {
	t.Helper()
	c := &clusterOfNodes{t: t}
	for range n {
		c.addrs = append(c.addrs, freeport.Addr(t))
	}
	slices.Sort(c.addrs)
	for i, addr := range c.addrs {
		name := fmt.Sprintf("m%d", i+1)
		api := freeport.Addr(t)
		args := append([]string{"--node-name", name, "--cluster", "demo", "--cluster-listen", addr, "--cluster-peers", strings.Join(c.addrs, ","),
			"--cluster-failure-timeout", failureTimeout.String(), "--listen", api, "--root-dir", filepath.Join(t.TempDir(), "root")}, args(i)...)
		if aggregator != "" {
			args = append(args, "--fleet", aggregator, "--node-status-update-frequency", "500ms")
		}
		c.names = append(c.names, name)
		c.apis = append(c.apis, "http://"+api)
		c.procs = append(c.procs, fleettest.StartRole(t, "node", args...))
	}
	return c
}

// placement is where each pod's container runs (a running container state), by pod name.
type placement map[string][]string

// observe reads every listed member's /pods; an unreachable member fails (unless it exited: the
// caller lists only live ones).
func (c *clusterOfNodes) observe(members []int) (placement, error) {
	out := placement{}
	for _, i := range members {
		pods, err := podList(c.apis[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.names[i], err)
		}
		for _, p := range pods {
			if running(p) {
				out[p.Name] = append(out[p.Name], c.names[i])
			}
		}
	}
	return out, nil
}

func running(p v1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil {
			return true
		}
	}
	return false
}

// exactlyOnce says whether every one of n pods runs on exactly one member.
func (p placement) exactlyOnce(n int) bool {
	if len(p) != n {
		return false
	}
	for _, on := range p {
		if len(on) != 1 {
			return false
		}
	}
	return true
}

func (p placement) duplicates() []string {
	var d []string
	for name, on := range p {
		if len(on) > 1 {
			d = append(d, fmt.Sprintf("%s on %v", name, on))
		}
	}
	slices.Sort(d)
	return d
}

// aggregatorPlacement is the aggregator's /pods: every pod on a Ready node, by pod name.
func aggregatorPlacement(agg *fleettest.Proc) (placement, error) {
	nodes, err := nodeList(agg.API)
	if err != nil {
		return nil, err
	}
	ready := map[string]bool{}
	for _, n := range nodes {
		ready[n.Name] = n.Status.Conditions[0].Status == v1.ConditionTrue
	}
	pods, err := podList(agg.API)
	if err != nil {
		return nil, err
	}
	out := placement{}
	for _, p := range pods {
		if ready[p.Spec.NodeName] && running(p) {
			out[p.Name] = append(out[p.Name], p.Spec.NodeName)
		}
	}
	return out, nil
}

// watch polls the members' /pods until stop and records the longest time any pod ran on two of
// them at once (seen in one poll round) and how many pods did.
type dupWatch struct {
	mu      sync.Mutex
	since   map[string]time.Time
	longest time.Duration
	pods    map[string]bool
	stop    chan struct{}
	done    chan struct{}
}

func (c *clusterOfNodes) watchDuplicates(members []int) *dupWatch {
	w := &dupWatch{since: map[string]time.Time{}, pods: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() { // ends when halt closes stop
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			p, err := c.observe(members)
			if err != nil {
				continue
			}
			now := time.Now()
			w.mu.Lock()
			for name, on := range p {
				if len(on) < 2 {
					delete(w.since, name)
					continue
				}
				w.pods[name] = true
				if _, ok := w.since[name]; !ok {
					w.since[name] = now
				}
				w.longest = max(w.longest, now.Sub(w.since[name]))
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *dupWatch) halt() (longest time.Duration, pods int) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.longest, len(w.pods)
}

// await polls members (and the aggregator, when given) until ok holds for both and returns when
// that was first seen.
func (c *clusterOfNodes) await(what string, members []int, agg *fleettest.Proc, within time.Duration, ok func(placement) bool) time.Time {
	c.t.Helper()
	deadline := time.Now().Add(within)
	var last, lastAgg placement
	var err error
	for time.Now().Before(deadline) {
		for _, i := range members {
			if c.procs[i].Exited() {
				c.t.Fatalf("%s: member %s exited: %v\n%s", what, c.names[i], c.procs[i].Err(), c.procs[i].Stderr())
			}
		}
		if last, err = c.observe(members); err == nil && ok(last) {
			at := time.Now()
			if agg == nil {
				return at
			}
			if lastAgg, err = aggregatorPlacement(agg); err == nil && ok(lastAgg) && assert.ObjectsAreEqual(last, lastAgg) {
				return at
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("%s: not reached within %v (last error %v)\nmembers: %v\naggregator: %v", what, within, err, last, lastAgg)
	return time.Time{}
}

func without(all []int, i int) []int {
	return slices.DeleteFunc(slices.Clone(all), func(x int) bool { return x == i })
}

// failoverRound is what one SIGKILL and restart of a member measured.
type failoverRound struct {
	failover, failoverAgg, rebalance time.Duration
}

// TestClusterFailoverWithRealNodes: three `node run --cluster --fleet` members share 60 pods whose
// readiness probes GET one loopback server. SIGKILL one: once the fencing bound has passed (its
// containers' lease ran out, then their grace period and the margin) every pod runs exactly once
// on the survivors, by their own /pods (running containers) and by the aggregator's /pods
// (spec.nodeName, Ready nodes); restart it: the pods go back where they ran before (rendezvous
// hashing over the same members), exactly once. The process table, sampled every 100 ms
// throughout, never shows a pod with two live containers (a member's /pods can lag its
// containers, so the process table is the witness).
// `make test` runs one round and logs the times; `make cluster-failover-node` runs
// PROBEACTOR_CLUSTER_ROUNDS=10 and also holds them to the bounds (failover ≤ the fencing bound —
// failure timeout + grace period + margin — + 2 s, rebalance ≤ twice the failure timeout), which
// a shared CI machine cannot promise.
func TestClusterFailoverWithRealNodes(t *testing.T) {
	const npods = 60
	// make test runs alongside every other package's tests on two cores: a 5 s failure timeout
	// keeps the members' heartbeats, starved while dozens of container processes start, from
	// looking like deaths (a false suspicion can leave two members with asymmetric views; see
	// ARCHITECTURE.md, "Cluster"). The timed rounds use the default, 2 s.
	rounds, timed, failureTimeout := 1, false, 5*time.Second
	if s := os.Getenv("PROBEACTOR_CLUSTER_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "PROBEACTOR_CLUSTER_ROUNDS")
		rounds, timed, failureTimeout = n, true, 2*time.Second
	}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer target.Close()
	manifest := clusterPodsManifest(t, npods, target.Listener.Addr().String(), 10, 1)
	agg := fleettest.StartAggregator(t)
	c := startClusterOfNodes(t, 3, manifest, agg.Remote, failureTimeout)
	all := []int{0, 1, 2}
	once := func(p placement) bool { return p.exactlyOnce(npods) }
	c.await("three members start", all, agg, 120*time.Second, once)
	initial, err := c.observe(all)
	require.NoError(t, err)
	perMember := map[string]int{}
	for _, on := range initial {
		perMember[on[0]]++
	}
	t.Logf("placement: %v pods per member", perMember)
	assert.Len(t, perMember, 3, "every member runs a share")

	var rs []failoverRound
	sampler := sampleTable(t, manifest) // the process table every 100 ms: no pod ever has two live containers
	for r := range rounds {
		v := r % 3
		survivors := without(all, v)
		var fr failoverRound
		killed := time.Now()
		c.procs[v].Kill()
		fr.failover = c.await("failover", survivors, nil, 60*time.Second, once).Sub(killed)
		fr.failoverAgg = c.await("failover at the aggregator", survivors, agg, 60*time.Second, once).Sub(killed)
		require.GreaterOrEqual(t, fr.failover, failureTimeout+time.Second, "round %d: the survivors waited for the lost member's fencing "+
			"(its lease, then the pods' grace period) before they started its pods", r+1)

		restarted := time.Now()
		c.procs[v].Restart()
		back := c.await("rebalance", all, agg, 60*time.Second, func(p placement) bool { return assert.ObjectsAreEqual(initial, p) })
		fr.rebalance = back.Sub(restarted)
		t.Logf("round %d (SIGKILL %s): failover %v (at the aggregator %v), rebalance %v",
			r+1, c.names[v], fr.failover.Round(time.Millisecond), fr.failoverAgg.Round(time.Millisecond), fr.rebalance.Round(time.Millisecond))
		if timed {
			grace := podapi.MinimumGracePeriod                                      // the pods' 1 s grace period, raised to kubelet's minimum as every stop does
			bound := failureTimeout + grace + sharder.Margin(failureTimeout)(grace) // lease, grace, margin
			assert.LessOrEqual(t, fr.failover, bound+2*time.Second, "round %d: failover within the fencing bound (%v) + 2 s", r+1, bound)
			assert.LessOrEqual(t, fr.rebalance, 2*failureTimeout, "round %d: rebalance within twice the failure timeout", r+1)
		}
		rs = append(rs, fr)
	}
	assert.Empty(t, sampler.halt(), "pods seen with two live containers at once, during a failover or a hand-back (the process table, every 100 ms)")
	if len(rs) > 1 {
		t.Logf("over %d rounds (min / median / max):\n%s", len(rs), roundSummary(rs))
	}
}

func roundSummary(rs []failoverRound) string {
	line := func(name string, f func(r failoverRound) time.Duration) string {
		var ds []time.Duration
		for _, r := range rs {
			ds = append(ds, f(r))
		}
		slices.Sort(ds)
		return fmt.Sprintf("  %-52s %8v %8v %8v\n", name, ds[0].Round(time.Millisecond), ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
	return line("failover (SIGKILL → every pod running once, members)", func(r failoverRound) time.Duration { return r.failover }) +
		line("failover at the aggregator (/pods, Ready nodes)", func(r failoverRound) time.Duration { return r.failoverAgg }) +
		line("rebalance (restart exec → placement as before)", func(r failoverRound) time.Duration { return r.rebalance })
}

func envInt(tb testing.TB, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(tb, err, name)
	return n
}

// BenchmarkClusterBlackbox is blackbox-style probing spread over a cluster: three `node run
// --cluster` members share PROBEACTOR_BLACKBOX_PODS pods (default 336) whose two HTTP probes
// (readiness and liveness) name a host, one loopback HTTP server, every PROBEACTOR_BLACKBOX_PERIOD
// seconds (default 1): 672 probes/s, the rate of 20,160 checks every 30 s (each pod's container is a
// real process, so the rate is reached with fewer, faster checks). After every pod runs once and a
// warm-up, it counts each member's prober_probe_total and CPU over PROBEACTOR_BLACKBOX_WINDOW
// seconds (default 30) and reports probes/s per member and in all, against the target rate.
// `make cluster-blackbox` runs it.
func BenchmarkClusterBlackbox(b *testing.B) {
	pods := envInt(b, "PROBEACTOR_BLACKBOX_PODS", 336)
	period := envInt(b, "PROBEACTOR_BLACKBOX_PERIOD", 1)
	window := time.Duration(envInt(b, "PROBEACTOR_BLACKBOX_WINDOW", 30)) * time.Second
	var served atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer target.Close()
	manifest := clusterPodsManifest(b, pods, target.Listener.Addr().String(), period, 2)
	// A long failure timeout: starting hundreds of container processes starves the members'
	// heartbeats on two cores, and a false suspicion would move pods (failover is measured by
	// TestClusterFailoverWithRealNodes, not here).
	c := startClusterOfNodes(b, 3, manifest, "", 20*time.Second)
	all := []int{0, 1, 2}
	c.await("every pod running once", all, nil, 10*time.Minute, func(p placement) bool { return p.exactlyOnce(pods) })
	time.Sleep(time.Duration(3*period) * time.Second) // warm-up: every worker past its first probes
	type sample struct{ probes, cpu float64 }
	read := func() []sample {
		var out []sample
		for _, api := range c.apis {
			out = append(out, sample{fleettest.Metric(b, api, "prober_probe_total", ""), fleettest.Metric(b, api, "process_cpu_seconds_total", "")})
		}
		return out
	}
	b.ResetTimer()
	before, servedBefore, start := read(), served.Load(), time.Now()
	time.Sleep(window) // the measurement window (not a wait for an actor)
	after, servedAfter, took := read(), served.Load(), time.Since(start)
	b.StopTimer()
	want := float64(pods*2) / float64(period)
	var total, minRate float64
	placed, err := c.observe(all)
	require.NoError(b, err)
	if !placed.exactlyOnce(pods) {
		b.Errorf("after the window, not every pod runs exactly once: %d placed, on two members: %v", len(placed), placed.duplicates())
	}
	for i, p := range c.procs {
		n := strings.Count(p.Stderr(), "cluster view changed")
		b.Logf("%s: %d membership views", c.names[i], n)
		if n > 2 { // the first view, or one with every member after a partial first round
			b.Errorf("%s saw %d views: the membership flapped", c.names[i], n)
		}
	}
	perMember := map[string]int{}
	for _, on := range placed {
		perMember[on[0]]++
	}
	for i := range c.apis {
		rate := (after[i].probes - before[i].probes) / took.Seconds()
		cpu := (after[i].cpu - before[i].cpu) / took.Seconds() * 100
		total += rate
		if i == 0 || rate < minRate {
			minRate = rate
		}
		b.Logf("%s: %d pods, %.0f probes/s (target %.0f), CPU %.0f %% of one core", c.names[i], perMember[c.names[i]], rate, float64(perMember[c.names[i]]*2)/float64(period), cpu)
		b.ReportMetric(rate, c.names[i]+"_probes/s")
	}
	b.Logf("all: %.0f probes/s of %.0f targeted (%.1f %%); the target server answered %.0f requests/s; %d pods × 2 probes every %d s over %v",
		total, want, total/want*100, float64(servedAfter-servedBefore)/took.Seconds(), pods, period, took.Round(time.Millisecond))
	b.ReportMetric(total, "probes/s")
	b.ReportMetric(want, "target_probes/s")
}
