package membership

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cluster/ownership"
	"github.com/probeactor/probeactor/internal/restartbudget"
	"github.com/probeactor/probeactor/wire/clusterv1"
)

// The cluster simulation: members made of the real membership core and the real ownership
// core (Reconcile, fed as the sharder feeds it: View.OwnershipInput, View.LapsedBefore and
// ownership.Margin), over a simulated network, each with its own clock rate, and a model of what
// node does with a plan (containers that start at once and stop within their grace period, the
// runner's stopping set told to the core before the view is acknowledged, a start refused by the
// runtime once the lease ran out, shims that stop their container when the lease runs out).
// Faults: crashes and restarts, freezes of the node process (its containers run on; heartbeats
// sent to it wait in its buffer), symmetric and one-way partitions, latency. At every event it
// checks that no pod has two live containers, counting a container as live until its
// termination has finished; once the faults heal it checks that every pod runs exactly once.

const (
	simTimeout  = 2 * time.Second
	simInterval = simTimeout / 8
)

type simEvent struct {
	at   time.Duration
	seq  int
	kind string // tick, deliver, recheck, stopDone, fault
	node int
	hb   *clusterv1.Heartbeat
	uid  types.UID
	inc  int // the node's incarnation the event belongs to
	do   func()
}

type simQueue []*simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(*simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// simContainer is one container of one pod on one member: live until end (forever while 0).
type simContainer struct{ end time.Duration }

type simNode struct {
	addr          string
	rate          float64 // the node's clock runs at rate × real time
	alive, frozen bool
	inc           int
	core          *core
	view          View
	haveView      bool
	running       map[types.UID]time.Duration // the sharder's
	stopping      []string                    // told to the core
	lease         time.Time                   // the shims' lease (local time); zero: none
	buffer        []*simEvent                 // deliveries while frozen
	ctrs          map[types.UID]*simContainer // this member's live or terminating containers
	wants         []string                    // the kills it waits to take under the shared budget
}

type clusterSim struct {
	t     *testing.T
	rng   *rand.Rand
	now   time.Duration
	seq   int
	q     simQueue
	nodes []*simNode
	pods  map[types.UID]time.Duration
	cut   map[[2]int]bool // from → to heartbeats are lost
	log   []string

	budget restartbudget.Budget // shared by the members (N 0: none)
	kills  []time.Duration      // when a member killed a container under the budget (real time)
	keys   int
}

// startClusterSim starts a simulated cluster on the random stream (seed, stream): three members
// (five for every third seed) with clock rates from 0.95 to 1.05, and pods pod-00… each with a
// grace period of 0 to maxGrace-1 s, drawn in that order so that a seed replays the same run.
func startClusterSim(t *testing.T, seed, stream uint64, pods, maxGrace int, budget restartbudget.Budget) *clusterSim {
	size := 3
	if seed%3 == 2 {
		size = 5
	}
	s := &clusterSim{t: t, rng: rand.New(rand.NewPCG(seed, stream)), pods: map[types.UID]time.Duration{}, cut: map[[2]int]bool{},
		budget: budget}
	for i := range pods {
		s.pods[types.UID(fmt.Sprintf("pod-%02d", i))] = time.Duration(s.rng.IntN(maxGrace)) * time.Second
	}
	for i := range size {
		s.nodes = append(s.nodes, &simNode{addr: fmt.Sprintf("127.0.0.1:%d", 7101+i), rate: 0.95 + 0.1*s.rng.Float64(), ctrs: map[types.UID]*simContainer{}})
	}
	for i := range s.nodes {
		s.start(i)
	}
	return s
}

// restartCrashed starts again every member that is down.
func (s *clusterSim) restartCrashed() {
	for i, n := range s.nodes {
		if !n.alive {
			s.start(i)
		}
	}
}

func (s *clusterSim) local(n *simNode) time.Time {
	return t0.Add(time.Duration(float64(s.now) * n.rate))
}

// global returns the real time at which n's clock reads at.
func (s *clusterSim) global(n *simNode, at time.Time) time.Duration {
	return time.Duration(float64(at.Sub(t0)) / n.rate)
}

func (s *clusterSim) push(e *simEvent) {
	s.seq++
	e.seq = s.seq
	heap.Push(&s.q, e)
}

func (s *clusterSim) logf(format string, a ...any) {
	s.log = append(s.log, fmt.Sprintf("%8v ", s.now.Round(time.Millisecond))+fmt.Sprintf(format, a...))
	if len(s.log) > 400 {
		s.log = s.log[len(s.log)-300:]
	}
}

func (s *clusterSim) start(i int) {
	n := s.nodes[i]
	n.inc++
	peers := make([]string, len(s.nodes))
	for j, m := range s.nodes {
		peers[j] = m.addr
	}
	cfg := Config{Cluster: "demo", Self: n.addr, Peers: peers, FailureTimeout: simTimeout, HeartbeatInterval: simInterval,
		AwaitApplied: true, Incarnation: uint64(n.inc), RestartBudget: s.budget}
	n.alive, n.frozen, n.haveView, n.view, n.wants = true, false, false, View{}, nil
	n.core = newCore(&cfg, s.local(n))
	n.running, n.stopping, n.buffer = map[types.UID]time.Duration{}, nil, nil
	s.perform(i, n.core.start(s.local(n)))
	s.push(&simEvent{at: s.now + time.Duration(float64(simInterval)/n.rate), kind: "tick", node: i, inc: n.inc})
}

func (s *clusterSim) perform(i int, e effects) {
	n := s.nodes[i]
	for _, o := range e.send {
		for _, p := range o.to {
			j := slices.IndexFunc(s.nodes, func(m *simNode) bool { return m.addr == p })
			if s.cut[[2]int{i, j}] {
				continue
			}
			lat := time.Duration(1+s.rng.IntN(30)) * time.Millisecond
			s.push(&simEvent{at: s.now + lat, kind: "deliver", node: j, hb: o.hb})
		}
	}
	for _, p := range e.probe { // a probe answers when the peer's process runs
		j := slices.IndexFunc(s.nodes, func(m *simNode) bool { return m.addr == p })
		ok := s.nodes[j].alive && !s.cut[[2]int{i, j}]
		s.perform(i, n.core.probed(p, ok, s.local(n)))
	}
	if e.lease != nil && e.lease.After(n.lease) {
		n.lease = *e.lease
	}
	if v := e.publish; v != nil {
		if at, lapsed := n.view.LapsedBefore(*v); n.haveView && lapsed {
			s.reconcileAt(i, at) // a lapse: the sharder acts as at the lease's end first
		}
		n.view, n.haveView = v.Clone(), true
		s.reconcile(i)
		s.perform(i, n.core.applied(v.Version, s.local(n)))
		s.killTaken(i)
	}
}

// killTaken: node kills each container whose claim its view shows taken (once), and wants the
// rest.
func (s *clusterSim) killTaken(i int) {
	n := s.nodes[i]
	kept := n.wants[:0]
	killed := false
	for _, k := range n.wants {
		if _, ok := n.view.Taken[k]; ok {
			s.kills = append(s.kills, s.now)
			s.logf("%s kills %s under the budget", n.addr, k)
			killed = true
			continue
		}
		kept = append(kept, k)
	}
	n.wants = kept
	if killed {
		s.perform(i, n.core.setClaims(n.wants, s.local(n)))
	}
}

// want: node i's container fails its liveness probe (a new claim) or one that waits recovers.
func (s *clusterSim) want(i int) {
	n := s.nodes[i]
	if !n.alive || n.frozen {
		return
	}
	if len(n.wants) > 0 && s.rng.IntN(4) == 0 {
		k := s.rng.IntN(len(n.wants))
		s.logf("%s: %s recovers", n.addr, n.wants[k])
		n.wants = slices.Delete(n.wants, k, k+1)
	} else {
		s.keys++
		n.wants = append(n.wants, fmt.Sprintf("pod-%03d/app/%d", s.keys, n.inc))
		s.logf("%s wants to kill %s", n.addr, n.wants[len(n.wants)-1])
	}
	s.perform(i, n.core.setClaims(n.wants, s.local(n)))
}

func (s *clusterSim) reconcile(i int) { s.reconcileAt(i, s.local(s.nodes[i])) }

// reconcileAt runs the sharder's reconciliation of node i as of its local time now.
func (s *clusterSim) reconcileAt(i int, now time.Time) {
	n := s.nodes[i]
	if !n.haveView {
		return
	}
	margin := func(grace time.Duration) time.Duration { return ownership.Margin(simTimeout, grace) }
	plan := ownership.Reconcile(n.view.OwnershipInput(now, true, s.pods, n.running, margin))
	for _, eff := range plan.Effects {
		switch eff.Action {
		case ownership.Stop:
			delete(n.running, eff.UID)
			if c := n.ctrs[eff.UID]; c != nil && c.end == 0 {
				c.end = s.now + time.Duration(s.rng.Int64N(int64(eff.Grace)+1))
				s.logf("%s stops %s (%s), gone at %v", n.addr, eff.UID, eff.Reason, c.end)
				s.push(&simEvent{at: c.end, kind: "stopDone", node: i, uid: eff.UID, inc: n.inc})
			}
		case ownership.Start:
			n.running[eff.UID] = s.pods[eff.UID]
			switch c := n.ctrs[eff.UID]; {
			case c != nil:
				s.logf("%s keeps %s to start after its stop", n.addr, eff.UID) // the runner's stop-then-start rule
			case !n.lease.IsZero() && !s.local(n).Before(n.lease):
				s.logf("%s: the runtime refuses to start %s: the lease ran out", n.addr, eff.UID)
			default:
				n.ctrs[eff.UID] = &simContainer{}
				s.logf("%s starts %s", n.addr, eff.UID)
			}
		}
	}
	s.tellStopping(i)
	if !plan.Next.IsZero() && plan.Next.Year() < 9000 {
		// Never earlier than the next millisecond: a plan whose Next has passed (a broken core)
		// must fail a check, not spin the simulation at one instant.
		s.push(&simEvent{at: max(s.global(n, plan.Next), s.now) + time.Millisecond, kind: "recheck", node: i, inc: n.inc})
	}
}

// tellStopping gives the core the pods still stopping here when that set changed.
func (s *clusterSim) tellStopping(i int) {
	n := s.nodes[i]
	var now []string
	for uid, c := range n.ctrs {
		if c.end != 0 {
			now = append(now, string(uid))
		}
	}
	slices.Sort(now)
	if !slices.Equal(now, n.stopping) && n.alive {
		n.stopping = now
		s.perform(i, n.core.setStopping(now, s.local(n)))
	}
}

// fence: a shim whose lease ran out stops its container, whatever its node does.
func (s *clusterSim) fence() {
	for i, n := range s.nodes {
		if n.lease.IsZero() || s.local(n).Before(n.lease) {
			continue
		}
		for uid, c := range n.ctrs {
			if c.end == 0 {
				at := max(s.global(n, n.lease), 0)
				c.end = at + s.pods[uid]
				s.logf("%s's shim fences %s (lease ran out), gone at %v", n.addr, uid, c.end)
				s.push(&simEvent{at: c.end, kind: "stopDone", node: i, uid: uid, inc: -1})
			}
		}
	}
}

func (s *clusterSim) handle(e *simEvent) {
	n := s.nodes[e.node]
	switch e.kind {
	case "tick":
		if e.inc != n.inc || !n.alive {
			return
		}
		if n.frozen {
			s.push(&simEvent{at: s.now + simInterval, kind: "tick", node: e.node, inc: e.inc}) // runs on resume
			return
		}
		s.perform(e.node, n.core.tick(s.local(n)))
		s.push(&simEvent{at: s.now + time.Duration(float64(simInterval)/n.rate), kind: "tick", node: e.node, inc: n.inc})
	case "deliver":
		switch {
		case !n.alive:
		case n.frozen:
			n.buffer = append(n.buffer, e)
		default:
			s.perform(e.node, n.core.heard(e.hb, s.local(n), false))
		}
	case "recheck":
		if e.inc == n.inc && n.alive && !n.frozen {
			s.reconcile(e.node)
		}
	case "stopDone":
		if c := n.ctrs[e.uid]; c != nil && c.end != 0 && c.end <= s.now {
			delete(n.ctrs, e.uid)
			if _, again := n.running[e.uid]; again && n.alive && !n.frozen {
				if !n.lease.IsZero() && !s.local(n).Before(n.lease) {
					s.logf("%s: the runtime refuses to start %s again: the lease ran out", n.addr, e.uid)
				} else {
					n.ctrs[e.uid] = &simContainer{}
					s.logf("%s starts %s after its stop", n.addr, e.uid)
				}
			}
			if n.alive && !n.frozen {
				s.tellStopping(e.node)
			}
		}
	case "want":
		s.want(e.node)
	case "fault":
		e.do()
	}
}

// check: no pod has two live containers.
func (s *clusterSim) check() {
	for uid := range s.pods {
		var on []string
		for _, n := range s.nodes {
			if c := n.ctrs[uid]; c != nil && (c.end == 0 || c.end > s.now) {
				on = append(on, n.addr)
			}
		}
		if len(on) > 1 {
			s.t.Fatalf("pod %s has live containers on %v at %v\n%s", uid, on, s.now, strings.Join(s.log, "\n"))
		}
	}
	if s.budget.N > 0 {
		in := 0
		for _, k := range s.kills {
			if k > s.now-s.budget.Window {
				in++
			}
		}
		if in > s.budget.N {
			s.t.Fatalf("%d kills within %v at %v (budget %s)\n%s", in, s.budget.Window, s.now, s.budget, strings.Join(s.log, "\n"))
		}
	}
}

func (s *clusterSim) runUntil(end time.Duration) {
	for s.q.Len() > 0 && s.q[0].at <= end {
		e := heap.Pop(&s.q).(*simEvent)
		s.now = e.at
		s.handle(e)
		s.fence()
		s.check()
	}
	s.now = end
}

// faults schedules random faults between from and to, each healed by to.
func (s *clusterSim) faults(from, to time.Duration) {
	for range 1 + s.rng.IntN(3) {
		at := from + time.Duration(s.rng.Int64N(int64(to-from)/2))
		heal := at + time.Duration(s.rng.Int64N(int64(to-at)))
		i := s.rng.IntN(len(s.nodes))
		j := (i + 1 + s.rng.IntN(len(s.nodes)-1)) % len(s.nodes)
		switch s.rng.IntN(4) {
		case 0:
			s.push(&simEvent{at: at, kind: "fault", do: func() {
				if s.nodes[i].alive {
					s.logf("crash %s", s.nodes[i].addr)
					n := s.nodes[i]
					n.alive = false
					for _, c := range n.ctrs { // reattach 0: the shims kill at once
						if c.end == 0 || c.end > s.now+5*time.Millisecond {
							c.end = s.now + 5*time.Millisecond
						}
					}
					s.push(&simEvent{at: s.now + 5*time.Millisecond, kind: "fault", do: func() { clear(n.ctrs) }})
				}
			}})
			s.push(&simEvent{at: heal, kind: "fault", do: func() {
				if !s.nodes[i].alive {
					s.logf("restart %s", s.nodes[i].addr)
					s.start(i)
				}
			}})
		case 1:
			s.push(&simEvent{at: at, kind: "fault", do: func() {
				if n := s.nodes[i]; n.alive && !n.frozen {
					s.logf("freeze %s", n.addr)
					n.frozen = true
				}
			}})
			s.push(&simEvent{at: heal, kind: "fault", do: func() {
				if n := s.nodes[i]; n.alive && n.frozen {
					s.logf("resume %s with %d buffered heartbeats", n.addr, len(n.buffer))
					n.frozen = false
					buf := n.buffer
					n.buffer = nil
					for _, b := range buf {
						s.perform(i, n.core.heard(b.hb, s.local(n), false))
					}
					s.reconcile(i)
				}
			}})
		case 2, 3:
			oneWay := s.rng.IntN(2) == 0
			s.push(&simEvent{at: at, kind: "fault", do: func() {
				s.logf("cut %s → %s (one way: %v)", s.nodes[i].addr, s.nodes[j].addr, oneWay)
				s.cut[[2]int{i, j}] = true
				if !oneWay {
					s.cut[[2]int{j, i}] = true
				}
			}})
			s.push(&simEvent{at: heal, kind: "fault", do: func() {
				s.logf("heal %s ↔ %s", s.nodes[i].addr, s.nodes[j].addr)
				delete(s.cut, [2]int{i, j})
				delete(s.cut, [2]int{j, i})
			}})
		}
	}
}

// simSeeds is how many random runs a simulation makes: 60, 20 under the race detector or -short,
// PROBEACTOR_SIM_SEEDS=N for more.
func simSeeds(t *testing.T) int {
	seeds := 60
	if raceEnabled || testing.Short() {
		seeds = 20
	}
	if v := os.Getenv("PROBEACTOR_SIM_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("PROBEACTOR_SIM_SEEDS=%q: want a positive number", v)
		}
		seeds = n
	}
	return seeds
}

