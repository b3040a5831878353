package actors

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/actors/fakeruntime"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// A shared dependency fails for 20 pods at once: with a budget of 3 kills per minute, 3 are
// restarted and 17 wait, running and not ready, each announced once; a minute later the 3 oldest
// waiting are restarted; when the dependency recovers, the waiting kills are cancelled and every
// container is ready again; no further kill happens.
func TestRestartBudgetDefersKillsBeyondIt(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		h := newHarness(t, WithRestartBudget(3, time.Minute), WithRegistry(reg))
		// A second of initial delay: a container restarted when the window moves on (at a whole
		// second, as every probe) is first probed a second later, after the dependency recovers.
		// Without it, whether its worker's tick of that same second comes before or after it learns
		// of the new container is a race, and 3 more kills wait (a few runs in a hundred).
		probe := execProbe(1, 1)
		probe.InitialDelaySeconds = 1
		var pods []*v1.Pod
		for i := range 20 {
			p := testPod(fmt.Sprintf("p%02d", i), v1.Container{Name: "app", LivenessProbe: probe})
			h.run(p)
			pods = append(pods, p)
		}
		h.sync()
		ready := func(p *v1.Pod) bool { return h.status(p.UID).ContainerStatuses[0].Ready }
		for _, p := range pods {
			require.True(t, ready(p))
		}

		h.prober.result("app", probes.Failure) // the dependency goes down
		h.clk.Advance(time.Second)
		h.sync()
		kills := h.rt.Kills()
		require.Len(t, kills, 3, "the budget: 3 kills")
		deferred := h.events.find(messages.ReasonRestartBudgetExhausted)
		require.Len(t, deferred, 17, "every other container is announced once")
		assert.Contains(t, deferred[0].Message, "failed liveness probe; restart deferred: the restart budget (3 per 1m0s) is spent, next room in 1m0s")
		assert.Equal(t, "spec.containers{app}", deferred[0].FieldPath)
		killed := map[string]bool{}
		for _, k := range kills {
			killed[string(k.Pod.UID)] = true
		}
		for _, p := range pods {
			if killed[string(p.UID)] {
				assert.Equal(t, int32(1), h.status(p.UID).ContainerStatuses[0].RestartCount)
				continue
			}
			st := h.status(p.UID)
			assert.False(t, st.ContainerStatuses[0].Ready, "%s: a deferred kill is not ready", p.UID)
			assert.Zero(t, st.ContainerStatuses[0].RestartCount, "%s keeps running", p.UID)
			states, err := h.tree.ProbeStates(context.Background(), p.UID)
			require.NoError(t, err)
			assert.True(t, states[0].KillDeferred, "%s: its worker knows", p.UID)
			assert.False(t, states[0].OnHold, "%s: and keeps probing", p.UID)
		}

		// More failures, including of the 3 restarted containers: nothing more is killed within the window.
		h.clk.Advance(30 * time.Second)
		h.sync()
		assert.Len(t, h.rt.Kills(), 3)
		assert.Len(t, h.events.find(messages.ReasonRestartBudgetExhausted), 20, "the restarted ones wait too")
		assert.Equal(t, 20.0, testutil.ToFloat64(family(reg, "probeactor_restart_budget_waiting_kills")))

		// The window moves on: room for 3 more, the oldest waiting first.
		h.clk.Advance(30 * time.Second)
		h.sync()
		kills = h.rt.Kills()
		require.Len(t, kills, 6)
		assert.Equal(t, 17.0, testutil.ToFloat64(family(reg, "probeactor_restart_budget_waiting_kills")))
		assert.Len(t, h.events.find(messages.ReasonKilling), 6, "kubelet's Killing event for each kill taken")

		// The dependency recovers: every waiting kill is cancelled; every container is ready.
		h.prober.result("app", probes.Success)
		h.clk.Advance(time.Second)
		h.sync()
		assert.Len(t, h.events.find(messages.ReasonRestartCancelled), 17)
		for _, p := range pods {
			assert.True(t, ready(p), "%s ready again", p.UID)
		}
		assert.Equal(t, 0.0, testutil.ToFloat64(family(reg, "probeactor_restart_budget_waiting_kills")))
		h.clk.Advance(2 * time.Minute)
		h.sync()
		assert.Len(t, h.rt.Kills(), 6, "nothing more")
		assert.Equal(t, 20.0, testutil.ToFloat64(family(reg, "probeactor_restart_budget_deferred_kills_total")), "17, then the 3 restarted ones")
		assert.Equal(t, 17.0, testutil.ToFloat64(family(reg, "probeactor_restart_budget_cancelled_kills_total")))
	})
}

