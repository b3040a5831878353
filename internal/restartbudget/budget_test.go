package restartbudget

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const s = time.Second

func fail(pod, id string) messages.ResultChanged {
	return messages.ResultChanged{PodUID: types.UID(pod), Container: "c", ContainerID: messages.ContainerID(id), Type: messages.Liveness, Result: messages.Failure}
}

func pods(ws []Waiting) []string {
	out := []string{}
	for _, w := range ws {
		out = append(out, string(w.Change.PodUID))
	}
	return out
}

func TestParse(t *testing.T) {
	for in, want := range map[string]Budget{"3/10m": {3, 10 * time.Minute}, " 1/30s ": {1, 30 * s}, "20/1h": {20, time.Hour}} {
		b, err := Parse(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, b, in)
	}
	for in, msg := range map[string]string{
		"3":      "want N/DURATION",
		"x/10m":  `N "x": want a whole number`,
		"3/10":   `DURATION "10": want a Go duration with a unit`,
		"3/soon": `DURATION "soon"`,
		"0/10m":  "0 kills: must be at least 1",
		"-2/10m": "-2 kills: must be at least 1",
		"3/0s":   "window 0s: must be a positive duration",
		"3/-1m":  "window -1m0s: must be a positive duration",
	} {
		_, err := Parse(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), msg, in)
	}
	assert.Equal(t, "3/10m0s", Budget{3, 10 * time.Minute}.String())
}

// Every step is a row: a call at a time and what it must return. Budget 2 per 60 s.
func TestDue(t *testing.T) {
	g := New(Budget{N: 2, Window: 60 * s})
	for _, p := range []string{"a", "b", "c", "d"} {
		g.Ask(fail(p, p+"1"), at(0))
	}
	d := g.Due(at(0))
	assert.Equal(t, []string{"a", "b"}, pods(d.Kill), "two kills fit the budget")
	assert.False(t, d.Kill[0].Announced || d.Kill[1].Announced)
	assert.Equal(t, []string{"c", "d"}, pods(d.Defer), "the others wait, announced once")
	assert.Equal(t, at(60*s), d.Next, "when the first kill leaves the window")

	d = g.Due(at(59 * s))
	assert.Empty(t, d.Kill)
	assert.Empty(t, d.Defer, "announced already")
	assert.Equal(t, at(60*s), d.Next)

	// At 60 s both kills of t=0 leave the window ((0, 60] no longer holds 0): c and d are taken.
	d = g.Due(at(60 * s))
	assert.Equal(t, []string{"c", "d"}, pods(d.Kill))
	assert.True(t, d.Kill[0].Announced && d.Kill[1].Announced, "they had waited")
	assert.True(t, d.Next.IsZero(), "nothing waits")
	assert.Equal(t, 0, g.Len())

	// A sliding window: kills at 60 and 60; another at 100 waits until 120.
	g.Ask(fail("e", "e1"), at(100*s))
	d = g.Due(at(100 * s))
	assert.Empty(t, d.Kill)
	assert.Equal(t, []string{"e"}, pods(d.Defer))
	assert.Equal(t, at(120*s), d.Next)
	assert.Equal(t, at(120*s), g.Next(at(100*s)))
	assert.Equal(t, at(121*s), g.Next(at(121*s)), "room at once")
}

func TestAskTwiceForOneContainerWaitsOnce(t *testing.T) {
	g := New(Budget{N: 1, Window: time.Minute})
	g.Ask(fail("a", "a1"), at(0))
	g.Due(at(0))
	startup := fail("b", "b1")
	startup.Type = messages.Startup
	g.Ask(startup, at(0))
	g.Ask(fail("b", "b1"), at(s)) // its liveness probe too: the same container ID
	assert.Equal(t, 1, g.Len())
	d := g.Due(at(s))
	assert.Len(t, d.Defer, 1)
	assert.Equal(t, messages.Startup, d.Defer[0].Change.Type, "the first Failure is the one waiting")
}

func TestSettle(t *testing.T) {
	g := New(Budget{N: 1, Window: time.Minute})
	g.Ask(fail("x", "x1"), at(0))
	g.Due(at(0)) // x is killed; the others wait
	g.Ask(fail("a", "a1"), at(0))
	g.Ask(fail("b", "b1"), at(0))
	g.Ask(fail("c", "c1"), at(0))
	g.Due(at(0))

	recoveredA := fail("a", "a1")
	recoveredA.Result = messages.Success
	w, recovered, ok := g.Settle(recoveredA)
	require.True(t, ok)
	assert.True(t, recovered)
	assert.Equal(t, types.UID("a"), w.Change.PodUID)

	// b's startup probe passing says nothing about its liveness failure.
	other := fail("b", "b1")
	other.Type, other.Result = messages.Startup, messages.Success
	_, _, ok = g.Settle(other)
	assert.False(t, ok)
	// Another Failure of b1 neither.
	_, _, ok = g.Settle(fail("b", "b1"))
	assert.False(t, ok)

	// c was replaced (crashed and restarted: its workers publish for c2).
	fresh := fail("c", "c2")
	fresh.Result = messages.Success
	w, recovered, ok = g.Settle(fresh)
	require.True(t, ok)
	assert.False(t, recovered)
	assert.Equal(t, messages.ContainerID("c1"), w.Change.ContainerID)

	assert.Equal(t, 1, g.Len())
	d := g.Due(at(time.Minute))
	assert.Equal(t, []string{"b"}, pods(d.Kill), "only b still waited")
}

