package link

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors"
	"github.com/probeactor/probeactor/actors/fakeruntime"
	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/fleet/uplink"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

var _ Results = (*actors.Tree)(nil)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// nobody is an aggregator address nothing answers at: the test systems run no remote, so the
// uplink's requests go to dead letters and it keeps backing off, never opening a session (the
// recorder below is then the Coalescer's only subscriber).
const nobody = "127.0.0.1:1"

// fakeResults records the feed's subscription.
type fakeResults struct {
	mu           sync.Mutex
	subscribed   []*actor.PID
	opts         [][]actors.SubscribeOption
	unsubscribed []*actor.PID
}

func (r *fakeResults) Subscribe(pid *actor.PID, opts ...actors.SubscribeOption) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subscribed = append(r.subscribed, pid)
	r.opts = append(r.opts, opts)
}

func (r *fakeResults) Unsubscribe(pid *actor.PID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unsubscribed = append(r.unsubscribed, pid)
}

func (r *fakeResults) state() (sub, unsub []*actor.PID, opts [][]actors.SubscribeOption) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*actor.PID(nil), r.subscribed...), append([]*actor.PID(nil), r.unsubscribed...), r.opts
}

// podStore is the runtime's pods and their statuses; the test changes them, the feed reads them.
type podStore struct {
	mu    sync.Mutex
	order []types.UID
	ready map[types.UID]bool
	reads int
}

func newPodStore(uids ...types.UID) *podStore {
	s := &podStore{ready: map[types.UID]bool{}}
	for _, uid := range uids {
		s.add(uid)
	}
	return s
}

func (s *podStore) add(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.order = append(s.order, uid)
	s.ready[uid] = false
}

func (s *podStore) remove(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ready, uid)
	for i, u := range s.order {
		if u == uid {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

func (s *podStore) setReady(uid types.UID, ready bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready[uid] = ready
}

func (s *podStore) pods() []*v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*v1.Pod, 0, len(s.order))
	for _, uid := range s.order {
		out = append(out, &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, Name: string(uid), Namespace: "default"}})
	}
	return out
}

func (s *podStore) view(_ context.Context, pods []*v1.Pod) ([]v1.Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	out := make([]v1.Pod, 0, len(pods))
	for _, p := range pods {
		ready, ok := s.ready[p.UID]
		if !ok {
			continue
		}
		cond := v1.ConditionFalse
		if ready {
			cond = v1.ConditionTrue
		}
		pod := *p
		pod.Spec.NodeName = "n1"
		pod.Status = v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: cond}}}
		out = append(out, pod)
	}
	return out, nil
}

// recorder is the Coalescer's subscriber in place of an uplink with a session: it applies every
// batch to its own copy of the node's state, and acknowledges at once unless holding.
type recorder struct {
	mu      sync.Mutex
	hold    bool
	held    []func()
	pods    map[types.UID]*v1.Pod // nil: reported removed
	results map[types.UID]messages.Result
	batches chan uplink.Batch // every batch, for tests that wait on one
	cancel  func()
}

func record(src *uplink.Coalescer, hold bool) *recorder {
	r := &recorder{hold: hold, pods: map[types.UID]*v1.Pod{}, results: map[types.UID]messages.Result{}, batches: make(chan uplink.Batch, 100)}
	r.cancel = src.Subscribe(1, r.deliver)
	return r
}

func (r *recorder) deliver(b uplink.Batch, ack func()) {
	r.mu.Lock()
	if b.Snapshot {
		r.pods, r.results = map[types.UID]*v1.Pod{}, map[types.UID]messages.Result{}
	}
	for _, p := range b.Pods {
		r.pods[p.UID] = p.Pod
		if p.Pod == nil {
			delete(r.results, p.UID)
		}
	}
	for _, c := range b.Results {
		r.results[c.PodUID] = c.Result
	}
	hold := r.hold
	if hold {
		r.held = append(r.held, ack)
	}
	r.mu.Unlock()
	select {
	case r.batches <- b:
	default:
	}
	if !hold {
		ack()
	}
}

func (r *recorder) holdAcks() { r.mu.Lock(); r.hold = true; r.mu.Unlock() }

func (r *recorder) release() {
	r.mu.Lock()
	held := r.held
	r.held, r.hold = nil, false
	r.mu.Unlock()
	for _, ack := range held {
		ack()
	}
}

