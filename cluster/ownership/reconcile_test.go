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

	now := time.Unix(1000, 0)
	later := now.Add(time.Hour)
	// q completes an input of the three-member cluster a, b, c: a lease and a current report from
	// every live peer, unless the case sets them.
	q := func(in Input) Input {
		in.Now = now
		if in.All == nil {
			in.All = all
		}
		if in.LeaseUntil.IsZero() {
			in.LeaseUntil = later
		}
		if in.Current == nil {
			in.Current = map[string]time.Time{}
			for _, m := range in.Members {
				in.Current[m] = later
			}
		}
		in.Margin = time.Second
		return in
	}
	goneLongAgo := map[string]time.Time{b: now.Add(-time.Minute)}
	for _, tc := range []struct {
		name        string
		in          Input
		wantStarts  []types.UID
		wantStops   []types.UID
		wantWaiting map[types.UID]string
		wantOwned   int
		wantNext    time.Time
		lost        bool
	}{
		{name: "not ready: nothing starts, even what this member would own alone",
			in: q(Input{Self: a, Ready: false, Members: []string{a}, Desired: desired}), lost: true},
		{name: "not ready: a pod leaving the pod set is still stopped",
			in:        q(Input{Self: a, Ready: false, Desired: set(), Running: set(aOf3[0])}),
			wantStops: []types.UID{aOf3[0]}, lost: true},
		{name: "a one-member cluster: every pod",
			in:         q(Input{Self: a, Ready: true, All: []string{a}, Members: []string{a}, Desired: desired}),
			wantStarts: sorted(append(append([]types.UID{}, aOf3...), bOf3...)), wantOwned: 4, wantNext: later},
		{name: "three agreeing members: only this member's share",
			in:         q(Input{Self: a, Ready: true, Members: all, Reported: map[string][]string{b: all, c: all}, Desired: desired}),
			wantStarts: sorted(aOf3), wantOwned: 2, wantNext: later},
		{name: "already running: nothing to do",
			in:        q(Input{Self: a, Ready: true, Members: all, Reported: map[string][]string{b: all, c: all}, Desired: desired, Running: set(aOf3...)}),
			wantOwned: 2, wantNext: later},
		{name: "a pod removed from the set stops with its grace period",
			in:        q(Input{Self: a, Ready: true, Members: all, Desired: set(aOf3[1]), Running: set(aOf3...)}),
			wantStops: []types.UID{aOf3[0]}, wantOwned: 1, wantNext: later},
		{name: "failover: b left out by a quorum long enough ago: its pods that a now owns start",
			in: q(Input{Self: a, Ready: true, Members: []string{a, c}, Reported: map[string][]string{c: {a, c}}, Gone: goneLongAgo,
				Desired: desired, Running: set(aOf3...)}),
			wantStarts: bToA, wantOwned: 3, wantNext: later},
		{name: "failover: b may still be stopping its pods (grace 30 s + margin 1 s from when a quorum left it out)",
			in: q(Input{Self: a, Ready: true, Members: []string{a, c}, Reported: map[string][]string{c: {a, c}}, Gone: map[string]time.Time{b: now.Add(-time.Second)},
				Desired: desired, Running: set(aOf3...)}),
			wantWaiting: map[types.UID]string{bToA[0]: b + " may still run it until " + now.Add(30*time.Second).Format(time.RFC3339Nano)},
			wantOwned:   3, wantNext: now.Add(30 * time.Second)},
		{name: "failover: b not yet left out by a quorum (it may hold a lease)",
			in: q(Input{Self: a, Ready: true, Members: []string{a, c}, Reported: map[string][]string{c: {a, c}},
				Desired: desired, Running: set(aOf3...)}),
			wantWaiting: map[types.UID]string{bToA[0]: b + " is not yet left out by a quorum"}, wantOwned: 3, wantNext: later},
		{name: "failover: b left (it stopped its pods before it said so): no wait",
			in: q(Input{Self: a, Ready: true, Members: []string{a, c}, Reported: map[string][]string{c: {a, c}}, Left: map[string]bool{b: true},
				Desired: desired, Running: set(aOf3...)}),
			wantStarts: bToA, wantOwned: 3, wantNext: later},
		{name: "c still reports b: nothing starts until the views agree",
			in: q(Input{Self: a, Ready: true, Members: []string{a, c}, Reported: map[string][]string{c: all}, Gone: goneLongAgo,
				Desired: desired, Running: set(aOf3...)}),
			wantWaiting: map[types.UID]string{bToA[0]: c + " reports another view"}, wantOwned: 3, wantNext: later},
		{name: "c's report is not current (read after a freeze): nothing starts",
			in: q(Input{Self: a, Ready: true, Members: []string{a, c}, Reported: map[string][]string{c: {a, c}}, Gone: goneLongAgo,
				Current: map[string]time.Time{c: now}, Desired: desired, Running: set(aOf3...)}),
			wantWaiting: map[types.UID]string{bToA[0]: "waiting for a current report from " + c}, wantOwned: 3, wantNext: later},
		{name: "rejoin, loser side: a sees b again and stops what b owns",
			in: q(Input{Self: a, Ready: true, Members: all, Reported: map[string][]string{c: {a, c}, b: all}, Desired: desired,
				Running: set(append(append([]types.UID{}, aOf3...), bToA...)...)}),
			wantStops: bToA, wantOwned: 2, wantNext: later},
		{name: "rejoin, gainer side: b waits while a has not seen it",
			in:          q(Input{Self: b, Ready: true, Members: all, Reported: map[string][]string{a: {a, c}, c: all}, Desired: desired}),
			wantWaiting: map[types.UID]string{bToA[0]: a + " reports another view", bToC[0]: a + " reports another view"}, wantOwned: 2, wantNext: later},
		{name: "rejoin, gainer side: b waits while a still stops the pod a handed back",
			in: q(Input{Self: b, Ready: true, Members: all, Reported: map[string][]string{a: all, c: all}, Stopping: map[string][]types.UID{a: bToA},
				Desired: desired}),
			wantStarts: bToC, wantWaiting: map[types.UID]string{bToA[0]: a + " still stops it"}, wantOwned: 2, wantNext: later},
		{name: "a running pod is kept while this member owns it and holds its lease, whatever a peer reports",
			in:        q(Input{Self: b, Ready: true, Members: all, Reported: map[string][]string{a: {a, c}}, Desired: desired, Running: set(bOf3...)}),
			wantOwned: 2, wantNext: later},
		{name: "the lease ran out: stop everything, start nothing",
			in: q(Input{Self: a, Ready: true, Members: all, Reported: map[string][]string{b: all, c: all}, LeaseUntil: now,
				Current: map[string]time.Time{b: later}, Desired: desired, Running: set(aOf3[0])}),
			wantStops: []types.UID{aOf3[0]}, lost: true},
		{name: "not in its own view: stop everything",
			in:        q(Input{Self: a, Ready: true, Members: []string{b, c}, Desired: desired, Running: set(aOf3...)}),
			wantStops: sorted(aOf3), lost: true},
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
			assert.Equal(t, !tc.lost, p.Quorate, "quorate")
			assert.Equal(t, tc.lost, p.Reason != "", "a reason exactly when not quorate: %q", p.Reason)
			assert.Equal(t, tc.wantNext, p.Next, "next")
			for _, e := range p.Effects {
				if e.Action == Stop {
					assert.Equal(t, tc.in.Running[e.UID], e.Grace, "a stop carries the pod's grace period")
					assert.NotEmpty(t, e.Reason)
				}
			}
		})
	}
	lost := Reconcile(q(Input{Self: a, Ready: true, Members: all, LeaseUntil: now, Current: map[string]time.Time{b: later, c: now}}))
	assert.Equal(t, "QuorumLost: this member is in contact with 2 of the 3 cluster members (a quorum needs 2)", lost.Reason,
		"the reason counts the members whose reports are current")
}