// Random runs (60; 20 under the race detector; PROBEACTOR_SIM_SEEDS=N for more — 1,000 passed) of
// three and five members with crashes, restarts, freezes, symmetric
// and one-way partitions, clock rates from 0.95 to 1.05 and grace periods from 0 to 3 s: no pod
// ever has two live containers (a container counts until its termination finished), and within
// a bound after the last fault healed every pod runs exactly once.
func TestSimulatedClusterNeverRunsAPodTwice(t *testing.T) {
	seeds := simSeeds(t)
	for seed := range uint64(seeds) {
		s := startClusterSim(t, seed, 21, 24, 4, restartbudget.Budget{})
		s.faults(3*time.Second, 40*time.Second)
		s.runUntil(40 * time.Second)
		s.restartCrashed() // everything healed by now
		s.runUntil(40*time.Second + 15*time.Second)
		for uid := range s.pods {
			var on []string
			for _, n := range s.nodes {
				if c := n.ctrs[uid]; c != nil && c.end == 0 {
					on = append(on, n.addr)
				}
			}
			if len(on) != 1 {
				t.Fatalf("seed %d: pod %s runs on %v 15 s after the faults healed\n%s", seed, uid, on, strings.Join(s.log, "\n"))
			}
		}
	}
}

// Random runs (60; 20 under the race detector; PROBEACTOR_SIM_SEEDS=N for more) of three and
// five members sharing a restart budget of 1 to 3 kills per 5 s, whose containers fail and
// recover at random, under the same faults as above: at every event, the kills the members made
// under the budget in the last 5 s (real time) are at most N, whatever the clocks' rates; and
// once the faults healed, kills asked for then are made as the budget allows (none stays
// waiting for an acknowledgement).
func TestSimulatedClusterKeepsTheSharedRestartBudget(t *testing.T) {
	seeds := simSeeds(t)
	kills := 0
	for seed := range uint64(seeds) {
		s := startClusterSim(t, seed, 24, 6, 3, restartbudget.Budget{N: 1 + int(seed%3), Window: 5 * time.Second})
		for i := range s.nodes {
			for at := time.Second; at < 40*time.Second; at += time.Duration(200+s.rng.IntN(1500)) * time.Millisecond {
				s.push(&simEvent{at: at, kind: "want", node: i})
			}
		}
		s.faults(3*time.Second, 40*time.Second)
		s.runUntil(40 * time.Second)
		s.restartCrashed()
		s.runUntil(50 * time.Second)
		// Everything healed and the windows of the faults passed: one new kill asked on each member
		// is made within the budget's pace, and none waits for an acknowledgement.
		before := len(s.kills)
		for i, n := range s.nodes {
			n.wants = nil
			s.perform(i, n.core.setClaims(nil, s.local(n)))
			s.want(i)
		}
		s.runUntil(50*time.Second + 8*time.Second)
		if made := len(s.kills) - before; made < min(s.budget.N, len(s.nodes)) {
			t.Fatalf("seed %d: %d of %d kills asked after the faults healed were made within 8 s (budget %s)\n%s", seed, made, len(s.nodes), s.budget, strings.Join(s.log, "\n"))
		}
		for _, n := range s.nodes {
			for k, why := range n.view.Waiting {
				if !strings.Contains(why, "budget is spent") {
					t.Fatalf("seed %d: %s's claim %s still waits 8 s after the faults healed: %s\n%s", seed, n.addr, k, why, strings.Join(s.log, "\n"))
				}
			}
		}
		kills += len(s.kills)
	}
	t.Logf("%d kills made under the budget in %d runs", kills, seeds)
}
