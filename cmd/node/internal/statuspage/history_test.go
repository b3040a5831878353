package statuspage

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

func at(i int, o Outcome) Attempt {
	return Attempt{At: t0.Add(time.Duration(i) * time.Second), Outcome: o, Message: o.String()}
}

func TestRingKeepsTheLastDepthAttemptsOldestFirst(t *testing.T) {
	for _, tc := range []struct {
		name  string
		added int
	}{
		{"none", 0},
		{"one", 1},
		{"just under", Depth - 1},
		{"exactly full", Depth},
		{"wrapped once", Depth + 1},
		{"wrapped many times", 5*Depth + 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r ring
			for i := range tc.added {
				r.add(at(i, Success))
			}
			p := r.probe()
			want := min(tc.added, Depth)
			require.Len(t, p.Recent, want)
			for i, a := range p.Recent {
				assert.Equal(t, t0.Add(time.Duration(tc.added-want+i)*time.Second), a.At, "attempt %d", i)
			}
			if tc.added > 0 {
				assert.Equal(t, t0.Add(time.Duration(tc.added-1)*time.Second), p.Last().At)
			} else {
				assert.Zero(t, p.Last())
			}
		})
	}
}

func TestRingKeepsTheLastFailureAfterItLeavesTheStrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  []Outcome
		want Outcome // of LastFailure (0: none)
	}{
		{"only successes", []Outcome{Success, Success}, 0},
		{"a warning is a success", []Outcome{Warning}, 0},
		{"failure", []Outcome{Failure, Success}, Failure},
		{"error", []Outcome{Success, Error}, Error},
		{"unknown", []Outcome{Unknown, Success}, Unknown},
		{"the latest wins", []Outcome{Failure, Error, Success}, Error},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r ring
			for i, o := range tc.seq {
				r.add(at(i, o))
			}
			for i := range 2 * Depth { // push every failure out of the strip
				r.add(at(len(tc.seq)+i, Success))
			}
			p := r.probe()
			assert.Equal(t, tc.want, p.LastFailure.Outcome)
			for _, a := range p.Recent {
				assert.Equal(t, Success, a.Outcome)
			}
		})
	}
}

func ids(pairs ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

func TestHistoryAttributesOnlyObservedContainerIDs(t *testing.T) {
	h := NewHistory()
	h.Observe("p1", ids("proc://a1", "app", "proc://s1", "side", "", "waiting"))
	assert.True(t, h.Record("proc://a1", messages.Liveness, at(0, Failure)))
	assert.True(t, h.Record("proc://s1", messages.Startup, at(1, Success)))
	assert.False(t, h.Record("proc://zz", messages.Liveness, at(2, Success)), "an unknown container ID")
	assert.False(t, h.Record("", messages.Liveness, at(3, Success)), "a container that is not running has no ID")

	p, ok := h.Probe(Key{"p1", "app", messages.Liveness})
	require.True(t, ok)
	assert.Equal(t, Failure, p.Last().Outcome)
	_, ok = h.Probe(Key{"p1", "app", messages.Readiness})
	assert.False(t, ok, "no attempt of that probe")
	assert.Equal(t, Stats{Pods: 1, ContainerIDs: 2, Probes: 2, Unattributed: 2}, h.Stats())

	// The container restarts: a new ID; the old one is dropped, the probe's history goes on.
	h.Observe("p1", ids("proc://a2", "app", "proc://s1", "side"))
	assert.False(t, h.Record("proc://a1", messages.Liveness, at(4, Success)), "an attempt on the killed container")
	assert.True(t, h.Record("proc://a2", messages.Liveness, at(5, Success)))
	p, _ = h.Probe(Key{"p1", "app", messages.Liveness})
	require.Len(t, p.Recent, 2, "history is per container name, across restarts")
	assert.Equal(t, []Outcome{Failure, Success}, []Outcome{p.Recent[0].Outcome, p.Recent[1].Outcome})
	assert.Equal(t, 2, h.Stats().ContainerIDs)
}

func TestHistoryForgetAndRetainRemoveEverythingOfAPod(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(h *History)
		left   []types.UID
	}{
		{"forget one", func(h *History) { h.Forget("p2") }, []types.UID{"p1", "p3"}},
		{"forget an unknown pod", func(h *History) { h.Forget("nope") }, []types.UID{"p1", "p2", "p3"}},
		{"retain some", func(h *History) { h.Retain(map[types.UID]struct{}{"p1": {}, "p9": {}}) }, []types.UID{"p1"}},
		{"retain none", func(h *History) { h.Retain(nil) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistory()
			for _, pod := range []types.UID{"p1", "p2", "p3"} {
				h.Observe(pod, ids("id-"+string(pod), "app"))
				for _, typ := range messages.ProbeTypes {
					require.True(t, h.Record("id-"+string(pod), typ, at(0, Success)))
				}
			}
			tc.remove(h)
			assert.Equal(t, Stats{Pods: len(tc.left), ContainerIDs: len(tc.left), Probes: 3 * len(tc.left)}, h.Stats())
			for _, pod := range []types.UID{"p1", "p2", "p3"} {
				_, kept := h.Probe(Key{pod, "app", messages.Liveness})
				assert.Equal(t, contains(tc.left, pod), kept, "pod %s", pod)
				// A late attempt of a removed pod creates nothing again.
				assert.Equal(t, contains(tc.left, pod), h.Record("id-"+string(pod), messages.Readiness, at(1, Failure)))
			}
			assert.Equal(t, 3*len(tc.left), h.Stats().Probes)
		})
	}
}

