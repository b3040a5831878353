package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cluster/membership"
	"github.com/probeactor/probeactor/cluster/sharder"
	"github.com/probeactor/probeactor/internal/lifecycle"
	"github.com/probeactor/probeactor/internal/logtest"
)

// The runner is one lifecycle part, whose stop deadline follows the pods it runs.
var (
	_ lifecycle.Component = (*Runner)(nil)
	_ lifecycle.Budgeted  = (*Runner)(nil)
)

// fakeMembership is a member alone in its cluster: Subscribe hands the sharder that one view.
type fakeMembership struct {
	view membership.View

	mu        sync.Mutex
	applied   []uint64
	cancelled bool
	stopping  [][]string // every SetStopping, in order
}

func alone(self string) *fakeMembership {
	return &fakeMembership{view: membership.View{Self: self, Members: []string{self}, All: []string{self}, LeaseUntil: time.Now().Add(time.Hour), Version: 1}}
}

func (f *fakeMembership) Subscribe(fn func(membership.View)) func() {
	fn(f.view.Clone())
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.cancelled = true
	}
}

func (f *fakeMembership) SetStopping(uids []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopping = append(f.stopping, slices.Clone(uids))
}

func (f *fakeMembership) Applied(v uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, v)
}

func (f *fakeMembership) state() (applied []uint64, cancelled bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.applied), f.cancelled
}

// newSystem is a fresh actor system per test (protoactor's logs discarded).
func newSystem() *actor.ActorSystem {
	return actor.NewActorSystem(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }),
		actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
}

// filePods are -f pods as node loads them in a cluster: no metadata.uid, so ClusterUID gives one.
func filePods(names ...string) []*v1.Pod {
	var pods []*v1.Pod
	for _, n := range names {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "default"}}
		ClusterUID("demo")(p)
		pods = append(pods, p)
	}
	return pods
}

// staticPod is a static pod as the watcher hands it over in a cluster: its UID derived from its
// file's name and content (imitated here; cmd/node/internal/staticpod derives the real one).
func staticPod(name, content string) *v1.Pod {
	h := sha256.Sum256([]byte(name + ".yaml\x00" + content))
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(hex.EncodeToString(h[:16]))}}
}

func started(ops *fakeOps) []string {
	var out []string
	for _, c := range ops.calls() {
		if name, ok := strings.CutPrefix(c, "start "); ok {
			out = append(out, name)
		}
	}
	return out
}

func stopped(ops *fakeOps) []string {
	var out []string
	for _, c := range ops.calls() {
		if name, ok := strings.CutPrefix(c, "stop "); ok {
			out = append(out, name)
		}
	}
	return out
}

func stopWithin(t *testing.T, r *Runner, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return r.Stop(ctx)
}

// TestRunnerStartSetStaticPodsStop: the runner's whole life on a member alone in its cluster: it
// runs the -f pods, follows the static pods (logging each change of the set; a refused set keeps
// the previous one), and on Stop releases every pod, waits for their stops and stops the sharder.
func TestRunnerStartSetStaticPodsStop(t *testing.T) {
	sys := newSystem()
	ops := newFakeOps()
	ops.autoStop = true
	mem := alone("127.0.0.1:7101")
	log, logs := logtest.Capture(t)
	reg := prometheus.NewRegistry()
	files := filePods("pod-00", "pod-01")
	r, err := New(Config{System: sys, Membership: mem, Pods: ops, FilePods: files, Logger: log, Registerer: reg, Margin: noMargin})
	require.NoError(t, err)

	require.NoError(t, r.Start(context.Background()))
	require.Eventually(t, func() bool { applied, _ := mem.state(); return len(applied) > 0 }, 10*time.Second, time.Millisecond)
	applied, _ := mem.state()
	assert.Equal(t, []uint64{1}, applied, "the view was acknowledged once applied")
	assert.ElementsMatch(t, []string{"pod-00", "pod-01"}, started(ops), "the view and the -f pods were applied")
	assert.NotContains(t, logs.String(), "the cluster's pod set changed", "the first set is not a change")

	web, db := staticPod("web", "v1"), staticPod("db", "v1")
	r.SetStaticPods([]*v1.Pod{web, db})
	assert.ElementsMatch(t, []string{"pod-00", "pod-01", "web", "db"}, started(ops), "SetStaticPods returns once the sharder applied the set")
	assert.Contains(t, logs.String(), "the cluster's pod set changed: pods_in_set=4 added=2 removed=0")

	web2 := staticPod("web", "v2") // web.yaml edited: a new pod
	r.SetStaticPods([]*v1.Pod{web2})
	assert.Contains(t, logs.String(), "the cluster's pod set changed: pods_in_set=3 added=1 removed=2")
	require.Eventually(t, func() bool { return len(stopped(ops)) == 2 }, 10*time.Second, time.Millisecond)
	assert.ElementsMatch(t, []string{"web", "db"}, stopped(ops))
	assert.ElementsMatch(t, []string{"pod-00", "pod-01", "web", "db", "web"}, started(ops))

	clash := staticPod("clash", "v1")
	clash.UID = files[1].UID
	r.SetStaticPods([]*v1.Pod{web2, clash})
	assert.Contains(t, logs.String(), "the cluster's pod set was not updated; the previous one stands")
	assert.Contains(t, logs.String(), "metadata.uid: Duplicate value")
	assert.Len(t, ops.calls(), 7, "a refused set changes nothing")

	r.SetStaticPods([]*v1.Pod{web2})
	assert.Equal(t, 2, strings.Count(logs.String(), "the cluster's pod set changed"), "the same set again is no change")

	require.NoError(t, stopWithin(t, r, 10*time.Second))
	assert.ElementsMatch(t, []string{"web", "db", "pod-00", "pod-01", "web"}, stopped(ops), "every pod here stopped before Stop returned")
	assert.Contains(t, logs.String(), "released every pod before leaving the cluster: stopped=3")
	_, cancelled := mem.state()
	assert.True(t, cancelled, "the sharder unsubscribed")
	_, err = sys.Root.RequestFuture(actor.NewPID(sys.Address(), sharder.ActorName), &sharder.GetState{}, time.Second).Result()
	assert.Error(t, err, "the sharder is gone")

	r.SetStaticPods([]*v1.Pod{web2, db})
	assert.Len(t, ops.calls(), 10, "nothing changes after Stop")

	names := map[string]bool{}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	assert.True(t, names["probeactor_cluster_pods_running"], "the sharder's metrics are registered: %v", slices.Sorted(maps.Keys(names)))
}

