package actors

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/fakeruntime"
	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newSystem returns a fresh ActorSystem for one test. At the end of the test (after the tree's own
// cleanup has stopped it) the test fails if any message became a dead letter, unless the test
// called allowDeadLetters: a clean shutdown leaves none.
func newSystem(t testing.TB) *actor.ActorSystem {
	sys := actor.NewActorSystem(
		logging.SystemOption(testLogger(t)), // protoactor's slog into hclog
		actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
	var (
		mu   sync.Mutex
		dead []string
	)
	allowed := &atomic.Bool{}
	deadLetterPolicy.Store(sys, allowed)
	sub := sys.EventStream.Subscribe(func(evt any) {
		if d, ok := evt.(*actor.DeadLetterEvent); ok {
			mu.Lock()
			dead = append(dead, fmt.Sprintf("%T to %s (sender %s)", d.Message, d.PID, d.Sender))
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		sys.EventStream.Unsubscribe(sub)
		deadLetterPolicy.Delete(sys)
		sys.Shutdown()
		mu.Lock()
		defer mu.Unlock()
		if !allowed.Load() && len(dead) > 0 {
			t.Errorf("%d dead letters, first: %s", len(dead), dead[0])
		}
	})
	return sys
}

var deadLetterPolicy sync.Map // *actor.ActorSystem → *atomic.Bool

// allowDeadLetters marks a test whose scenario sends to stopped actors on purpose.
func allowDeadLetters(sys *actor.ActorSystem) {
	if a, ok := deadLetterPolicy.Load(sys); ok {
		a.(*atomic.Bool).Store(true)
	}
}

// testLogger prints only when the test fails.
func testLogger(t testing.TB) hclog.Logger {
	var mu sync.Mutex
	var lines []string
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		lines = append(lines, string(p))
		mu.Unlock()
		return len(p), nil
	})
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			for _, l := range lines {
				t.Log(l)
			}
			mu.Unlock()
		}
	})
	return hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: w})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// scriptProber answers per container name; a missing script is a Success.
type scriptProber struct {
	mu      sync.Mutex
	scripts map[string]func(ctx context.Context) (probes.Outcome, error)
	calls   map[string]int
}

func newScriptProber() *scriptProber {
	return &scriptProber{scripts: map[string]func(context.Context) (probes.Outcome, error){}, calls: map[string]int{}}
}

func (p *scriptProber) set(name string, f func(ctx context.Context) (probes.Outcome, error)) {
	p.mu.Lock()
	p.scripts[name] = f
	p.mu.Unlock()
}

func (p *scriptProber) result(name string, r probes.Result) {
	p.set(name, func(context.Context) (probes.Outcome, error) { return probes.Outcome{Result: r, Output: "out"}, nil })
}

// count returns the attempts on a container ("name") or on one of its probes ("name/Readiness").
func (p *scriptProber) count(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[name]
}

func (p *scriptProber) Probe(ctx context.Context, spec *v1.Probe, t probes.Target) (probes.Outcome, error) {
	p.mu.Lock()
	f := p.scripts[t.Container.Name]
	p.calls[t.Container.Name]++
	for _, pt := range messages.ProbeTypes {
		if pt.Spec(t.Container) == spec {
			p.calls[t.Container.Name+"/"+pt.String()]++
		}
	}
	p.mu.Unlock()
	if f == nil {
		return probes.Outcome{Result: probes.Success}, nil
	}
	return f(ctx)
}

type recorder struct {
	mu     sync.Mutex
	events []messages.Event
}