func contains(list []types.UID, u types.UID) bool {
	for _, x := range list {
		if x == u {
			return true
		}
	}
	return false
}

// TestHistoryStaysBounded: pods come and go with restarting containers and long outputs; what is
// kept depends only on the pods present, never on how many attempts or pods went before.
func TestHistoryStaysBounded(t *testing.T) {
	h := NewHistory()
	long := strings.Repeat("é", 10<<10) // a 20 KiB body of two-byte runes
	for round := range 200 {
		pod := types.UID("pod-" + string(rune('a'+round%26)) + "-" + time.Duration(round).String())
		for restart := range 3 {
			id := string(pod) + "/" + string(rune('0'+restart))
			h.Observe(pod, ids(id, "app"))
			for i := range 3 * Depth {
				require.True(t, h.Record(id, messages.ProbeTypes[i%3], Attempt{At: t0, Outcome: Failure, Message: long}))
			}
		}
		if round >= 5 { // five pods live at a time
			h.Forget(types.UID("pod-" + string(rune('a'+(round-5)%26)) + "-" + time.Duration(round-5).String()))
		}
		st := h.Stats()
		assert.LessOrEqual(t, st.Pods, 6)
		assert.LessOrEqual(t, st.ContainerIDs, 6)
		assert.LessOrEqual(t, st.Probes, 18)
	}
	total := 0
	for k, r := range h.rings {
		for _, a := range r.probe().Recent {
			require.LessOrEqual(t, len(a.Message), MaxMessage, "%v", k)
			require.True(t, utf8.ValidString(a.Message), "cut on a rune boundary")
			total += len(a.Message)
		}
	}
	assert.LessOrEqual(t, total, 18*Depth*MaxMessage)
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"short", "short"},
		{strings.Repeat("a", 10), strings.Repeat("a", 10)},
		{strings.Repeat("a", 11), strings.Repeat("a", 7) + "…"},
		{"aaaaaaaéé", "aaaaaaa…"}, // é is two bytes: no half rune
	} {
		got := truncate(tc.in, 10)
		assert.Equal(t, tc.want, got, "%q", tc.in)
		assert.LessOrEqual(t, len(got), 10)
	}
}

// BenchmarkRecordAmong1000Probes is what History costs per attempt at node's benchmark scale
// (make bench-node: 500 pods, a readiness and a liveness probe each), the pods taken in turn.
func BenchmarkRecordAmong1000Probes(b *testing.B) {
	h := NewHistory()
	const pods = 500
	cids := make([]string, pods)
	for i := range pods {
		cids[i] = fmt.Sprintf("proc://pod-%03d-app-1", i)
		h.Observe(types.UID(fmt.Sprintf("uid-%03d", i)), ids(cids[i], "app"))
	}
	a := Attempt{At: t0, Outcome: Success}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Record(cids[i%pods], messages.ProbeTypes[1+(i/pods)%2], a)
	}
}
