package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cluster/internal/clustertest"
	"github.com/probeactor/probeactor/cluster/sharder"
	"github.com/probeactor/probeactor/internal/fleettest"
	"github.com/probeactor/probeactor/internal/freeport"
	"github.com/probeactor/probeactor/internal/podapi"
)

// Detection settings of the process tests: membership's defaults.
const (
	failureTimeout    = 2 * time.Second
	heartbeatInterval = 250 * time.Millisecond
	npods             = 60
)

// testCluster is a cluster of test member processes on fixed loopback ports.
type testCluster struct {
	t        *testing.T
	addrs    []string
	procs    []*fleettest.Proc
	extra    [][]string // per member: more flags (TLS)
	pods     []types.UID
	mu       sync.Mutex
	archived []clustertest.Event // events of runs that were killed, with their Gone
}

func startCluster(t *testing.T, n int, extra func(i int, addr string) []string) *testCluster {
	t.Helper()
	c := &testCluster{t: t}
	for range n {
		c.addrs = append(c.addrs, freeport.Addr(t))
	}
	slices.Sort(c.addrs)
	for i := range npods {
		c.pods = append(c.pods, types.UID(fmt.Sprintf("pod-%02d", i)))
	}
	for i, a := range c.addrs {
		var more []string
		if extra != nil {
			more = extra(i, a)
		}
		c.extra = append(c.extra, more)
		c.procs = append(c.procs, fleettest.StartBinary(t, memberBin, c.args(i)...))
	}
	return c
}

func (c *testCluster) args(i int) []string {
	return append([]string{"--cluster", "demo", "--listen", c.addrs[i], "--peers", strings.Join(c.addrs, ","), "--pods", strconv.Itoa(npods),
		"--failure-timeout", failureTimeout.String(), "--heartbeat-interval", heartbeatInterval.String()}, c.extra[i]...)
}

// events are every member's events so far, in time order.
func (c *testCluster) events() []clustertest.Event {
	l := &clustertest.Ledger{}
	c.mu.Lock()
	for _, e := range c.archived {
		l.Add(e)
	}
	c.mu.Unlock()
	for i, p := range c.procs {
		for _, e := range clustertest.ParseLines(c.addrs[i], p.Stdout()) {
			l.Add(e)
		}
	}
	return l.Events()
}

// waitExactlyOnce waits until every pod runs exactly once, on its owner among members.
func (c *testCluster) waitExactlyOnce(members []string, what string) {
	c.t.Helper()
	var err error
	deadline := time.Now().Add(60 * time.Second) // generous: the machine is shared
	for time.Now().Before(deadline) {
		for i, p := range c.procs {
			if slices.Contains(members, c.addrs[i]) && p.Exited() {
				c.t.Fatalf("%s: member %s exited: %v\n%s", what, c.addrs[i], p.Err(), p.Stderr())
			}
		}
		if err = clustertest.ExactlyOnce(c.events(), c.pods, members); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("%s: pods not placed exactly once on %v within 60 s: %v", what, members, err)
}

// stable checks that nothing starts or stops for a while after the cluster settled.
func (c *testCluster) stable(since time.Time) {
	c.t.Helper()
	settled := clustertest.LastChange(c.events(), since)
	// Polled here, not with require.Never: its condition goroutine may outlive it and race with
	// the next Restart.
	for end := time.Now().Add(4 * heartbeatInterval); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if moved := clustertest.LastChange(c.events(), settled); !moved.IsZero() {
			c.t.Fatalf("pods moved %v after the cluster had settled", moved.Sub(settled))
		}
	}
}

// kill SIGKILLs member i and records that everything it ran stopped with it.
func (c *testCluster) kill(i int) time.Time {
	at := time.Now()
	c.procs[i].Kill()
	c.mu.Lock()
	c.archived = append(c.archived, clustertest.ParseLines(c.addrs[i], c.procs[i].Stdout())...)
	c.archived = append(c.archived, clustertest.Event{At: at, Member: c.addrs[i], Kind: clustertest.Gone})
	c.mu.Unlock()
	return at
}

func (c *testCluster) restart(i int) time.Time {
	at := time.Now()
	c.procs[i].Restart()
	return at
}

func without(addrs []string, i int) []string {
	return slices.Delete(slices.Clone(addrs), i, i+1)
}

// round is what one kill-and-restart of a member measured.
type round struct {
	detection  time.Duration // kill → the last survivor's view without the victim
	failover   time.Duration // kill → the last of the victim's pods started on a survivor
	rebalance  time.Duration // restart (exec) → the last start or stop of the handoff back
	joinerView time.Duration // restart → the restarted member's view has everyone
	peersView  time.Duration // restart → the last survivor's view has the restarted member
	dupLongest time.Duration // longest time any pod ran on two members at once
	dupPods    int
}

