package actors

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/actors/clock"
	"github.com/probeactor/probeactor/actors/fakeruntime"
	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/actors/supervision"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// cacheRecorder stands in for the resultsCache and records what a worker sends it.
type cacheRecorder struct{ got []string }

type recorded struct{}

func (c *cacheRecorder) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *messages.SetResult:
		c.got = append(c.got, "set "+string(m.ContainerID)+" "+m.Result.String())
	case *messages.RemoveResult:
		c.got = append(c.got, "remove "+string(m.ContainerID))
	case *recorded:
		ctx.Respond(append([]string(nil), c.got...))
		c.got = nil
	default:
	}
}

// workerUnderTest is one worker actor spawned on its own, its cache a cacheRecorder, driven by a
// fake clock and pushed views.
type workerUnderTest struct {
	t      *testing.T
	sys    *actor.ActorSystem
	clk    *clock.Fake
	prober *scriptProber
	pid    *actor.PID
	cache  *actor.PID
}

func newWorkerUnderTest(t *testing.T, pt messages.ProbeType, spec *v1.Probe) *workerUnderTest {
	sys := newSystem(t)
	clk := clock.NewFake(t0)
	p := newScriptProber()
	cfg, err := newConfig([]Option{WithRuntime(fakeruntime.New(clk, nil)), WithClock(clk), WithProber(p),
		WithLogger(testLogger(t)), WithRand(func() float64 { return 0 })})
	require.NoError(t, err)
	e := &env{cfg: cfg, sys: sys, log: cfg.log, sched: clock.NewScheduler(clk), start: t0}
	e.panics = logging.PanicStack(e.log)
	cfg.exec = newExecutors()
	e.cache = sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &cacheRecorder{} }))
	pod := testPod("u1", v1.Container{Name: "app"})
	k := messages.ProbeKey{PodUID: pod.UID, Container: "app", Type: pt}
	w := newWorkerActor(e, k, pod, &pod.Spec.Containers[0], spec, false, messages.ContainerView{})
	pid := sys.Root.Spawn(e.props(func() actor.Actor { return w }, actor.WithDispatcher(cfg.exec.mailboxes)))
	t.Cleanup(func() {
		require.NoError(t, sys.Root.PoisonFuture(pid).Wait())
		require.NoError(t, sys.Root.PoisonFuture(e.cache).Wait())
		e.sched.Stop()
		cfg.exec.stop()
	})
	return &workerUnderTest{t: t, sys: sys, clk: clk, prober: p, pid: pid, cache: e.cache}
}

func (w *workerUnderTest) idle() {
	w.t.Helper()
	require.Eventually(w.t, func() bool {
		res, err := w.sys.Root.RequestFuture(w.pid, &inspectWorker{}, 5*time.Second).Result()
		return err == nil && !res.(*workerInfo).Busy
	}, 5*time.Second, time.Millisecond)
}

// view pushes a running container id to the worker and waits until it has run the probe it causes.
func (w *workerUnderTest) view(id messages.ContainerID) {
	w.sys.Root.Send(w.pid, &messages.ContainerView{PodStatusKnown: true, Phase: v1.PodRunning, Found: true,
		ContainerID: id, Running: true, StartedAt: t0, Started: true})
	w.sys.Root.Send(w.pid, &messages.TriggerReadiness{}) // any type: runs doProbe now
	w.idle()
}

// tick advances the clock by one period with the prober answering r, and waits for the run.
func (w *workerUnderTest) tick(r probes.Result) {
	w.prober.result("app", r)
	w.clk.Advance(time.Second)
	w.idle()
}

// sent returns what the worker sent to the cache since the last call.
func (w *workerUnderTest) sent() []string {
	res, err := w.sys.Root.RequestFuture(w.cache, &recorded{}, 5*time.Second).Result()
	require.NoError(w.t, err)
	return res.([]string)
}

// A worker sends a result only when it changes what the cache holds for its current container;
// kubelet's worker calls Set on every probe and lets the cache drop repeats.
func TestWorkerPublishesOnlyChanges(t *testing.T) {
	t.Run("readiness", func(t *testing.T) {
		w := newWorkerUnderTest(t, messages.Readiness, execProbe(1, 1))
		w.view("c1")
		assert.Equal(t, []string{"set c1 Failure", "set c1 Success"}, w.sent(), "initial value, then the first probe")
		w.tick(probes.Success)
		w.tick(probes.Success)
		assert.Empty(t, w.sent(), "repeated successes")
		w.tick(probes.Failure)
		w.tick(probes.Failure)
		w.tick(probes.Success)
		assert.Equal(t, []string{"set c1 Failure", "set c1 Success"}, w.sent())
		// A new container: the old entry goes, the new one gets the initial value and then the
		// same value the old container last had.
		w.view("c2")
		assert.Equal(t, []string{"remove c1", "set c2 Failure", "set c2 Success"}, w.sent())
		w.tick(probes.Success)
		assert.Empty(t, w.sent())
	})
	t.Run("liveness: a new container gets the value the old one had", func(t *testing.T) {
		w := newWorkerUnderTest(t, messages.Liveness, execProbe(1, 1))
		w.view("c1")
		assert.Equal(t, []string{"set c1 Success"}, w.sent(), "initial Success; the probe's Success is a repeat")
		w.tick(probes.Success)
		assert.Empty(t, w.sent())
		w.view("c2")
		assert.Equal(t, []string{"remove c1", "set c2 Success"}, w.sent())
		w.tick(probes.Failure)
		assert.Equal(t, []string{"set c2 Failure"}, w.sent())
	})
}

// After a give-up the key reads Unknown; a worker created for it again (the next AddPod) starts
// with nothing published, so its initial value replaces the Unknown.
func TestWorkerPublishesAgainAfterGiveUp(t *testing.T) {
	policy := supervision.Policy{Initial: time.Second, Max: time.Second, MaxFailures: 1, Window: time.Minute}
	h := newHarness(t, WithSupervision(policy))
	pod := testPod("again", v1.Container{Name: "c", LivenessProbe: execProbe(1, 1)})
	key := messages.ProbeKey{PodUID: pod.UID, Container: "c", Type: messages.Liveness}
	h.run(pod)
	id, _ := h.settled(pod, "c", messages.Liveness)

	var panics atomic.Int32
	h.prober.set("c", panicky(&panics))
	h.clk.Advance(time.Second)
	h.eventuallyResult(id, messages.Liveness, messages.Unknown)
	require.Eventually(t, func() bool { return !h.inspect(key).Exists }, 5*time.Second, time.Millisecond)

	h.prober.result("c", probes.Success)
	h.tree.AddPod(pod)
	h.eventuallyResult(id, messages.Liveness, messages.Success)
}