func TestForget(t *testing.T) {
	g := New(Budget{N: 1, Window: time.Minute})
	g.Ask(fail("x", "x1"), at(0))
	g.Ask(fail("a", "a1"), at(0))
	g.Ask(fail("b", "b1"), at(0))
	g.Due(at(0))
	assert.Equal(t, []string{"a"}, pods(g.Forget("a")))
	assert.Empty(t, g.Forget("a"))
	assert.Equal(t, []string{"b"}, pods(g.Due(at(time.Minute)).Kill))
}

// Random asks, recoveries and checks at increasing times never take more than N kills in any
// window, and take waiting kills in the order asked.
func TestNeverMoreThanNPerWindow(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			b := Budget{N: 1 + r.IntN(4), Window: time.Duration(1+r.IntN(60)) * s}
			g := New(b)
			now := t0
			var kills []time.Time
			var asked, taken []string
			for i := range 400 {
				now = now.Add(time.Duration(r.IntN(5000)) * time.Millisecond)
				switch r.IntN(3) {
				case 0:
					p := fmt.Sprintf("p%d", i)
					g.Ask(fail(p, p), now)
					asked = append(asked, p)
				case 1:
					if g.Len() > 0 {
						w := g.waiting[r.IntN(g.Len())].Change
						w.Result = messages.Success
						g.Settle(w)
						asked = remove(asked, string(w.PodUID))
					}
				default:
				}
				d := g.Due(now)
				for _, k := range d.Kill {
					kills = append(kills, now)
					taken = append(taken, string(k.Change.PodUID))
				}
				if g.Len() > 0 {
					require.True(t, d.Next.After(now), "a waiting kill has a future slot")
				}
			}
			for i := range kills {
				n := 0
				for _, k := range kills {
					if k.After(kills[i].Add(-b.Window)) && !k.After(kills[i]) {
						n++
					}
				}
				require.LessOrEqual(t, n, b.N, "kills in the window ending at %s", kills[i])
			}
			require.Equal(t, asked[:len(taken)], taken, "FIFO")
		})
	}
}

func remove(list []string, x string) []string {
	for i, v := range list {
		if v == x {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// A shared budget decides elsewhere: the gate kills exactly the waiting kills whose claims are
// taken there, in any order, announces each other one once, and asks for the rest oldest first.
func TestDueShared(t *testing.T) {
	g := New(Budget{N: 1, Window: 60 * s})
	for _, p := range []string{"a", "b", "c"} {
		g.Ask(fail(p, p+"1"), at(0))
	}
	assert.Equal(t, []string{"a/c/a1", "b/c/b1", "c/c/c1"}, g.Claims())
	taken := map[string]bool{}
	d := g.DueShared(func(c string) bool { return taken[c] })
	assert.Empty(t, d.Kill)
	assert.Equal(t, []string{"a", "b", "c"}, pods(d.Defer))
	assert.True(t, d.Next.IsZero())

	taken["b/c/b1"] = true // the cluster's order put b first
	d = g.DueShared(func(c string) bool { return taken[c] })
	assert.Equal(t, []string{"b"}, pods(d.Kill))
	assert.True(t, d.Kill[0].Announced, "it had waited and was said to")
	assert.Empty(t, d.Defer, "a and c were announced already")
	assert.Equal(t, []string{"a/c/a1", "c/c/c1"}, g.Claims())

	_, recovered, ok := g.Settle(messages.ResultChanged{PodUID: "a", Container: "c", ContainerID: "a1", Type: messages.Liveness, Result: messages.Success})
	require.True(t, ok)
	assert.True(t, recovered)
	assert.Equal(t, []string{"c/c/c1"}, g.Claims(), "a recovery withdraws the claim")
	g.Ask(fail("d", "d1"), at(s))
	d = g.DueShared(func(string) bool { return false })
	assert.Equal(t, []string{"d"}, pods(d.Defer))
	assert.Equal(t, []string{"c/c/c1", "d/c/d1"}, g.Claims())
}