// ready returns the pod's reported readiness; reported is false for a pod never reported, removed
// says it was reported removed.
func (r *recorder) ready(uid types.UID) (ready, reported, removed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.pods[uid]
	if !ok {
		return false, false, false
	}
	if p == nil {
		return false, true, true
	}
	return len(p.Status.Conditions) == 1 && p.Status.Conditions[0].Status == v1.ConditionTrue, true, false
}

func (r *recorder) result(uid types.UID) (messages.Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.results[uid]
	return res, ok
}

// fixture is a node's actor system (no remote), its pods and a link over them with a fake clock
// for the feed's timers.
type fixture struct {
	sys     *actor.ActorSystem
	pods    *podStore
	results *fakeResults
	clock   *clock.Fake
	log     hclog.Logger
	logs    *logtest.Buffer
}

func newFixture(t *testing.T, pods ...types.UID) *fixture {
	t.Helper()
	log, buf := logtest.Capture(t)
	sys := actor.NewActorSystem(logging.SystemOption(log), actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
	t.Cleanup(sys.Shutdown)
	return &fixture{sys: sys, pods: newPodStore(pods...), results: &fakeResults{},
		clock: clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), log: log, logs: buf}
}

func (f *fixture) config() Config {
	return Config{System: f.sys, Results: f.results, Pods: f.pods.pods, View: f.pods.view,
		Aggregator: nobody, Node: "n1", Heartbeat: time.Second, Logger: f.log.Named("fleet")}
}

func (f *fixture) link(t *testing.T) *Link {
	t.Helper()
	l, err := newLink(f.config(), f.clock)
	require.NoError(t, err)
	return l
}

// advance waits until the feed has armed n timers, then moves the fake clock by d.
func (f *fixture) advance(t *testing.T, n int, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, f.clock.WaitPending(ctx, n), "the feed's timers")
	f.clock.Advance(d)
}

func (f *fixture) registered(pid *actor.PID) bool {
	_, ok := f.sys.ProcessRegistry.Get(pid)
	return ok
}

func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 5*time.Second, time.Millisecond, msg)
}

