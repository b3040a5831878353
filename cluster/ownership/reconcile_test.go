package ownership

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

var a, b, c = loopback3[0], loopback3[1], loopback3[2]

// podsOf returns n pod UIDs owned by owner among members (searching pod-0, pod-1, …).
func podsOf(t *testing.T, n int, owner string, members []string) []types.UID {
	t.Helper()
	var out []types.UID
	for i := 0; len(out) < n; i++ {
		require.Less(t, i, 10000)
		if uid := fmt.Sprintf("pod-%d", i); Owner(uid, members) == owner {
			out = append(out, types.UID(uid))
		}
	}
	return out
}

func set(uids ...types.UID) map[types.UID]time.Duration {
	m := map[types.UID]time.Duration{}
	for _, u := range uids {
		m[u] = 30 * time.Second
	}
	return m
}

func starts(p Plan) []types.UID { return only(p, Start) }
func stops(p Plan) []types.UID  { return only(p, Stop) }
func only(p Plan, act Action) []types.UID {
	var out []types.UID
	for _, e := range p.Effects {
		if e.Action == act {
			out = append(out, e.UID)
		}
	}
	return out
}

func TestReconcile(t *testing.T) {
	all := []string{a, b, c}
	aOf3 := podsOf(t, 2, a, all) // a's pods when all three are live
	// b's pods when all three are live: one that goes to a when b is gone, one that goes to c.
	bToA := podsOf(t, 1, a, []string{a, c})
	for i := 0; Owner(string(bToA[0]), all) != b; i++ {
		bToA = []types.UID{podsOf(t, i+2, a, []string{a, c})[i+1]}
	}
	bToC := podsOf(t, 1, c, []string{a, c})
	for i := 0; Owner(string(bToC[0]), all) != b; i++ {
		bToC = []types.UID{podsOf(t, i+2, c, []string{a, c})[i+1]}
	}
	bOf3 := []types.UID{bToA[0], bToC[0]}
	desired := set(append(append([]types.UID{}, aOf3...), bOf3...)...)

	for _, tc := range []struct {
		name        string
		in          Input
		wantStarts  []types.UID
		wantStops   []types.UID
		wantWaiting map[types.UID]string
		wantOwned   int
	}{
		{name: "not ready: nothing starts, even what this member would own alone",
			in: Input{Self: a, Ready: false, Members: []string{a}, Desired: desired}},
		{name: "not ready: a pod leaving the pod set is still stopped",
			in:        Input{Self: a, Ready: false, Desired: set(), Running: set(aOf3[0])},
			wantStops: []types.UID{aOf3[0]}},
		{name: "alone: every pod",
			in:         Input{Self: a, Ready: true, Members: []string{a}, Desired: desired},
			wantStarts: sorted(append(append([]types.UID{}, aOf3...), bOf3...)), wantOwned: 4},
		{name: "three agreeing members: only this member's share",
			in:         Input{Self: a, Ready: true, Members: all, Reported: map[string][]string{b: all, c: all}, Desired: desired},
			wantStarts: sorted(aOf3), wantOwned: 2},
		{name: "already running: nothing to do",
			in:        Input{Self: a, Ready: true, Members: all, Reported: map[string][]string{b: all, c: all}, Desired: desired, Running: set(aOf3...)},
			wantOwned: 2},
		{name: "a pod removed from the set stops with its grace period",
			in:        Input{Self: a, Ready: true, Members: all, Desired: set(aOf3[1]), Running: set(aOf3...)},
			wantStops: []types.UID{aOf3[0]}, wantOwned: 1},
		{name: "failover: b died; its pods that a now owns start at once (c's stale view still has b, which claims nothing for c)",
			in:         Input{Self: a, Ready: true, Members: []string{a, c}, Reported: map[string][]string{c: all}, Desired: desired, Running: set(aOf3...)},
			wantStarts: bToA, wantOwned: 3},
		{name: "claims of a member outside the view (the dead b) are ignored",
			in:         Input{Self: a, Ready: true, Members: []string{a, c}, Reported: map[string][]string{b: {b}, c: {a, c}}, Desired: desired, Running: set(aOf3...)},
			wantStarts: bToA, wantOwned: 3},
		{name: "rejoin, loser side: a sees b again and stops what b owns",
			in:        Input{Self: a, Ready: true, Members: all, Reported: map[string][]string{c: {a, c}, b: all}, Desired: desired, Running: set(append(append([]types.UID{}, aOf3...), bToA...)...)},
			wantStops: bToA, wantOwned: 2},
		{name: "rejoin, gainer side: b waits while a has not seen it",
			in:          Input{Self: b, Ready: true, Members: all, Reported: map[string][]string{a: {a, c}, c: all}, Desired: desired},
			wantWaiting: map[types.UID]string{bToA[0]: a, bToC[0]: a}, wantOwned: 2},
		{name: "a running pod is kept while this member owns it, whatever a peer reports",
			in:        Input{Self: b, Ready: true, Members: all, Reported: map[string][]string{a: {a, c}}, Desired: desired, Running: set(bOf3...)},
			wantOwned: 2},
		{name: "not in its own view: stop everything",
			in:        Input{Self: a, Ready: true, Members: []string{b, c}, Desired: desired, Running: set(aOf3...)},
			wantStops: sorted(aOf3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Reconcile(tc.in)
			assert.Equal(t, tc.wantStarts, starts(p), "starts")
			assert.Equal(t, tc.wantStops, stops(p), "stops")
			if tc.wantWaiting == nil {
				tc.wantWaiting = map[types.UID]string{}
			}
			assert.Equal(t, tc.wantWaiting, p.Waiting, "waiting")
			assert.Equal(t, tc.wantOwned, p.Owned, "owned")
			for _, e := range p.Effects {
				if e.Action == Stop {
					assert.Equal(t, tc.in.Running[e.UID], e.Grace, "a stop carries the pod's grace period")
					assert.NotEmpty(t, e.Reason)
				}
			}
		})
	}
}

func TestReconcileOrdersStopsBeforeStartsByUID(t *testing.T) {
	members := []string{a, b}
	mine, theirs := podsOf(t, 3, a, members), podsOf(t, 3, b, members)
	p := Reconcile(Input{Self: a, Ready: true, Members: members, Reported: map[string][]string{b: members}, Desired: set(mine...), Running: set(theirs...)})
	require.Len(t, p.Effects, 6)
	assert.Equal(t, sorted(theirs), stops(p))
	assert.Equal(t, sorted(mine), starts(p))
	assert.Equal(t, Stop, p.Effects[0].Action)
	assert.Equal(t, "removed from the pod set", p.Effects[0].Reason)
	assert.Equal(t, "start", Start.String())
	assert.Equal(t, "stop", Stop.String())
	assert.Equal(t, "unknown", Action(9).String())
}

func sorted(u []types.UID) []types.UID {
	out := slices.Clone(u)
	slices.Sort(out)
	return out
}
