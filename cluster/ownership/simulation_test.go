package ownership

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// simMember is one member in a deterministic simulation of the membership and the sharder: views
// change one observation at a time, reports (heartbeats) arrive one at a time, and a member
// reconciles whenever its inputs change, before it reports its view (the sharder receives a view
// before the heartbeat that carries it leaves).
type simMember struct {
	addr    string
	alive   bool
	ready   bool
	view    []string
	claims  map[string][]string
	running map[types.UID]bool
}

type sim struct {
	t       *testing.T
	rng     *rand.Rand
	members []*simMember
	desired map[types.UID]bool
	log     []string
}

func (s *sim) alive() []string {
	var out []string
	for _, m := range s.members {
		if m.alive {
			out = append(out, m.addr)
		}
	}
	return out
}

func (s *sim) reconcile(m *simMember) {
	if !m.alive {
		return
	}
	desired := map[types.UID]time.Duration{}
	for u := range s.desired {
		desired[u] = 0
	}
	running := map[types.UID]time.Duration{}
	for u := range m.running {
		running[u] = 0
	}
	p := Reconcile(Input{Self: m.addr, Ready: m.ready, Members: m.view, Reported: m.claims, Desired: desired, Running: running})
	for _, e := range p.Effects {
		if e.Action == Start {
			m.running[e.UID] = true
		} else {
			delete(m.running, e.UID)
		}
	}
}

// check: no pod runs on two live members, ever.
func (s *sim) check() {
	for u := range s.desired {
		var on []string
		for _, m := range s.members {
			if m.alive && m.running[u] {
				on = append(on, m.addr)
			}
		}
		if len(on) > 1 {
			s.t.Fatalf("pod %s runs on %v\nevents:\n%s", u, on, strings.Join(s.log, "\n"))
		}
	}
}

// step applies one random event that the real membership can produce without false suspicion:
// views only lose dead members and only gain live ones; a (re)started member becomes ready with
// every live member in its view and their reported views as claims (its first round heard them
// all).
func (s *sim) step() {
	x := s.members[s.rng.IntN(len(s.members))]
	z := s.members[s.rng.IntN(len(s.members))]
	switch r := s.rng.IntN(100); {
	case r < 5 && x.alive && len(s.alive()) > 1:
		s.log = append(s.log, "kill "+x.addr)
		*x = simMember{addr: x.addr}
	case r < 10 && !x.alive:
		s.log = append(s.log, "restart "+x.addr)
		*x = simMember{addr: x.addr, alive: true, view: []string{x.addr}, claims: map[string][]string{}, running: map[types.UID]bool{}}
	case r < 20 && x.alive && !x.ready:
		s.log = append(s.log, "ready "+x.addr)
		s.ready(x)
	case r < 60 && x.alive && x.ready && x != z:
		// x observes z: a death is detected, a live member's heartbeat is heard.
		has := slices.Contains(x.view, z.addr)
		switch {
		case has && !z.alive:
			s.log = append(s.log, x.addr+" detects the death of "+z.addr)
			x.view = slices.DeleteFunc(slices.Clone(x.view), func(a string) bool { return a == z.addr })
			delete(x.claims, z.addr)
		case !has && z.alive:
			s.log = append(s.log, x.addr+" hears "+z.addr)
			x.view = append(slices.Clone(x.view), z.addr)
			slices.Sort(x.view)
			x.claims[z.addr] = z.reportedView()
		default:
			return
		}
		s.reconcile(x)
	case x.alive && z.alive && x != z && slices.Contains(z.view, x.addr):
		// x's heartbeat reaches z: z learns x's current view (x reconciled on it already).
		s.log = append(s.log, fmt.Sprintf("%s reports %v to %s", x.addr, x.reportedView(), z.addr))
		z.claims[x.addr] = x.reportedView()
		s.reconcile(z)
	}
	s.check()
}

// ready completes x's first round: it has heard every live member, and with each heartbeat the
// view that member reports.
func (s *sim) ready(x *simMember) {
	x.ready, x.view = true, s.alive()
	for _, z := range s.members {
		if z.alive && z != x {
			x.claims[z.addr] = z.reportedView()
		}
	}
	s.reconcile(x)
}

func (m *simMember) reportedView() []string {
	if !m.ready {
		return nil
	}
	return slices.Clone(m.view)
}

// settle lets every observation and report happen until nothing changes.
func (s *sim) settle() {
	for range 4 {
		for _, x := range s.members {
			if x.alive && !x.ready {
				s.ready(x)
			}
		}
		for _, x := range s.members {
			for _, z := range s.members {
				if x.alive && z.alive && x != z {
					if !slices.Contains(x.view, z.addr) {
						x.view = append(x.view, z.addr)
						slices.Sort(x.view)
					}
					x.claims[z.addr] = z.reportedView()
				}
			}
			if x.alive {
				x.view = slices.DeleteFunc(x.view, func(a string) bool { return !slices.Contains(s.alive(), a) })
				s.reconcile(x)
			}
			s.check()
		}
	}
}

// Thousands of random interleavings of deaths, restarts, detections and heartbeats: no pod ever
// runs on two live members, and once everything is observed every pod runs exactly once.
func TestSimulatedClusterNeverRunsAPodTwiceAndSettlesToExactlyOnce(t *testing.T) {
	for seed := range uint64(120) {
		s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 7)), desired: map[types.UID]bool{}}
		for i := range 40 {
			s.desired[types.UID(fmt.Sprintf("pod-%d", i))] = true
		}
		for i := range 4 {
			s.members = append(s.members, &simMember{addr: fmt.Sprintf("127.0.0.1:%d", 7101+i), alive: true, view: []string{fmt.Sprintf("127.0.0.1:%d", 7101+i)}, claims: map[string][]string{}, running: map[types.UID]bool{}})
		}
		for range 300 {
			s.step()
		}
		s.settle()
		for u := range s.desired {
			n := 0
			for _, m := range s.members {
				if m.alive && m.running[u] {
					n++
					require.Equal(t, Owner(string(u), s.alive()), m.addr, "seed %d: pod %s on its owner", seed, u)
				}
			}
			require.Equal(t, 1, n, "seed %d: pod %s runs exactly once after settling\n%s", seed, u, strings.Join(s.log, "\n"))
		}
	}
}