// TestLinkReportsResultsAndPodsAndFlushesOnStop: Start subscribes the feed with a snapshot and
// spawns the uplink; results, pod changes and the full sync reach the Coalescer; Stop reports the
// node's last state (a pod stopped without an event), waits for its acknowledgement, then leaves
// no actor, timer or subscription behind.
func TestLinkReportsResultsAndPodsAndFlushesOnStop(t *testing.T) {
	f := newFixture(t, "a", "b")
	l := f.link(t)
	require.NoError(t, l.Start(context.Background()))
	feed, up := l.feed, l.uplink
	require.NotNil(t, feed)
	assert.Equal(t, feedName, feed.GetId())
	assert.Equal(t, uplink.ActorName, up.GetId(), "the name the remote's guard lets the aggregator's answers reach")
	sub, unsub, opts := f.results.state()
	require.Equal(t, []*actor.PID{feed}, sub, "the feed subscribes to the results")
	require.Len(t, opts[0], 1, "one option: the snapshot (TestTheFeedStartsFromTheTreesCurrentResults)")
	assert.Empty(t, unsub)
	assert.Contains(t, f.logs.String(), "reporting to the fleet aggregator")

	rec := record(l.src, false)
	defer rec.cancel()
	eventually(t, func() bool { _, a, _ := rec.ready("a"); _, b, _ := rec.ready("b"); return a && b }, "the feed reads every pod when it starts")

	// A result reaches the Coalescer and is acknowledged to the tree at once; its pod is read
	// again fleetRefreshDelay later.
	f.pods.setReady("a", true)
	res, err := f.sys.Root.RequestFuture(feed, &messages.ResultChanges{Seq: 7, Changes: []messages.ResultChanged{
		{PodUID: "a", Container: "c", Type: messages.Readiness, Result: messages.Success}}}, 5*time.Second).Result()
	require.NoError(t, err)
	assert.Equal(t, &messages.AckResults{Seq: 7}, res)
	eventually(t, func() bool { r, ok := rec.result("a"); return ok && r == messages.Success }, "the result reaches the Coalescer")
	f.advance(t, 2, fleetRefreshDelay) // the full sync's timer and the refresh's
	eventually(t, func() bool { ready, _, _ := rec.ready("a"); return ready }, "the result's pod is read again")

	// A pod that started reaches the Coalescer through PodChanged.
	f.pods.add("c")
	l.PodChanged("c")
	f.advance(t, 2, fleetRefreshDelay)
	eventually(t, func() bool { _, c, _ := rec.ready("c"); return c }, "a started pod is reported")

	// The full sync reads every pod, marked or not.
	f.pods.setReady("b", true)
	f.advance(t, 1, fleetFullSync)
	eventually(t, func() bool { ready, _, _ := rec.ready("b"); return ready }, "the full sync reads every pod")

	// Stop: c stopped without an event; the flush reports it, and Stop waits for the ack.
	f.pods.remove("c")
	for len(rec.batches) > 0 {
		<-rec.batches
	}
	rec.holdAcks()
	stopped := make(chan error, 1)
	go func() { stopped <- l.Stop(context.Background()) }()
	select {
	case b := <-rec.batches:
		assert.Equal(t, []uplink.PodUpdate{{UID: "c"}}, b.Pods, "the flush reports the stopped pod removed")
	case <-time.After(5 * time.Second):
		t.Fatal("the flush did not report the node's last state")
	}
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) before the aggregator acknowledged the last state", err)
	default:
	}
	assert.True(t, f.registered(up), "the uplink runs until the last state is acknowledged")
	rec.release()
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return once the last state was acknowledged")
	}

	_, _, removed := rec.ready("c")
	assert.True(t, removed)
	assert.False(t, f.registered(up), "the uplink is stopped")
	assert.False(t, f.registered(feed), "the feed is stopped")
	_, unsub, _ = f.results.state()
	assert.Equal(t, []*actor.PID{feed}, unsub, "the feed is unsubscribed")
	assert.Zero(t, f.clock.Pending(), "the feed's timers are cancelled")
	l.PodChanged("a") // a no-op: no dead letter, no panic
	require.NoError(t, l.Stop(context.Background()), "a second Stop does nothing")
	assert.NotContains(t, f.logs.String(), "did not acknowledge")
}

// TestStopDoesNotWaitForAnAggregatorThatNeverAcknowledges: the flush is bounded by
// fleetFlushTimeout and by Stop's ctx, and Stop still stops everything.
func TestStopDoesNotWaitForAnAggregatorThatNeverAcknowledges(t *testing.T) {
	cases := []struct {
		name         string
		flushTimeout time.Duration
		ctxTimeout   time.Duration
	}{
		{name: "the flush timeout passes", flushTimeout: 50 * time.Millisecond, ctxTimeout: time.Minute},
		{name: "Stop's deadline passes", flushTimeout: time.Minute, ctxTimeout: 50 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "a")
			l := f.link(t)
			l.flushTimeout = tc.flushTimeout
			require.NoError(t, l.Start(context.Background()))
			feed, up := l.feed, l.uplink
			rec := record(l.src, true) // never acknowledges, not even the snapshot
			defer rec.cancel()

			ctx, cancel := context.WithTimeout(context.Background(), tc.ctxTimeout)
			defer cancel()
			require.NoError(t, l.Stop(ctx))
			assert.Contains(t, f.logs.String(), "did not acknowledge the node's last changes in time")
			assert.False(t, f.registered(up), "the uplink is stopped")
			assert.False(t, f.registered(feed), "the feed is stopped")
			assert.Zero(t, f.clock.Pending(), "the feed's timers are cancelled")
		})
	}
}

// TestStartUndoesTheFeedWhenTheUplinkCannotStart: an error leaves nothing running, and the link
// does not start twice.
func TestStartUndoesTheFeedWhenTheUplinkCannotStart(t *testing.T) {
	f := newFixture(t, "a")
	squatter, err := f.sys.Root.SpawnNamed(actor.PropsFromFunc(func(actor.Context) {}), uplink.ActorName)
	require.NoError(t, err)
	defer func() { require.NoError(t, f.sys.Root.PoisonFuture(squatter).Wait()) }()

	l := f.link(t)
	l.PodChanged("a") // before Start: a no-op
	err = l.Start(context.Background())
	require.ErrorIs(t, err, actor.ErrNameExists)
	assert.Contains(t, err.Error(), "start the fleet uplink")
	sub, unsub, _ := f.results.state()
	require.Len(t, sub, 1)
	assert.Equal(t, sub, unsub, "the feed is unsubscribed")
	assert.False(t, f.registered(sub[0]), "the feed is stopped")
	assert.Zero(t, f.clock.Pending(), "the feed's timers are cancelled")
	l.PodChanged("a") // after a failed Start: a no-op
	require.NoError(t, l.Stop(context.Background()), "nothing to stop")
	assert.ErrorContains(t, l.Start(context.Background()), "started already")
}