func (r round) String() string {
	return fmt.Sprintf("detection %v, failover %v, rebalance %v (joiner's view %v, peers' view %v), duplicate running %v on %d pods",
		r.detection.Round(time.Millisecond), r.failover.Round(time.Millisecond), r.rebalance.Round(time.Millisecond),
		r.joinerView.Round(time.Millisecond), r.peersView.Round(time.Millisecond), r.dupLongest.Round(time.Millisecond), r.dupPods)
}

// killAndRestart SIGKILLs member v, waits until the survivors run every pod exactly once,
// restarts it on the same port and waits until the pods are rebalanced.
func (c *testCluster) killAndRestart(v int) round {
	c.t.Helper()
	var r round
	survivors := without(c.addrs, v)
	killed := c.kill(v)
	c.waitExactlyOnce(survivors, fmt.Sprintf("after SIGKILL of %s", c.addrs[v]))
	ev := c.events()
	for _, s := range survivors {
		seen := clustertest.FirstView(ev, s, survivors, killed)
		require.False(c.t, seen.IsZero(), "%s never published a view without %s", s, c.addrs[v])
		r.detection = max(r.detection, seen.Sub(killed))
	}
	r.failover = clustertest.LastChange(ev, killed).Sub(killed)
	c.stable(killed)

	restarted := c.restart(v)
	c.waitExactlyOnce(c.addrs, fmt.Sprintf("after the restart of %s", c.addrs[v]))
	ev = c.events()
	r.rebalance = clustertest.LastChange(ev, restarted).Sub(restarted)
	r.joinerView = clustertest.FirstView(ev, c.addrs[v], c.addrs, restarted).Sub(restarted)
	for _, s := range survivors {
		r.peersView = max(r.peersView, clustertest.FirstView(ev, s, c.addrs, restarted).Sub(restarted))
	}
	r.dupLongest, r.dupPods = clustertest.Duplicates(ev, killed)
	c.stable(restarted)
	return r
}

// TestFailoverAndRebalanceWithRealProcesses: three members on fixed loopback ports share 60 pods;
// SIGKILL one, and the survivors run every pod exactly once; restart it, and the pods are
// rebalanced exactly once, no pod ever running on two members. `make test` runs one round; `make
// cluster-failover` runs PROBEACTOR_CLUSTER_ROUNDS=10 in a row and then also holds the timings to
// the bounds (failover within the failure timeout + 2 s, rebalance within twice the
// failure timeout), which a shared CI machine cannot promise in the unit suite.
func TestFailoverAndRebalanceWithRealProcesses(t *testing.T) {
	rounds, timed := 1, false
	if s := os.Getenv("PROBEACTOR_CLUSTER_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "PROBEACTOR_CLUSTER_ROUNDS")
		rounds, timed = n, true
	}
	c := startCluster(t, 3, nil)
	c.waitExactlyOnce(c.addrs, "three members start")
	var all []round
	for i := range rounds {
		r := c.killAndRestart(i % len(c.addrs))
		t.Logf("round %d (SIGKILL %s): %v", i+1, c.addrs[i%len(c.addrs)], r)
		assert.Zero(t, r.dupPods, "round %d: a pod ran on two members at once (longest %v)", i+1, r.dupLongest)
		if timed {
			grace := podapi.MinimumGracePeriod                                      // the pods' 1 s grace period, raised to kubelet's minimum as every stop does
			bound := failureTimeout + grace + sharder.Margin(failureTimeout)(grace) // lease, grace, margin
			assert.LessOrEqual(t, r.failover, bound+2*time.Second, "round %d: failover within the fencing bound (%v) + 2 s", i+1, bound)
			assert.LessOrEqual(t, r.rebalance, 2*failureTimeout, "round %d: rebalance within twice the failure timeout", i+1)
		}
		all = append(all, r)
	}
	if len(all) > 1 {
		t.Logf("over %d rounds (min / median / max):\n%s", len(all), summary(all))
	}

	// A graceful leave (SIGTERM): the member stops its pods, then tells its peers, which take them
	// over at once instead of after the failure timeout.
	leaving := time.Now()
	require.NoError(t, c.procs[0].Stop())
	c.mu.Lock()
	c.archived = append(c.archived, clustertest.ParseLines(c.addrs[0], c.procs[0].Stdout())...)
	c.mu.Unlock()
	c.waitExactlyOnce(c.addrs[1:], "after a graceful leave")
	ev := c.events()
	handoff := clustertest.LastChange(ev, leaving).Sub(leaving)
	longest, n := clustertest.Duplicates(ev, leaving)
	t.Logf("graceful leave (SIGTERM → every pod running on the others): %v, duplicate running %v on %d pods", handoff.Round(time.Millisecond), longest, n)
	assert.Zero(t, n, "the leaver stops its pods before the others start them")
	if timed {
		assert.Less(t, handoff, failureTimeout, "a leave is not detected by the timeout")
	}
}