func TestQuorate(t *testing.T) {
	for _, tc := range []struct {
		seen, all []string
		want      bool
	}{
		{[]string{a}, []string{a}, true},
		{[]string{a, b}, []string{a, b, c}, true},
		{[]string{c}, []string{a, b, c}, false},
		{nil, []string{a, b, c}, false},
		{[]string{a, "10.0.0.1:1"}, []string{a, b, c}, false},
		{[]string{a, b}, []string{a, b, c, "127.0.0.1:9999"}, true},
		{[]string{c, "127.0.0.1:9999"}, []string{a, b, c, "127.0.0.1:9999"}, false},
		{[]string{a}, nil, false},
	} {
		assert.Equal(t, tc.want, Quorate(tc.seen, tc.all), "%v of %v", tc.seen, tc.all)
	}
	// Any two quorums of the same members share one: the tie-break gives one of two halves.
	members := []string{a, b, c, "127.0.0.1:9999"}
	for x := range 16 {
		for y := range 16 {
			sx, sy := subset(members, x), subset(members, y)
			if Quorate(sx, members) && Quorate(sy, members) {
				assert.True(t, slices.ContainsFunc(sx, func(m string) bool { return slices.Contains(sy, m) }), "%v and %v", sx, sy)
			}
		}
	}
}

func subset(members []string, bits int) []string {
	var out []string
	for i, m := range members {
		if bits&(1<<i) != 0 {
			out = append(out, m)
		}
	}
	return out
}

func TestReconcileOrdersStopsBeforeStartsByUID(t *testing.T) {
	members := []string{a, b}
	mine, theirs := podsOf(t, 3, a, members), podsOf(t, 3, b, members)
	now := time.Unix(1000, 0)
	p := Reconcile(Input{Self: a, Ready: true, Now: now, All: members, Members: members, Reported: map[string][]string{b: members},
		Current: map[string]time.Time{b: now.Add(time.Second)}, LeaseUntil: now.Add(time.Second), Desired: set(mine...), Running: set(theirs...)})
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

// BenchmarkReconcile: one reconciliation of a member of five holding its share of N pods, all
// running, views agreed — what the sharder pays for every view (one per lease renewal, about
// one per heartbeat per peer: 8/s per peer with the defaults).
func BenchmarkReconcile(b *testing.B) {
	members := []string{"10.0.0.1:7101", "10.0.0.2:7101", "10.0.0.3:7101", "10.0.0.4:7101", "10.0.0.5:7101"}
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			now := time.Unix(1000, 0)
			in := Input{Self: members[0], Ready: true, Now: now, All: members, Members: members, Reported: map[string][]string{},
				Current: map[string]time.Time{}, LeaseUntil: now.Add(time.Hour), Desired: map[types.UID]time.Duration{}, Running: map[types.UID]time.Duration{}}
			for _, m := range members[1:] {
				in.Reported[m], in.Current[m] = members, now.Add(time.Hour)
			}
			for i := range n {
				uid := types.UID(fmt.Sprintf("pod-%05d", i))
				in.Desired[uid] = 30 * time.Second
				if Owner(string(uid), members) == members[0] {
					in.Running[uid] = 30 * time.Second
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if p := Reconcile(in); len(p.Effects) != 0 {
					b.Fatalf("%d effects", len(p.Effects))
				}
			}
		})
	}
}
