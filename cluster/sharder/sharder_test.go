package sharder

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/cluster/membership"
	"github.com/probeactor/probeactor/cluster/ownership"
	"github.com/probeactor/probeactor/internal/logtest"
)

// fakeMembership hands views to the sharder by hand.
type fakeMembership struct {
	mu        sync.Mutex
	fn        func(membership.View)
	cancelled bool
	applied   []uint64
}

func (f *fakeMembership) Applied(v uint64) {
	f.mu.Lock()
	f.applied = append(f.applied, v)
	f.mu.Unlock()
}

func (f *fakeMembership) SetStopping([]string) {}

func (f *fakeMembership) Subscribe(fn func(membership.View)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fn = fn
	return func() { f.mu.Lock(); f.cancelled = true; f.mu.Unlock() }
}

func (f *fakeMembership) deliver(v membership.View) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fn(v)
}

// call is one PodRunner call.
type call struct {
	Action string
	UID    types.UID
	Grace  time.Duration
}

// fakeRunner records calls; failStart makes Start fail for those UIDs.
type fakeRunner struct {
	mu        sync.Mutex
	calls     []call
	failStart map[types.UID]bool
}

func (r *fakeRunner) Start(p *v1.Pod) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failStart[p.UID] {
		return errors.New("no room")
	}
	r.calls = append(r.calls, call{Action: "start", UID: p.UID})
	return nil
}

func (r *fakeRunner) Stop(uid types.UID, grace time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{Action: "stop", UID: uid, Grace: grace})
	return nil
}

func (r *fakeRunner) take() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

func pod(uid string, grace int64) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid)}, Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace}}
}

var a, b, c = "127.0.0.1:7101", "127.0.0.1:7102", "127.0.0.1:7103"

// podsOwnedBy finds n pod UIDs that owner owns among members.
func podsOwnedBy(n int, owner string, members []string) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if uid := fmt.Sprintf("pod-%d", i); ownership.Owner(uid, members) == owner {
			out = append(out, uid)
		}
	}
	return out
}

type harness struct {
	t      *testing.T
	sys    *actor.ActorSystem
	pid    *actor.PID
	mem    *fakeMembership
	runner *fakeRunner
}

func newHarness(t *testing.T) *harness {
	sys := actor.NewActorSystem(logging.SystemOption(logtest.New(t)), actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
	h := &harness{t: t, sys: sys, mem: &fakeMembership{}, runner: &fakeRunner{failStart: map[types.UID]bool{}}}
	props, err := Props(Config{Membership: h.mem, Runner: h.runner, Logger: logtest.New(t), Margin: noMargin})
	require.NoError(t, err)
	h.pid, err = sys.Root.SpawnNamed(props, ActorName)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Root.PoisonFuture(h.pid).Wait() })
	h.state() // Started (and the subscription) is done
	return h
}

func (h *harness) state() *State {
	res, err := h.sys.Root.RequestFuture(h.pid, &GetState{}, 5*time.Second).Result()
	require.NoError(h.t, err)
	return res.(*State)
}

func (h *harness) setPods(pods ...*v1.Pod) error {
	res, err := h.sys.Root.RequestFuture(h.pid, &SetPods{Pods: pods}, 5*time.Second).Result()
	require.NoError(h.t, err)
	return res.(*SetPodsResult).Err
}

// view delivers a view and waits until the sharder has processed it.
// view delivers v, by default a view of a cluster made of its members, every peer's report
// current and this member's lease held.
func (h *harness) view(v membership.View) *State {
	if v.All == nil {
		v.All = v.Members
	}
	if v.LeaseUntil.IsZero() {
		v.LeaseUntil = time.Now().Add(time.Hour)
	}
	if v.Current == nil {
		v.Current = map[string]time.Time{}
		for _, m := range v.Members {
			v.Current[m] = time.Now().Add(time.Hour)
		}
	}
	h.mem.deliver(v)
	return h.state()
}

func uids(s ...string) []types.UID {
	out := make([]types.UID, 0, len(s))
	for _, x := range s {
		out = append(out, types.UID(x))
	}
	slices.Sort(out)
	return out
}