// TestStopWaitsForTheStopsWithinItsContext: Stop returns only once every pod here stopped; a
// context that ends first makes it return an error naming the stops still in progress (which go
// on, each bounded by its pod's grace period). StopTimeout is the longest grace period plus a
// margin.
func TestStopWaitsForTheStopsWithinItsContext(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Duration
	}{
		{"the stops finish", 10 * time.Second},
		{"the deadline passes first", 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops := newFakeOps()
			a, b := pod("a", 5), pod("b", 12)
			r, err := New(Config{System: newSystem(), Membership: alone("127.0.0.1:7101"), Pods: ops, FilePods: []*v1.Pod{a, b}, Logger: logtest.New(t), Margin: noMargin})
			require.NoError(t, err)
			assert.Equal(t, stopMargin, r.StopTimeout(), "nothing runs yet")
			require.NoError(t, r.Start(context.Background()))
			require.Eventually(t, func() bool { return len(started(ops)) == 2 }, 10*time.Second, time.Millisecond)
			assert.Equal(t, 12*time.Second+stopMargin, r.StopTimeout())

			done := make(chan error, 1)
			go func() { done <- stopWithin(t, r, tc.deadline) }()
			if tc.deadline < time.Second {
				err := <-done
				require.ErrorIs(t, err, context.DeadlineExceeded)
				assert.ErrorContains(t, err, "stop the cluster's pods: 2 stops still in progress")
				ops.release(t, a.UID)
				ops.release(t, b.UID)
				<-ops.stopped
				<-ops.stopped
				r.pods.stops.Wait()
				return
			}
			ops.release(t, a.UID)
			<-ops.stopped
			select {
			case err := <-done:
				t.Fatalf("Stop returned (%v) while b still stops", err)
			default:
			}
			ops.release(t, b.UID)
			<-ops.stopped
			require.NoError(t, <-done)
			assert.ElementsMatch(t, []string{"start a", "start b", "stop a", "stop b"}, ops.calls())
		})
	}
}