// The budget's timer is due at the gate's next room whatever the clock read while due decided
// (clock.AfterFuncAt). A delay measured from due's reading fired late by the time due took; with
// the fake clock, by however far the test had advanced it meanwhile, and the test above saw the
// window not move on in about one run in sixty.
func TestBudgetTimerIsDueAtTheNextRoom(t *testing.T) {
	clk := clock.NewFake(t0)
	b := &budgetLoop{env: &env{cfg: &config{clock: clk}}}
	clk.Advance(10 * time.Second)
	next := t0.Add(time.Minute)
	b.arm(next)
	at, ok := clk.Next()
	require.True(t, ok, "armed")
	assert.Equal(t, next, at)
	b.arm(time.Time{})
	assert.Zero(t, clk.Pending(), "no next room: no timer")
}

// family is a metric family of reg as one collector testutil can read (its series summed).
func family(reg *prometheus.Registry, name string) prometheus.Collector {
	return gathered{reg: reg, name: name}
}

// gathered collects one family of a registry (summed over its label values).
type gathered struct {
	reg  *prometheus.Registry
	name string
}

func (g gathered) Describe(chan<- *prometheus.Desc) {}

func (g gathered) Collect(ch chan<- prometheus.Metric) {
	fams, err := g.reg.Gather()
	if err != nil {
		return
	}
	sum := 0.0
	for _, f := range fams {
		if f.GetName() != g.name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(g.name, "sum", nil, nil), prometheus.GaugeValue, sum)
}

// Without a budget every kill is taken at once (kubelet), and no budget series exist.
func TestNoRestartBudgetKillsAtOnce(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		h := newHarness(t, WithRegistry(reg))
		for i := range 5 {
			h.run(testPod(fmt.Sprintf("q%d", i), v1.Container{Name: "app", LivenessProbe: execProbe(1, 1)}))
		}
		h.sync()
		h.prober.result("app", probes.Failure)
		h.clk.Advance(time.Second)
		h.sync()
		assert.Len(t, h.rt.Kills(), 5)
		assert.Empty(t, h.events.find(messages.ReasonRestartBudgetExhausted))
		fams, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range fams {
			assert.NotContains(t, f.GetName(), "restart_budget")
		}
	})
}

// A waiting kill ends with its pod: a removed pod, or one whose liveness and startup probes stop
// because it terminates, is not killed when the budget allows.
func TestRestartBudgetForgetsTerminatingPods(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t, WithRestartBudget(1, time.Minute))
		a := testPod("a", v1.Container{Name: "app", LivenessProbe: execProbe(1, 1)})
		b := testPod("b", v1.Container{Name: "app", LivenessProbe: execProbe(1, 1)})
		c := testPod("c", v1.Container{Name: "app", LivenessProbe: execProbe(1, 1)})
		for _, p := range []*v1.Pod{a, b, c} {
			h.run(p)
		}
		h.sync()
		h.prober.result("app", probes.Failure)
		h.clk.Advance(time.Second)
		h.sync()
		require.Len(t, h.rt.Kills(), 1)
		first := h.rt.Kills()[0].Pod.UID
		var waiting []*v1.Pod
		for _, p := range []*v1.Pod{a, b, c} {
			if p.UID != first {
				waiting = append(waiting, p)
			}
		}
		h.tree.StopLivenessAndStartup(waiting[0])
		h.tree.RemovePod(waiting[1])
		h.sync()
		assert.True(t, h.status(waiting[0].UID).ContainerStatuses[0].Ready, "no longer marked: readiness decides (none: ready)")
		h.clk.Advance(2 * time.Minute)
		h.sync()
		for _, k := range h.rt.Kills()[1:] {
			assert.Equal(t, first, k.Pod.UID, "only the restarted pod is killed again")
		}
	})
}