func TestSharderStartsItsShareAndHandsItBack(t *testing.T) {
	h := newHarness(t)
	all := []string{a, b, c}
	mine := podsOwnedBy(3, a, all)
	theirs := podsOwnedBy(3, b, all)
	var pods []*v1.Pod
	for _, u := range append(append([]string{}, mine...), theirs...) {
		pods = append(pods, pod(u, 7))
	}
	require.NoError(t, h.setPods(pods...))
	assert.Empty(t, h.runner.take(), "no view yet: nothing starts")
	assert.False(t, h.state().HaveView)

	// Alone: everything.
	st := h.view(membership.View{Self: a, Members: []string{a}, Version: 1})
	assert.Len(t, st.Running, 6)
	assert.Len(t, h.runner.take(), 6)

	// b joined, but has not seen a yet: a hands b's pods back (it sees b), starts nothing new.
	st = h.view(membership.View{Self: a, Members: []string{a, b}, Reported: map[string][]string{b: {b}}, Version: 2})
	var stopped, kept []string
	for _, p := range pods {
		if ownership.Owner(string(p.UID), []string{a, b}) == b {
			stopped = append(stopped, string(p.UID))
		} else {
			kept = append(kept, string(p.UID))
		}
	}
	require.NotEmpty(t, stopped)
	var got []types.UID
	for _, cl := range h.runner.take() {
		assert.Equal(t, "stop", cl.Action)
		assert.Equal(t, 7*time.Second, cl.Grace, "the pod's own grace period")
		got = append(got, cl.UID)
	}
	assert.Equal(t, uids(stopped...), got, "exactly b's pods stop, in UID order")
	assert.Equal(t, uids(kept...), st.Running)
	assert.Equal(t, len(kept), st.Owned)

	// Three members that all see each other: exactly a's share of the set.
	st = h.view(membership.View{Self: a, Members: all, Reported: map[string][]string{b: all, c: all}, Version: 3})
	assert.Equal(t, uids(mine...), st.Running)
	assert.Equal(t, 3, st.Owned)
	assert.Empty(t, st.Waiting)
	assert.True(t, st.HaveView)
	assert.Equal(t, uint64(3), st.View.Version)
	h.mem.mu.Lock()
	assert.Equal(t, []uint64{1, 2, 3}, h.mem.applied, "each view is acknowledged once its effects were issued")
	h.mem.mu.Unlock()
}

func TestSharderWaitsUntilEveryPeerHasSeenIt(t *testing.T) {
	h := newHarness(t)
	all := []string{a, b, c}
	mine := podsOwnedBy(2, a, all)
	require.NoError(t, h.setPods(pod(mine[0], 1), pod(mine[1], 1)))
	st := h.view(membership.View{Self: a, Members: all, Reported: map[string][]string{b: all, c: {b, c}}, Version: 1})
	assert.Empty(t, st.Running)
	assert.Equal(t, map[types.UID]string{types.UID(mine[0]): c + " reports another view", types.UID(mine[1]): c + " reports another view"}, st.Waiting)
	st = h.view(membership.View{Self: a, Members: all, Reported: map[string][]string{b: all, c: all}, Version: 2})
	assert.Equal(t, uids(mine...), st.Running)
	assert.Empty(t, st.Waiting)
}

// A view that renews the lease after it ran out (the recheck at the lease's end had not come yet)
// is a lapse: the shims fenced the containers, so every pod is stopped first and started again
// under the rules, never left to the runtime to restart.
func TestALapsedLeaseStopsEveryPodBeforeTheNextView(t *testing.T) {
	h := newHarness(t)
	now := time.Now()
	h.view(membership.View{Self: a, Members: []string{a}, Version: 1, Published: now, LeaseUntil: now.Add(time.Hour)})
	require.NoError(t, h.setPods(pod("x", 3)))
	assert.Equal(t, []call{{Action: "start", UID: "x"}}, h.runner.take())

	h.view(membership.View{Self: a, Members: []string{a}, Version: 2, Published: now.Add(2 * time.Hour), LeaseUntil: now.Add(3 * time.Hour)})
	assert.Equal(t, []call{{Action: "stop", UID: "x", Grace: 3 * time.Second}, {Action: "start", UID: "x"}}, h.runner.take(),
		"stopped as at the lease's end, then started again under the renewed lease")

	h.view(membership.View{Self: a, Members: []string{a}, Version: 3, Published: now.Add(2*time.Hour + time.Second), LeaseUntil: now.Add(3 * time.Hour)})
	assert.Empty(t, h.runner.take(), "a view within the lease changes nothing")
}