// TestStartUndoesWhatItBegan: a Start that fails leaves nothing running: no sharder, no pod.
func TestStartUndoesWhatItBegan(t *testing.T) {
	t.Run("the sharder cannot be spawned", func(t *testing.T) {
		sys := newSystem()
		other, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(actor.Context) {}), sharder.ActorName)
		require.NoError(t, err)
		defer func() { require.NoError(t, sys.Root.PoisonFuture(other).Wait()) }()
		ops := newFakeOps()
		r, err := New(Config{System: sys, Membership: alone("127.0.0.1:7101"), Pods: ops, FilePods: filePods("web"), Logger: logtest.New(t), Margin: noMargin})
		require.NoError(t, err)
		err = r.Start(context.Background())
		require.ErrorIs(t, err, actor.ErrNameExists)
		assert.ErrorContains(t, err, "start the sharder")
		assert.ErrorIs(t, r.pods.Start(testPod("late")), errRunnerClosed, "a runner whose start failed starts nothing")
		assert.Empty(t, ops.calls())
	})
	t.Run("the sharder refuses the set", func(t *testing.T) {
		sys := newSystem()
		ops := newFakeOps()
		files := filePods("web")
		r, err := New(Config{System: sys, Membership: alone("127.0.0.1:7101"), Pods: ops, FilePods: files, Logger: logtest.New(t), Margin: noMargin})
		require.NoError(t, err)
		clash := staticPod("clash", "v1")
		clash.UID = files[0].UID
		r.SetStaticPods([]*v1.Pod{clash}) // before Start: kept for Start
		err = r.Start(context.Background())
		assert.ErrorContains(t, err, "give the pods to the sharder: pods[1] (default/clash): metadata.uid: Duplicate value")
		pid, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(actor.Context) {}), sharder.ActorName)
		require.NoError(t, err, "the sharder was stopped")
		require.NoError(t, sys.Root.PoisonFuture(pid).Wait())
		assert.Empty(t, ops.calls())
	})
}