func (r *recorder) Event(e messages.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) find(reason string) []messages.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []messages.Event
	for _, e := range r.events {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

type harness struct {
	t      *testing.T
	sys    *actor.ActorSystem
	clk    *clock.Fake
	rt     *fakeruntime.Runtime
	prober *scriptProber
	events *recorder
	tree   *Tree
}

func newHarness(t *testing.T, opts ...Option) *harness {
	h := &harness{t: t, sys: newSystem(t), clk: clock.NewFake(t0), prober: newScriptProber(), events: &recorder{}}
	h.rt = fakeruntime.New(h.clk)
	base := []Option{WithRuntime(h.rt), WithClock(h.clk), WithProber(h.prober), WithEventSink(h.events),
		WithLogger(testLogger(t)), WithRand(func() float64 { return 0 }), WithShards(harnessShards)}
	tree, err := Start(h.sys.Root, append(base, opts...)...)
	require.NoError(t, err)
	h.tree = tree
	t.Cleanup(func() { require.NoError(t, tree.Stop(context.Background())) })
	return h
}

func (h *harness) result(id messages.ContainerID, pt messages.ProbeType) (messages.Result, bool) {
	r, ok, err := h.tree.Result(context.Background(), id, pt)
	require.NoError(h.t, err)
	return r, ok
}

// settledResult waits until the tree is at rest (every goroutine of the bubble blocked) and requires
// the cached result.
func (h *harness) settledResult(id messages.ContainerID, pt messages.ProbeType, want messages.Result) {
	h.t.Helper()
	synctest.Wait()
	r, ok := h.result(id, pt)
	require.True(h.t, ok, "no cached %s result for %s", pt, id)
	require.Equal(h.t, want, r, "%s %s", id, pt)
}

func (h *harness) status(uid types.UID) v1.PodStatus {
	st, ok, err := h.tree.PodStatus(context.Background(), uid)
	require.NoError(h.t, err)
	require.True(h.t, ok)
	return st
}

// sync waits until every message sent so far has been processed: every goroutine of the test's
// bubble is blocked (actors idle, no attempt running unless it waits on something).
func (h *harness) sync() { synctest.Wait() }

// stopAtEnd stops a test's subscriber at the end of the test, before the tree, and waits until the
// cache has seen it go: a cache that stopped first would Unwatch a subscriber that is already gone,
// a dead letter newSystem fails the test on (one run in ~100 of TestSlowSubscriber under -shuffle).
func (h *harness) stopAtEnd(sub *actor.PID) {
	h.t.Cleanup(func() {
		h.sys.Root.Stop(sub)
		h.sync()
	})
}

func (h *harness) inspect(k messages.ProbeKey) *workerInfo {
	res, err := h.sys.Root.RequestFuture(h.tree.env.manager, &inspectWorker{key: k}, 5*time.Second).Result()
	require.NoError(h.t, err)
	return res.(*workerInfo)
}

// idle waits until the tree is at rest and requires the worker of k to exist with no attempt in
// flight.
func (h *harness) idle(k messages.ProbeKey) *workerInfo {
	h.t.Helper()
	synctest.Wait()
	info := h.inspect(k)
	require.True(h.t, info.Exists, "worker %s does not exist", k)
	require.False(h.t, info.Busy, "worker %s is busy", k)
	return info
}

// settle waits until the tree is at rest and requires statusManager's status to show the runtime's
// current container ID for name, and the pod's worker k (if it exists) to be idle.
func (h *harness) settle(uid types.UID, name string, k messages.ProbeKey) {
	h.t.Helper()
	synctest.Wait()
	want := string(h.rt.ContainerID(uid, name))
	found := false
	for _, cs := range append(h.status(uid).ContainerStatuses, h.status(uid).InitContainerStatuses...) {
		if cs.Name == name {
			require.Equal(h.t, want, cs.ContainerID, "statusManager's container ID of %s", name)
			found = true
		}
	}
	require.True(h.t, found, "no status for container %s", name)
	info := h.inspect(k)
	require.False(h.t, info.Exists && info.Busy, "worker %s is busy", k)
}

// tick advances the fake clock by d and waits until the worker of k finished the run it caused.
func (h *harness) tick(k messages.ProbeKey, d time.Duration) *workerInfo {
	h.t.Helper()
	h.clk.Advance(d)
	return h.idle(k)
}

// settled waits for rest and requires the pt worker of the pod's container to have published
// Success for the container's current ID and to be idle; it returns that ID and the worker's state.
func (h *harness) settled(pod *v1.Pod, container string, pt messages.ProbeType) (messages.ContainerID, *workerInfo) {
	h.t.Helper()
	id := h.rt.ContainerID(pod.UID, container)
	h.settledResult(id, pt, messages.Success)
	return id, h.idle(messages.ProbeKey{PodUID: pod.UID, Container: container, Type: pt})
}

// inBubble runs a test body inside a testing/synctest bubble: the tree's goroutines, timers and
// channels belong to the bubble, synctest.Wait returns when all of them are blocked, and a tree that
// would hang fails the test at once (every goroutine blocked, no timer to wait for).
func inBubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		// Runs last: lets time-bound leftovers end inside the bubble (protoactor's dead-letter
		// throttle keeps a goroutine for its 10 ms interval); virtual time, no wait.
		t.Cleanup(func() { time.Sleep(time.Second) })
		f(t)
	})
}

// run starts a pod in the fake runtime and, once statusManager has its status, adds it to the tree
// (as kubelet's SyncPod: the status is known before the workers start).
func (h *harness) run(pod *v1.Pod) {
	h.rt.RunPod(pod)
	h.sync()
	require.NoError(h.t, h.tree.AddPod(pod))
}

func execProbe(period, failureThreshold int32) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
		TimeoutSeconds: 1, PeriodSeconds: period, SuccessThreshold: 1, FailureThreshold: failureThreshold}
}

func testPod(uid string, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-" + uid, Namespace: "ns", UID: types.UID(uid)},
		Spec: v1.PodSpec{Containers: containers, RestartPolicy: v1.RestartPolicyAlways}}
}

// harnessShards: the harness's trees run their workers on three shards, so that every tree test
// crosses shards (the default on a 2-proc machine is one).
const harnessShards = 3