func TestNewNamesTheBadField(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{name: "system", change: func(c *Config) { c.System = nil }, want: "Config.System: required"},
		{name: "results", change: func(c *Config) { c.Results = nil }, want: "Config.Results: required"},
		{name: "pods", change: func(c *Config) { c.Pods = nil }, want: "Config.Pods: required"},
		{name: "view", change: func(c *Config) { c.View = nil }, want: "Config.View: required"},
		{name: "aggregator", change: func(c *Config) { c.Aggregator = "" }, want: "Config.Aggregator: required"},
		{name: "aggregator host:port", change: func(c *Config) { c.Aggregator = "agg" }, want: `Config.Aggregator "agg": want host:port`},
		{name: "node", change: func(c *Config) { c.Node = "" }, want: "Config.Node: required"},
		{name: "heartbeat", change: func(c *Config) { c.Heartbeat = 0 }, want: "Config.Heartbeat 0s: must be positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.config()
			tc.change(&cfg)
			_, err := New(cfg)
			assert.EqualError(t, err, "link: "+tc.want)
		})
	}
	cfg := f.config()
	cfg.Logger = nil
	_, err := New(cfg)
	assert.NoError(t, err, "the logger is optional")
}

// TestTheFeedStartsFromTheTreesCurrentResults: a result the tree already holds when the link
// starts (and never changes again) reaches the Coalescer: the feed subscribes with a snapshot.
func TestTheFeedStartsFromTheTreesCurrentResults(t *testing.T) {
	f := newFixture(t, "uid-1")
	rt := fakeruntime.New(nil) // exec probes exit 0
	tree, err := actors.Start(f.sys.Root, actors.WithRuntime(rt), actors.WithLogger(f.log), actors.WithRand(func() float64 { return 0 }))
	require.NoError(t, err)
	defer func() { assert.NoError(t, tree.Stop(context.Background())) }()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", ReadinessProbe: &v1.Probe{
			ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 3600}}}},
	}
	rt.RunPod(pod)
	require.NoError(t, tree.AddPod(pod))
	id := rt.ContainerID(pod.UID, "app")
	eventually(t, func() bool {
		res, ok, err := tree.Result(context.Background(), id, messages.Readiness)
		return err == nil && ok && res == messages.Success
	}, "the tree holds the readiness result before the link starts")

	cfg := f.config()
	cfg.Results = tree
	l, err := newLink(cfg, f.clock)
	require.NoError(t, err)
	require.NoError(t, l.Start(context.Background()))
	defer func() { assert.NoError(t, l.Stop(context.Background())) }()
	eventually(t, func() bool {
		for _, r := range l.src.Results() {
			if r.PodUID == pod.UID && r.Container == "app" && r.Type == messages.Readiness && r.Result == messages.Success {
				return true
			}
		}
		return false
	}, "the snapshot brought the result the tree already had")
}

// SetUsage hands the node's usage to the uplink's source, before Start too (the first snapshot
// carries it); a usage the wire refuses is the error, and is not sent.
func TestSetUsageReachesTheUplink(t *testing.T) {
	f := newFixture(t)
	l := f.link(t)
	u := &fleetv1.Usage{TimestampUnixNano: 10e9, WindowNanos: 10e9, NodeCpuNanocores: 2e9, NodeMemoryBytes: 1 << 30}
	require.NoError(t, l.SetUsage(u))
	assert.ErrorContains(t, l.SetUsage(&fleetv1.Usage{}), "window")
	rec := record(l.src, false)
	defer rec.cancel()
	b := <-rec.batches
	assert.True(t, b.Snapshot)
	assert.Same(t, u, b.Usage)
}