func TestNewRejectsBadConfig(t *testing.T) {
	sys, mem, ops := newSystem(), alone("127.0.0.1:7101"), newFakeOps()
	web := filePods("web")[0]
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Membership: mem, Pods: ops}, "runner: Config.System is required"},
		{Config{System: sys, Pods: ops}, "runner: Config.Membership is required"},
		{Config{System: sys, Membership: mem}, "runner: Config.Pods is required"},
		{Config{System: sys, Membership: mem, Pods: ops}, "runner: Config.Margin is required"},
		{Config{System: sys, Membership: mem, Pods: ops, Margin: noMargin, FilePods: []*v1.Pod{web, nil}}, "runner: Config.FilePods[1]: nil"},
		{Config{System: sys, Membership: mem, Pods: ops, Margin: noMargin, FilePods: []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}}}},
			"runner: Config.FilePods[0] (default/x): metadata.uid: required"},
		{Config{System: sys, Membership: mem, Pods: ops, Margin: noMargin, FilePods: []*v1.Pod{web, {ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default", UID: web.UID}}}},
			`runner: Config.FilePods[1] (default/x): metadata.uid: Duplicate value: "` + string(web.UID) + `" is also the UID of default/web`},
	} {
		_, err := New(tc.cfg)
		assert.ErrorContains(t, err, tc.want)
	}
}

// TestClusterPodSetComposesFilesAndStaticPods: the pod set two members give their sharders from
// the same -f pods and the same static pods is one set: the same UIDs on both, each once; a
// static pod whose UID an -f pod has is refused (the -f pod stays) and an edited static pod is a
// new pod. (Moved from cmd/node. How the static pod watcher derives UIDs alike on every member
// whatever its directory, and refuses a file clashing with an -f pod naming the file and field,
// is cmd/node/internal/staticpod's TestClusterCoreReadsTheSameSetOnEveryMember: this package
// cannot import it.)
func TestClusterPodSetComposesFilesAndStaticPods(t *testing.T) {
	statics := map[string]string{"web": "v1", "db": "v1"}
	type member struct {
		r   *Runner
		ops *fakeOps
	}
	join := func(self string) member {
		ops := newFakeOps()
		ops.autoStop = true
		r, err := New(Config{System: newSystem(), Membership: alone(self), Pods: ops, FilePods: filePods("pod-00", "pod-01"), Logger: logtest.New(t), Margin: noMargin})
		require.NoError(t, err)
		require.NoError(t, r.Start(context.Background()))
		t.Cleanup(func() { require.NoError(t, stopWithin(t, r, 10*time.Second)) })
		return member{r, ops}
	}
	staticSet := func() []*v1.Pod {
		var pods []*v1.Pod
		for _, name := range slices.Sorted(maps.Keys(statics)) {
			pods = append(pods, staticPod(name, statics[name]))
		}
		return pods
	}
	// uids is what a member runs (each alone in its view, it runs the whole set): name → UID.
	uids := func(m member) map[string]types.UID {
		out := map[string]types.UID{}
		m.r.pods.mu.Lock()
		defer m.r.pods.mu.Unlock()
		for uid, en := range m.r.pods.book.pods {
			if en.phase == running {
				require.NotContains(t, out, en.pod.Name)
				out[en.pod.Name] = uid
			}
		}
		return out
	}
	m1, m2 := join("127.0.0.1:7101"), join("127.0.0.1:7102")
	for _, m := range []member{m1, m2} {
		m.r.SetStaticPods(staticSet())
	}
	set1 := uids(m1)
	assert.Equal(t, set1, uids(m2), "both members place the same pods")
	assert.ElementsMatch(t, []string{"pod-00", "pod-01", "db", "web"}, slices.Collect(maps.Keys(set1)))
	assert.Len(t, slices.Compact(slices.Sorted(maps.Values(set1))), 4, "every UID once")

	clash := staticPod("clash", "v1")
	clash.UID = set1["pod-01"]
	m1.r.SetStaticPods(append(staticSet(), clash))
	assert.Equal(t, set1, uids(m1), "a static pod with an -f pod's UID is refused; the -f pod stays")

	statics["web"] = "v2"
	for _, m := range []member{m1, m2} {
		m.r.SetStaticPods(staticSet())
	}
	set3 := uids(m1)
	assert.Equal(t, set3, uids(m2))
	assert.NotEqual(t, set1["web"], set3["web"], "an edited static pod is a new pod")
	assert.Equal(t, set1["db"], set3["db"])
	assert.Equal(t, set1["pod-00"], set3["pod-00"])
}

// TestHeldPodsAreAdoptedOrSwept: what an earlier node left here is reported as still stopping from
// before the sharder runs; a pod the sharder starts here is adopted (its claim ends at once); the
// rest are swept HoldFor after Start, and their claims end then. Leave makes Stop stop nothing.
func TestHeldPodsAreAdoptedOrSwept(t *testing.T) {
	sys := newSystem()
	ops := newFakeOps()
	ops.autoStop = true
	mem := alone("127.0.0.1:7101")
	files := filePods("pod-00")
	gone := types.UID("left-by-an-earlier-node")
	swept := make(chan struct{})
	r, err := New(Config{System: sys, Membership: mem, Pods: ops, FilePods: files, Logger: logtest.New(t), Margin: noMargin,
		Recovered: func() []types.UID { return []types.UID{files[0].UID, gone} },
		Sweep:     func(context.Context) error { close(swept); return nil },
		HoldFor:   200 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	require.Eventually(t, func() bool { return len(started(ops)) == 1 }, 10*time.Second, time.Millisecond)
	<-swept
	require.Eventually(t, func() bool {
		mem.mu.Lock()
		defer mem.mu.Unlock()
		return len(mem.stopping) == 3
	}, 10*time.Second, time.Millisecond)
	mem.mu.Lock()
	reports := slices.Clone(mem.stopping)
	mem.mu.Unlock()
	both := []string{string(files[0].UID), string(gone)}
	slices.Sort(both)
	assert.Equal(t, [][]string{both, {string(gone)}, nil}, reports,
		"held from the start, pod-00 adopted by its start, the rest released once swept")
	applied, _ := mem.state()
	assert.NotEmpty(t, applied)

	r.Leave()
	require.NoError(t, stopWithin(t, r, 10*time.Second))
	assert.Empty(t, stopped(ops), "a planned restart leaves the pods running for the next node")
}

// A sweep that did not stop everything an earlier node left keeps the held pods reported as
// stopping (a peer must not start them while an old container may still run here) and is tried
// again HoldFor later; the pods are released once a sweep succeeds.
func TestAFailedSweepKeepsThePodsHeldAndTriesAgain(t *testing.T) {
	ops := newFakeOps()
	ops.autoStop = true
	mem := alone("127.0.0.1:7101")
	gone := types.UID("left-by-an-earlier-node")
	sweeps := make(chan int, 4)
	n := 0
	r, err := New(Config{System: newSystem(), Membership: mem, Pods: ops, Logger: logtest.New(t), Margin: noMargin,
		Recovered: func() []types.UID { return []types.UID{gone} },
		Sweep: func(context.Context) error {
			n++
			sweeps <- n
			if n == 1 {
				return errors.New("stop container of shim x.sock: connection reset by peer")
			}
			return nil
		},
		HoldFor: 100 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	next := func() int {
		t.Helper()
		select {
		case k := <-sweeps:
			return k
		case <-time.After(10 * time.Second):
			t.Fatal("no sweep")
			return 0
		}
	}
	require.Equal(t, 1, next())
	held := func() []string {
		mem.mu.Lock()
		defer mem.mu.Unlock()
		return slices.Clone(mem.stopping[len(mem.stopping)-1])
	}
	assert.Equal(t, []string{string(gone)}, held(), "still held after the failed sweep")
	require.Equal(t, 2, next(), "tried again")
	require.Eventually(t, func() bool { return len(held()) == 0 }, 10*time.Second, time.Millisecond, "released once swept")
	mem.mu.Lock()
	reports := len(mem.stopping)
	mem.mu.Unlock()
	assert.Equal(t, 2, reports, "held, then released: never released in between")
	require.NoError(t, stopWithin(t, r, 10*time.Second))
	assert.Len(t, sweeps, 0, "no sweep after one succeeded")
}

// noMargin is a margin of nothing: these tests' members share one clock and stop at once.
func noMargin(time.Duration) time.Duration { return 0 }