func TestSharderPodSetChanges(t *testing.T) {
	h := newHarness(t)
	h.view(membership.View{Self: a, Members: []string{a}, Version: 1})
	require.NoError(t, h.setPods(pod("x", 3), pod("y", 4)))
	assert.ElementsMatch(t, []call{{Action: "start", UID: "x"}, {Action: "start", UID: "y"}}, h.runner.take())

	require.NoError(t, h.setPods(pod("y", 4), pod("z", 5)))
	assert.Equal(t, []call{{Action: "stop", UID: "x", Grace: 3 * time.Second}, {Action: "start", UID: "z"}}, h.runner.take())

	noGrace := pod("w", 0)
	noGrace.Spec.TerminationGracePeriodSeconds = nil
	for _, tc := range []struct {
		name string
		pods []*v1.Pod
		want string
	}{
		{"a pod without UID", []*v1.Pod{pod("y", 4), pod("", 1)}, "pods[1] (default/): metadata.uid: required"},
		{"a duplicate UID", []*v1.Pod{pod("y", 4), pod("y", 1)}, `pods[1] (default/y): metadata.uid: Duplicate value: "y"`},
		{"a nil pod", []*v1.Pod{nil}, "pods[0]: nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorContains(t, h.setPods(tc.pods...), tc.want)
			assert.Empty(t, h.runner.take(), "a refused set changes nothing")
			assert.Equal(t, uids("y", "z"), h.state().Running)
		})
	}
	require.NoError(t, h.setPods(noGrace))
	assert.Equal(t, []call{{Action: "stop", UID: "y", Grace: 4 * time.Second}, {Action: "stop", UID: "z", Grace: 5 * time.Second}, {Action: "start", UID: "w"}}, h.runner.take())
	require.NoError(t, h.setPods())
	assert.Equal(t, []call{{Action: "stop", UID: "w", Grace: DefaultGracePeriod}}, h.runner.take(), "no grace period in the spec: Kubernetes' default")
}

func TestSharderRetriesAFailedStartOnTheNextChange(t *testing.T) {
	h := newHarness(t)
	h.runner.failStart["x"] = true
	require.NoError(t, h.setPods(pod("x", 1)))
	st := h.view(membership.View{Self: a, Members: []string{a}, Version: 1})
	assert.Empty(t, st.Running)
	assert.Equal(t, 1, st.Owned)
	h.runner.mu.Lock()
	h.runner.failStart["x"] = false
	h.runner.mu.Unlock()
	st = h.view(membership.View{Self: a, Members: []string{a}, Version: 2})
	assert.Equal(t, uids("x"), st.Running)
}

func TestSharderReleaseStopsEverythingForGood(t *testing.T) {
	h := newHarness(t)
	require.NoError(t, h.setPods(pod("x", 2), pod("y", 2)))
	h.view(membership.View{Self: a, Members: []string{a}, Version: 1})
	h.runner.take()
	res, err := h.sys.Root.RequestFuture(h.pid, &Release{}, 5*time.Second).Result()
	require.NoError(t, err)
	assert.Equal(t, 2, res.(*Released).Stopped)
	assert.ElementsMatch(t, []call{{Action: "stop", UID: "x", Grace: 2 * time.Second}, {Action: "stop", UID: "y", Grace: 2 * time.Second}}, h.runner.take())
	st := h.view(membership.View{Self: a, Members: []string{a}, Version: 2})
	assert.Empty(t, st.Running, "a released sharder starts nothing again")
	assert.True(t, st.Released)
	assert.Empty(t, h.runner.take())
}

func TestSharderUnsubscribesWhenStopped(t *testing.T) {
	h := newHarness(t)
	require.NoError(t, h.sys.Root.PoisonFuture(h.pid).Wait())
	h.mem.mu.Lock()
	defer h.mem.mu.Unlock()
	assert.True(t, h.mem.cancelled)
}

func TestPropsNeedsMembershipRunnerAndMargin(t *testing.T) {
	_, err := Props(Config{Runner: &fakeRunner{}, Margin: noMargin})
	assert.ErrorContains(t, err, "Membership and Runner are required")
	_, err = Props(Config{Membership: &fakeMembership{}, Runner: &fakeRunner{}})
	assert.ErrorContains(t, err, "sharder: Margin is required (sharder.Margin of the failure timeout)")
}

// noMargin is a margin of nothing: these tests' members share one clock and stop at once.
func noMargin(time.Duration) time.Duration { return 0 }