func TestRestartBudgetOptionIsValidated(t *testing.T) {
	sys := newSystem(t)
	for _, o := range []Option{WithRestartBudget(0, time.Minute), WithRestartBudget(2, 0)} {
		_, err := NewTree(sys.Root, WithRuntime(fakeruntime.New(nil)), o)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "actors.Start: WithRestartBudget: ")
	}
}

// sharedBudget is a SharedBudget whose test decides what is taken.
type sharedBudget struct {
	mu      sync.Mutex
	wanted  []string
	taken   map[string]bool
	watches int
	fns     []func()
}

func (s *sharedBudget) Want(claims []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wanted = slices.Clone(claims)
}

func (s *sharedBudget) Taken(claim string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taken[claim]
}

func (s *sharedBudget) Watch(fn func()) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watches++
	s.fns = append(s.fns, fn)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.watches--
	}
}

func (s *sharedBudget) want() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.wanted)
}

// take marks claim taken and pokes the watchers, as the cluster's ledger does.
func (s *sharedBudget) take(claim string) {
	s.mu.Lock()
	s.taken[claim] = true
	fns := slices.Clone(s.fns)
	s.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// With a shared budget the tree kills only what the shared budget took: every liveness kill waits
// (announced with the cluster's wording, its container running and not ready), the waiting claims
// are asked for oldest first, a taken claim kills its container (whatever its place), a recovery
// withdraws its claim, and the tree watches the shared budget once.
func TestSharedRestartBudgetKillsOnlyWhatItTook(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		sb := &sharedBudget{taken: map[string]bool{}}
		h := newHarness(t, WithSharedRestartBudget(2, time.Minute, sb))
		var pods []*v1.Pod
		for i := range 3 {
			p := testPod(fmt.Sprintf("p%d", i), v1.Container{Name: "app", LivenessProbe: execProbe(1, 1)})
			h.run(p)
			pods = append(pods, p)
		}
		h.sync()
		h.prober.result("app", probes.Failure)
		h.clk.Advance(time.Second)
		h.sync()
		assert.Empty(t, h.rt.Kills(), "nothing is killed before the shared budget takes it")
		claims := sb.want()
		require.Len(t, claims, 3)
		deferred := h.events.find(messages.ReasonRestartBudgetExhausted)
		require.Len(t, deferred, 3)
		assert.Contains(t, deferred[0].Message, "restart deferred: the cluster's shared restart budget (2 per 1m0s) has not given it room yet")
		for _, p := range pods {
			assert.False(t, h.status(p.UID).ContainerStatuses[0].Ready, "%s waits, not ready", p.UID)
		}

		sb.take(claims[2]) // the cluster's order put the youngest first
		h.sync()
		kills := h.rt.Kills()
		require.Len(t, kills, 1)
		assert.Equal(t, claims[2], fmt.Sprintf("%s/app/%s", kills[0].Pod.UID, kills[0].ContainerID))
		assert.Equal(t, claims[:2], sb.want(), "the taken claim is no longer asked for")

		h.prober.result("app", probes.Success)
		h.clk.Advance(time.Second)
		h.sync()
		assert.Empty(t, sb.want(), "recoveries withdraw the claims")
		assert.Len(t, h.events.find(messages.ReasonRestartCancelled), 2)
		assert.Len(t, h.rt.Kills(), 1)
		sb.mu.Lock()
		assert.Equal(t, 1, sb.watches, "one watch for the tree's life, not one per decision")
		sb.mu.Unlock()
	})
}