func summary(rs []round) string {
	line := func(name string, f func(r round) time.Duration) string {
		var ds []time.Duration
		for _, r := range rs {
			ds = append(ds, f(r))
		}
		slices.Sort(ds)
		return fmt.Sprintf("  %-40s %8v %8v %8v\n", name, ds[0].Round(time.Millisecond), ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
	return line("detection (kill → removed from views)", func(r round) time.Duration { return r.detection }) +
		line("failover (kill → every lost pod running)", func(r round) time.Duration { return r.failover }) +
		line("rebalance (restart → handoff done)", func(r round) time.Duration { return r.rebalance }) +
		line("joiner's view complete (from restart)", func(r round) time.Duration { return r.joinerView }) +
		line("peers' view complete (from restart)", func(r round) time.Duration { return r.peersView }) +
		line("duplicate running (longest)", func(r round) time.Duration { return r.dupLongest })
}

// TestAFrozenMemberRejoins: a member frozen (SIGSTOP) past the failure timeout is dropped by its
// peers (a false suspicion: it is alive, only silent), which do not start its pods before the
// fencing bound (its lease's end, then the pods' grace period and the margin). Resumed (SIGCONT)
// before that bound, it finds its lease run out and stops its pods (it acts on a fresh view, not
// on the heartbeats buffered while it was frozen), then, back in a current majority, starts them
// again. Every member's view has all three again, every pod runs exactly once, on its owner, and
// no pod ever ran on two members (this test member runs no shims; the node tests cover fencing by
// the shims of a member frozen past the bound).
func TestAFrozenMemberRejoins(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.waitExactlyOnce(c.addrs, "three members start")
	frozen := c.addrs[1]
	c.procs[1].Signal(syscall.SIGSTOP)
	stopped := time.Now()
	survivors := without(c.addrs, 1)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) { // generous: the machine is shared
		ev := c.events()
		if !clustertest.FirstView(ev, survivors[0], survivors, stopped).IsZero() && !clustertest.FirstView(ev, survivors[1], survivors, stopped).IsZero() {
			break
		}
		if time.Now().After(deadline) {
			c.procs[1].Signal(syscall.SIGCONT)
			t.Fatalf("the others did not drop the frozen %s within 60 s", frozen)
		}
	}
	resumed := time.Now() // before SIGCONT: the frozen member does nothing before it, and the test may be descheduled after it
	c.procs[1].Signal(syscall.SIGCONT)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ev := c.events()
		all := true
		for _, m := range c.addrs {
			all = all && !clustertest.FirstView(ev, m, c.addrs, resumed).IsZero()
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every member published a view with all three within 60 s after %s ran again", frozen)
		}
	}
	// The frozen member stops its pods (its lease ran out) and starts them again: wait for both.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ev := c.events()
		restarted := false
		for _, e := range ev {
			restarted = restarted || e.Member == frozen && e.Kind == clustertest.Start && e.At.After(resumed)
		}
		if restarted && clustertest.ExactlyOnce(ev, c.pods, c.addrs) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not run its share again within 60 s", frozen)
		}
	}
	ev := c.events()
	stops := 0
	for _, e := range ev {
		if e.Member == frozen && e.Kind == clustertest.Stop && e.At.After(resumed) {
			stops++
		}
		if e.Kind == clustertest.Start && e.Member != frozen && e.At.After(stopped) {
			t.Errorf("%s started %s while %s was frozen or rejoining: before the fencing bound", e.Member, e.UID, frozen)
		}
	}
	assert.Positive(t, stops, "the resumed member stopped its pods: its lease had run out")
	longest, dups := clustertest.Duplicates(ev, stopped)
	assert.Zero(t, dups, "a pod ran on two members (longest %v)", longest)
	t.Logf("frozen for %v; every pod exactly once on the three %v after SIGCONT",
		resumed.Sub(stopped).Round(time.Millisecond), clustertest.LastChange(ev, resumed).Sub(resumed).Round(time.Millisecond))
	c.stable(resumed)
}
