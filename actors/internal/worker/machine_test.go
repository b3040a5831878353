package worker

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/messages"
)

const testID = messages.ContainerID("test://cOnTaInEr_Id")

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// spec is kubelet's setTestProbe: zero timeout/period/thresholds become 1.
func spec(s, f, delay int32) *v1.Probe {
	if s == 0 {
		s = 1
	}
	if f == 0 {
		f = 1
	}
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{}}, TimeoutSeconds: 1, PeriodSeconds: 1,
		SuccessThreshold: s, FailureThreshold: f, InitialDelaySeconds: delay}
}

// running is getTestRunningStatusWithStarted.
func running(started bool) protocol.ContainerView {
	return protocol.ContainerView{PodStatusKnown: true, Phase: v1.PodRunning, Found: true, ContainerID: testID,
		Running: true, StartedAt: t0, Started: started}
}

// rig drives a Machine like its shell would, with an instant prober: every attempt the machine
// starts completes at once with the scripted result. cache applies the writes like results.Manager.
type rig struct {
	t      *testing.T
	m      *Machine
	cache  map[messages.ContainerID]messages.Result
	writes []CacheOp
	exited bool
	probes int
}

func newRig(t *testing.T, cfg Config) *rig {
	if cfg.Period == 0 {
		cfg.Period = time.Second
	}
	return &rig{t: t, m: New(cfg), cache: map[messages.ContainerID]messages.Result{}}
}

func (g *rig) apply(r Ready) Ready {
	for _, op := range r.Cache() {
		g.writes = append(g.writes, op)
		if op.Remove {
			delete(g.cache, op.ContainerID)
		} else {
			g.cache[op.ContainerID] = op.Result
		}
	}
	g.exited = g.exited || r.Exit
	return r
}

// doProbe runs one doProbe now (a trigger on a started loop) and completes its attempt with res.
// It reports whether the worker keeps going.
func (g *rig) doProbe(now time.Time, res messages.Result) bool {
	g.t.Helper()
	var r Ready
	if !g.m.started {
		r = g.apply(stepOf(g.m, Event{Kind: Started, Now: now}))
	} else {
		r = g.apply(stepOf(g.m, Event{Kind: Trigger, Now: now}))
	}
	for r.StartAttempt {
		g.probes++
		r = g.apply(stepOf(g.m, Event{Kind: Done, Now: now, Attempt: r.Attempt.Attempt, Verdict: &Verdict{Result: res}}))
	}
	return !g.exited
}

func (g *rig) view(v protocol.ContainerView) { stepOf(g.m, Event{Kind: View, View: &v}) }

// stepOf is Step with the Ready as a return value.
func stepOf(m *Machine, ev Event) Ready {
	var r Ready
	m.Step(&ev, &r)
	return r
}

func ptr[T any](v T) *T { return &v }

// results returns the Set results written since the last call.
func (g *rig) results() []messages.Result {
	var out []messages.Result
	for _, op := range g.writes {
		if !op.Remove {
			out = append(out, op.Result)
		}
	}
	g.writes = nil
	return out
}

func TestDoProbe(t *testing.T) {
	for _, pt := range messages.ProbeTypes {
		st := running(pt != messages.Startup)
		terminated := st
		terminated.Running, terminated.Terminated = false, true
		waiting := st
		waiting.Running = false
		otherName := protocol.ContainerView{PodStatusKnown: true, Phase: v1.PodRunning}
		failed := st
		failed.Phase = v1.PodFailed
		cases := []struct {
			name      string
			view      protocol.ContainerView
			deleting  bool
			delay     int32
			keepGoing bool
			want      []messages.Result
		}{
			{name: "no pod status", view: protocol.ContainerView{}, keepGoing: true},
			{name: "pod failed", view: failed, keepGoing: false},
			{name: "deleting", view: st, deleting: true, keepGoing: pt == messages.Readiness,
				want: dedup(InitialValue(pt), messages.Success)},
			{name: "container not found", view: otherName, keepGoing: true},
			{name: "waiting", view: waiting, keepGoing: true, want: dedup(InitialValue(pt), messages.Failure)},
			{name: "terminated never restart", view: terminated, keepGoing: false, want: dedup(InitialValue(pt), messages.Failure)},
			{name: "probe success", view: st, keepGoing: true, want: dedup(InitialValue(pt), messages.Success)},
			{name: "negative initial delay", view: st, delay: -100, keepGoing: true, want: dedup(InitialValue(pt), messages.Success)},
		}
		for _, tc := range cases {
			t.Run(pt.String()+"/"+tc.name, func(t *testing.T) {
				g := newRig(t, Config{Type: pt, Spec: spec(0, 0, tc.delay), RestartPolicy: v1.RestartPolicyNever, Deleting: tc.deleting})
				g.view(tc.view)
				assert.Equal(t, tc.keepGoing, g.doProbe(t0, messages.Success))
				assert.Equal(t, tc.want, g.results())
			})
		}
	}
}

// dedup is what reaches the cache for a sequence of Sets: only changes (liveness's initial Success
// followed by a Success is one write).
func dedup(rs ...messages.Result) []messages.Result {
	var out []messages.Result
	for _, r := range rs {
		if len(out) == 0 || out[len(out)-1] != r {
			out = append(out, r)
		}
	}
	return out
}

func TestSidecarTerminatedKeepsGoing(t *testing.T) {
	side := &v1.Container{Name: "side", RestartPolicy: ptr(v1.ContainerRestartPolicyAlways)}
	g := newRig(t, Config{Type: messages.Readiness, Spec: spec(0, 0, 0), RestartPolicy: v1.RestartPolicyNever, Container: side})
	v := running(true)
	v.Running, v.Terminated = false, true
	g.view(v)
	assert.True(t, g.doProbe(t0, messages.Success))
	assert.Equal(t, []messages.Result{messages.Failure}, g.results(), "initial Failure, then Failure: one write")
	assert.Equal(t, messages.Failure, g.cache[testID])
}

// TestKeepGoingAfterTermination is kubelet 1.37's doProbe step for a terminated container
// (ContainerRestartRules and RestartAllContainersOnContainerExits on): the worker keeps going when
// the container's restart rules and policy, else the pod's, restart it, or while the pod restarts
// all its containers; otherwise it exits. A container that is not running but not terminated
// (waiting) always keeps it going. Every case publishes Failure for the non-running container.
func TestKeepGoingAfterTermination(t *testing.T) {
	never, onFailure := ptr(v1.ContainerRestartPolicyNever), ptr(v1.ContainerRestartPolicyOnFailure)
	rules := func(action v1.ContainerRestartRuleAction, op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) []v1.ContainerRestartRule {
		return []v1.ContainerRestartRule{{Action: action, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}}
	}
	for _, tc := range []struct {
		name       string
		pod        v1.RestartPolicy
		container  *v1.Container
		exit       int32
		terminated bool
		restarting bool
		keepGoing  bool
	}{
		{name: "pod Always", pod: v1.RestartPolicyAlways, terminated: true, keepGoing: true},
		{name: "pod OnFailure, exit 0", pod: v1.RestartPolicyOnFailure, terminated: true},
		{name: "pod OnFailure, exit 1", pod: v1.RestartPolicyOnFailure, exit: 1, terminated: true, keepGoing: true},
		{name: "pod Never", pod: v1.RestartPolicyNever, exit: 1, terminated: true},
		{name: "pod Never, waiting", pod: v1.RestartPolicyNever, exit: 1, keepGoing: true},
		{name: "container Never over pod Always", pod: v1.RestartPolicyAlways, container: &v1.Container{RestartPolicy: never}, terminated: true},
		{name: "container OnFailure over pod Never, exit 2", pod: v1.RestartPolicyNever, container: &v1.Container{RestartPolicy: onFailure},
			exit: 2, terminated: true, keepGoing: true},
		{name: "rule Restart In [42], exit 42", pod: v1.RestartPolicyNever,
			container: &v1.Container{RestartPolicy: never, RestartPolicyRules: rules(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42)},
			exit:      42, terminated: true, keepGoing: true},
		{name: "rule Restart In [42], exit 1", pod: v1.RestartPolicyAlways,
			container: &v1.Container{RestartPolicy: never, RestartPolicyRules: rules(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42)},
			exit:      1, terminated: true},
		{name: "rule RestartAllContainers NotIn [0], exit 9", pod: v1.RestartPolicyNever,
			container: &v1.Container{RestartPolicy: never, RestartPolicyRules: rules(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpNotIn, 0)},
			exit:      9, terminated: true, keepGoing: true},
		{name: "pod Never, but the pod restarts all its containers", pod: v1.RestartPolicyNever, exit: 137, terminated: true, restarting: true, keepGoing: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, Config{Type: messages.Readiness, Spec: spec(0, 0, 0), RestartPolicy: tc.pod, Container: tc.container})
			v := running(true)
			v.Running, v.Terminated, v.ExitCode, v.AllRestarting = false, tc.terminated, tc.exit, tc.restarting
			g.view(v)
			assert.Equal(t, tc.keepGoing, g.doProbe(t0, messages.Success))
			assert.Equal(t, []messages.Result{messages.Failure}, g.results())
		})
	}
}

// TestAContainerThatStartedBeforeTheTreeKeepsItsResult is kubelet 1.37's worker with
// ChangeContainerStatusOnKubeletRestart off: a running container whose start lies more than 10 s
// before the tree's gets no initial value (nothing is published: its status keeps what it had),
// and its first probes count from zero as kubelet's fresh worker does; one that started less than
// 10 s before (or after) the tree, and every container of a tree that does not know its start, gets
// the initial value as before. A container the runtime reports ready or started (Adopted) gets
// Success, whenever it started.
func TestAContainerThatStartedBeforeTheTreeKeepsItsResult(t *testing.T) {
	treeStart := t0.Add(time.Hour)
	for _, pt := range messages.ProbeTypes {
		for _, tc := range []struct {
			name      string
			startedAt time.Time
			treeStart time.Time
			adopted   bool
			want      []messages.Result // written when the worker first sees the container
		}{
			{name: "started an hour before the tree", startedAt: t0, treeStart: treeStart},
			{name: "started 11 s before the tree", startedAt: treeStart.Add(-11 * time.Second), treeStart: treeStart},
			{name: "started 10 s before the tree: within the grace", startedAt: treeStart.Add(-10 * time.Second), treeStart: treeStart,
				want: []messages.Result{InitialValue(pt)}},
			{name: "started after the tree", startedAt: treeStart.Add(time.Minute), treeStart: treeStart, want: []messages.Result{InitialValue(pt)}},
			{name: "no tree start", startedAt: t0, want: []messages.Result{InitialValue(pt)}},
			{name: "adopted before the tree", startedAt: t0, treeStart: treeStart, adopted: true,
				want: map[bool][]messages.Result{true: {messages.Success}, false: nil}[pt != messages.Liveness]}, // liveness adopts nothing: taken over
		} {
			t.Run(pt.String()+"/"+tc.name, func(t *testing.T) {
				g := newRig(t, Config{Type: pt, Spec: spec(0, 3, 0), TreeStart: unixNanos(tc.treeStart)})
				v := running(true)
				v.StartedAt = tc.startedAt
				v.ReportedReady, v.ReportedStarted = tc.adopted, tc.adopted
				g.view(v)
				g.apply(stepOf(g.m, Event{Kind: Started, Now: treeStart.Add(time.Minute)}))
				assert.Equal(t, tc.want, g.results(), "what the first sight of the container writes")
			})
		}
	}

	// Taken over: a readiness probe failing twice (threshold 3) publishes nothing yet, the third
	// publishes Failure; one success (threshold 1) publishes Success.
	g := newRig(t, Config{Type: messages.Readiness, Spec: spec(1, 3, 0), TreeStart: unixNanos(treeStart)})
	v := running(true)
	v.StartedAt = t0
	g.view(v)
	now := treeStart.Add(time.Minute)
	assert.True(t, g.doProbe(now, messages.Failure))
	assert.True(t, g.doProbe(now.Add(time.Second), messages.Failure))
	assert.Empty(t, g.results(), "no result until a threshold is reached")
	assert.True(t, g.doProbe(now.Add(2*time.Second), messages.Failure))
	assert.Equal(t, []messages.Result{messages.Failure}, g.results())
	assert.True(t, g.doProbe(now.Add(3*time.Second), messages.Success))
	assert.Equal(t, []messages.Result{messages.Success}, g.results())

	g = newRig(t, Config{Type: messages.Readiness, Spec: spec(1, 3, 0), TreeStart: unixNanos(treeStart)})
	g.view(v)
	assert.True(t, g.doProbe(now, messages.Success))
	assert.Equal(t, []messages.Result{messages.Success}, g.results(), "a success publishes at once")

	// A later container of the same worker (a restart) is a fresh one: its initial value.
	next := running(true)
	next.ContainerID, next.StartedAt = "test://next", now.Add(5*time.Second)
	g.view(next)
	assert.True(t, g.doProbe(now.Add(6*time.Second), messages.Failure))
	assert.Equal(t, []messages.Result{messages.Failure}, g.results(), "initial Failure (readiness), then a Failure below threshold: one write")
}

func TestTakenOver(t *testing.T) {
	start := t0.Add(time.Hour)
	assert.True(t, TakenOver(true, t0, start))
	assert.False(t, TakenOver(false, t0, start), "a container that is not running is not taken over")
	assert.False(t, TakenOver(true, time.Time{}, start))
	assert.False(t, TakenOver(true, t0, time.Time{}))
	assert.False(t, TakenOver(true, start.Add(-RestartGrace), start), "the grace is exclusive, as kubelet's Before")
	assert.True(t, TakenOver(true, start.Add(-RestartGrace-time.Nanosecond), start))
}

func TestInitialDelay(t *testing.T) {
	for _, pt := range messages.ProbeTypes {
		t.Run(pt.String(), func(t *testing.T) {
			g := newRig(t, Config{Type: pt, Spec: spec(0, 0, 10)})
			v := running(pt != messages.Startup)
			g.view(v)
			require.True(t, g.doProbe(t0.Add(9999*time.Millisecond), messages.Success))
			assert.Equal(t, InitialValue(pt), g.cache[testID], "delay not elapsed: initial value")
			assert.Zero(t, g.probes)
			v.StartedAt = t0.Add(-100 * time.Second)
			g.view(v)
			require.True(t, g.doProbe(t0, messages.Success))
			assert.Equal(t, messages.Success, g.cache[testID])
		})
	}
}

// The Machine reads the spec's delay and thresholds once, at Init: on the probe path the spec is
// another allocation, one more cache miss per probe. With the spec taken away after Init, a
// worker still waits out the delay and counts to its thresholds (a read of the spec would panic).
func TestStepDoesNotReadTheSpec(t *testing.T) {
	g := newRig(t, Config{Type: messages.Liveness, Spec: spec(1, 2, 10)})
	g.m.cfg.Spec = nil
	v := running(true)
	g.view(v)
	require.True(t, g.doProbe(t0.Add(9*time.Second), messages.Failure))
	assert.Zero(t, g.probes, "within the initial delay")
	require.True(t, g.doProbe(t0.Add(10*time.Second), messages.Failure))
	assert.Equal(t, messages.Success, g.cache[testID], "one failure, below the threshold of 2")
	require.True(t, g.doProbe(t0.Add(11*time.Second), messages.Failure))
	assert.Equal(t, messages.Failure, g.cache[testID], "at the threshold")
	assert.Equal(t, 2, g.probes)
}

func TestFailureThreshold(t *testing.T) {
	g := newRig(t, Config{Type: messages.Readiness, Spec: spec(1, 3, 0)})
	g.view(running(true))
	for cycle := 0; cycle < 2; cycle++ {
		for i := 0; i < 3; i++ {
			require.True(t, g.doProbe(t0, messages.Success))
			assert.Equal(t, messages.Success, g.cache[testID], "cycle %d success %d", cycle, i)
		}
		for i := 0; i < 2; i++ {
			require.True(t, g.doProbe(t0, messages.Failure))
			assert.Equal(t, messages.Success, g.cache[testID], "cycle %d failure %d below threshold", cycle, i)
		}
		for i := 0; i < 3; i++ {
			require.True(t, g.doProbe(t0, messages.Failure))
			assert.Equal(t, messages.Failure, g.cache[testID], "cycle %d failure %d at threshold", cycle, i)
		}
	}
}

func TestSuccessThreshold(t *testing.T) {
	g := newRig(t, Config{Type: messages.Readiness, Spec: spec(3, 1, 0)})
	g.view(running(true))
	for cycle := 0; cycle < 2; cycle++ {
		for i := 0; i < 2; i++ {
			require.True(t, g.doProbe(t0, messages.Success))
			assert.Equal(t, messages.Failure, g.cache[testID], "cycle %d success %d below threshold", cycle, i)
		}
		for i := 0; i < 3; i++ {
			require.True(t, g.doProbe(t0, messages.Success))
			assert.Equal(t, messages.Success, g.cache[testID])
		}
		require.True(t, g.doProbe(t0, messages.Failure))
		assert.Equal(t, messages.Failure, g.cache[testID])
	}
}

func TestStartupProbeSuccessThreshold(t *testing.T) {
	g := newRig(t, Config{Type: messages.Startup, Spec: spec(1, 3, 0)})
	g.view(running(false))
	assert.False(t, g.m.OnHold())
	require.True(t, g.doProbe(t0, messages.Success))
	assert.Equal(t, messages.Success, g.cache[testID])
	assert.True(t, g.m.OnHold())
	assert.Equal(t, 0, g.m.ResultRun())
}

func TestStartupProbeFailureThreshold(t *testing.T) {
	g := newRig(t, Config{Type: messages.Startup, Spec: spec(1, 3, 0)})
	g.view(running(false))
	for i := 1; i <= 2; i++ {
		require.True(t, g.doProbe(t0, messages.Failure))
		assert.Equal(t, messages.Unknown, g.cache[testID])
		assert.Equal(t, i, g.m.ResultRun())
	}
	require.True(t, g.doProbe(t0, messages.Failure))
	assert.Equal(t, messages.Failure, g.cache[testID])
	assert.Equal(t, 0, g.m.ResultRun())
	assert.True(t, g.m.OnHold())
}

func TestOnHoldOnLivenessOrStartupCheckFailure(t *testing.T) {
	for _, pt := range []messages.ProbeType{messages.Liveness, messages.Startup} {
		t.Run(pt.String(), func(t *testing.T) {
			g := newRig(t, Config{Type: pt, Spec: spec(1, 1, 0)})
			v := running(pt != messages.Startup)
			g.view(v)
			require.True(t, g.doProbe(t0, messages.Failure))
			assert.Equal(t, messages.Failure, g.cache[testID])
			assert.True(t, g.m.OnHold())
			// Held: a successful prober is not consulted.
			before := g.probes
			require.True(t, g.doProbe(t0, messages.Success))
			assert.Equal(t, before, g.probes)
			assert.Equal(t, messages.Failure, g.cache[testID])
			assert.True(t, g.m.OnHold())
			// New container ID: released, probed again.
			v.ContainerID = "test://newCont_ID"
			g.view(v)
			require.True(t, g.doProbe(t0, messages.Success))
			assert.Equal(t, messages.Success, g.cache["test://newCont_ID"])
			assert.NotContains(t, g.cache, testID, "old container's result removed")
			assert.Equal(t, pt == messages.Startup, g.m.OnHold(), "startup holds after success too")
		})
	}
}

func TestResultRunOnLivenessCheckFailure(t *testing.T) {
	g := newRig(t, Config{Type: messages.Liveness, Spec: spec(1, 3, 0)})
	g.view(running(true))
	for i, s := range []struct {
		res, want messages.Result
		run       int
	}{
		{messages.Success, messages.Success, 1},
		{messages.Failure, messages.Success, 1},
		{messages.Failure, messages.Success, 2},
		{messages.Failure, messages.Failure, 0},
	} {
		require.True(t, g.doProbe(t0, s.res))
		assert.Equal(t, s.want, g.cache[testID], "step %d", i)
		assert.Equal(t, s.run, g.m.ResultRun(), "step %d", i)
	}
}

func TestResultRunOnStartupCheckFailure(t *testing.T) {
	g := newRig(t, Config{Type: messages.Startup, Spec: spec(1, 3, 0)})
	g.view(running(false))
	for i, want := range []struct {
		r   messages.Result
		run int
	}{{messages.Unknown, 1}, {messages.Unknown, 2}, {messages.Failure, 0}} {
		require.True(t, g.doProbe(t0, messages.Failure))
		assert.Equal(t, want.r, g.cache[testID], "step %d", i)
		assert.Equal(t, want.run, g.m.ResultRun(), "step %d", i)
	}
}

func TestLivenessProbeDisabledByStarted(t *testing.T) {
	g := newRig(t, Config{Type: messages.Liveness, Spec: spec(1, 1, 0)})
	g.view(running(false))
	require.True(t, g.doProbe(t0, messages.Failure))
	assert.Equal(t, messages.Success, g.cache[testID], "not probed before started")
	g.view(running(true))
	require.True(t, g.doProbe(t0, messages.Failure))
	assert.Equal(t, messages.Failure, g.cache[testID])
}

func TestStartupProbeDisabledByStarted(t *testing.T) {
	g := newRig(t, Config{Type: messages.Startup, Spec: spec(1, 2, 0)})
	g.view(running(false))
	require.True(t, g.doProbe(t0, messages.Failure))
	assert.Equal(t, messages.Unknown, g.cache[testID])
	require.True(t, g.doProbe(t0, messages.Success))
	assert.Equal(t, messages.Success, g.cache[testID])
	g.view(running(true))
	require.True(t, g.doProbe(t0, messages.Failure))
	assert.Equal(t, messages.Success, g.cache[testID], "not probed once started")
}

// §7.12: a restarted container gets the initial value; resultRun carries over for readiness but is
// 0 after a liveness hold.
func TestContainerRestartCarriesRun(t *testing.T) {
	g := newRig(t, Config{Type: messages.Readiness, Spec: spec(1, 3, 0)})
	v := running(true)
	g.view(v)
	require.True(t, g.doProbe(t0, messages.Failure))
	require.True(t, g.doProbe(t0, messages.Failure))
	assert.Equal(t, 2, g.m.ResultRun())
	v.ContainerID = "test://new"
	g.view(v)
	require.True(t, g.doProbe(t0, messages.Failure))
	assert.Equal(t, 3, g.m.ResultRun(), "run carries over a container change")
	assert.Equal(t, messages.Failure, g.cache["test://new"])
	assert.NotContains(t, g.cache, testID)
}

// adopted is a running container the runtime reports as it was before the tree took it over
// (node re-adopting it after its own restart): ready and started, Started overlaid accordingly.
func adopted(id messages.ContainerID) protocol.ContainerView {
	v := running(true)
	v.ContainerID, v.ReportedReady, v.ReportedStarted = id, true, true
	return v
}

// Kubelet 1.35+ after its own restart (KEP-4781): a container the runtime reports ready (readiness)
// or started (startup) keeps that as its first result instead of the initial value, with no probe
// run, until a probe result changes it; the streaks start from zero. A fresh container (Ready false,
// Started false or unset, as node's runtime reports every container it starts) is unchanged, and so is one
// that is not running whatever it reports.
func TestAdoptedContainer(t *testing.T) {
	const other = messages.ContainerID("test://previous")
	readyOnly := running(true)
	readyOnly.ReportedReady = true
	startedOnly := running(true)
	startedOnly.ReportedStarted = true
	notRunning := adopted(testID)
	notRunning.Running = false
	cases := []struct {
		name string
		pt   messages.ProbeType
		// before: attempts (all Failure) against container "other" first, to build up a streak
		before int
		view   protocol.ContainerView
		probes []messages.Result // attempt results after the container appeared, in order
		want   []messages.Result // cache writes for testID after it appeared
		ran    int               // attempts against testID
	}{
		{name: "readiness adopted: ready until FailureThreshold failures counted from zero",
			pt: messages.Readiness, view: adopted(testID),
			probes: []messages.Result{messages.Failure, messages.Failure, messages.Failure},
			want:   []messages.Result{messages.Success, messages.Failure}, ran: 3},
		{name: "readiness adopted: a success changes nothing",
			pt: messages.Readiness, view: adopted(testID), probes: []messages.Result{messages.Success},
			want: []messages.Result{messages.Success}, ran: 1},
		{name: "readiness adopted after a streak on the previous container: the streak starts afresh",
			pt: messages.Readiness, before: 2, view: adopted(testID),
			probes: []messages.Result{messages.Failure, messages.Failure},
			want:   []messages.Result{messages.Success}, ran: 2},
		{name: "readiness: reported ready only", pt: messages.Readiness, view: readyOnly,
			probes: []messages.Result{messages.Failure}, want: []messages.Result{messages.Success}, ran: 1},
		{name: "readiness: reported started only is a fresh readiness", pt: messages.Readiness, view: startedOnly,
			probes: []messages.Result{messages.Failure}, want: []messages.Result{messages.Failure}, ran: 1},
		{name: "readiness fresh", pt: messages.Readiness, view: running(true),
			probes: []messages.Result{messages.Failure, messages.Success},
			want:   []messages.Result{messages.Failure, messages.Success}, ran: 2},
		{name: "readiness: not running, whatever it reports", pt: messages.Readiness, view: notRunning,
			probes: []messages.Result{messages.Success}, want: []messages.Result{messages.Failure}},
		{name: "startup adopted: started, never probed", pt: messages.Startup, view: adopted(testID),
			probes: []messages.Result{messages.Failure, messages.Failure, messages.Failure},
			want:   []messages.Result{messages.Success}},
		{name: "startup: reported started only", pt: messages.Startup, view: startedOnly,
			probes: []messages.Result{messages.Failure}, want: []messages.Result{messages.Success}},
		{name: "startup: reported ready only (a ready container has started)", pt: messages.Startup, view: readyOnly,
			probes: []messages.Result{messages.Failure}, want: []messages.Result{messages.Success}},
		{name: "startup fresh", pt: messages.Startup, view: running(false),
			probes: []messages.Result{messages.Failure, messages.Failure, messages.Failure},
			want:   []messages.Result{messages.Unknown, messages.Failure}, ran: 3},
		{name: "startup: not running, whatever it reports", pt: messages.Startup, view: notRunning,
			probes: []messages.Result{messages.Success}, want: []messages.Result{messages.Unknown, messages.Failure}},
		{name: "liveness adopted: its initial value, probed at once", pt: messages.Liveness, view: adopted(testID),
			probes: []messages.Result{messages.Failure, messages.Failure, messages.Failure},
			want:   []messages.Result{messages.Success, messages.Failure}, ran: 3},
		{name: "liveness fresh", pt: messages.Liveness, view: running(true),
			probes: []messages.Result{messages.Failure}, want: []messages.Result{messages.Success}, ran: 1},
	}
	for _, tc := range cases {
		t.Run(tc.pt.String()+"/"+tc.name, func(t *testing.T) {
			g := newRig(t, Config{Type: tc.pt, Spec: spec(1, 3, 0)})
			if tc.before > 0 {
				prev := running(true)
				prev.ContainerID = other
				g.view(prev)
				for range tc.before {
					require.True(t, g.doProbe(t0, messages.Failure))
				}
				require.Equal(t, tc.before, g.m.ResultRun())
			}
			g.writes, g.probes = nil, 0
			g.view(tc.view)
			for _, res := range tc.probes {
				g.doProbe(t0, res)
			}
			var got []messages.Result
			for _, op := range g.writes {
				if !op.Remove && op.ContainerID == testID {
					got = append(got, op.Result)
				}
			}
			assert.Equal(t, tc.want, got, "cache writes")
			assert.Equal(t, tc.ran, g.probes, "attempts")
		})
	}
}

// What reaches the cache: only changes for the current container (kubelet's worker calls Set on
// every probe and lets the cache drop repeats).
func TestOnlyChangesAreWritten(t *testing.T) {
	g := newRig(t, Config{Type: messages.Readiness, Spec: spec(1, 1, 0)})
	v := running(true)
	g.view(v)
	g.doProbe(t0, messages.Success)
	assert.Equal(t, []CacheOp{{ContainerID: testID, Result: messages.Failure}, {ContainerID: testID, Result: messages.Success}}, g.writes)
	g.writes = nil
	g.doProbe(t0, messages.Success)
	g.doProbe(t0, messages.Success)
	assert.Empty(t, g.writes, "repeated successes")
	v.ContainerID = "test://c2"
	g.view(v)
	g.doProbe(t0, messages.Success)
	assert.Equal(t, []CacheOp{{Remove: true, ContainerID: testID}, {ContainerID: "test://c2", Result: messages.Failure},
		{ContainerID: "test://c2", Result: messages.Success}}, g.writes)
}

// want is the part of a Ready a row checks.
type want struct {
	cache  []CacheOp
	timer  TimerOp
	wake   time.Duration // since t0, when timer is TimerArm
	start  bool
	cancel bool
	exit   bool
	crash  bool
	label  string // observation label; "" = none
}

func got(r Ready) want {
	w := want{cache: r.Cache(), timer: r.Timer, start: r.StartAttempt, cancel: r.Cancel, exit: r.Exit, crash: r.Crash}
	if len(w.cache) == 0 {
		w.cache = nil
	}
	if r.Timer == TimerArm {
		w.wake = r.WakeAt.Sub(t0)
	}
	if r.Observed {
		w.label = r.Observation.Label
	}
	return w
}

// row is one event and what the machine must answer. attempt: Done/Panicked carry the number of
// the latest started attempt, or of the one before it when stale is set.
type row struct {
	name  string
	ev    Event
	at    time.Duration
	stale bool
	want  want
}

func set(r messages.Result) CacheOp { return CacheOp{ContainerID: testID, Result: r} }

var (
	ok     = &Verdict{Result: messages.Success}
	failed = &Verdict{Result: messages.Failure}
	boom   = &Verdict{Result: messages.Failure, Err: errors.New("boom")}
)

// runRows feeds rows to a fresh liveness machine (period 10 s, threshold 1) that sees a running,
// started container, and checks every answer.
func runRows(t *testing.T, rows []row) *Machine {
	m := New(Config{Type: messages.Liveness, Spec: spec(1, 1, 0), Period: 10 * time.Second})
	stepOf(m, Event{Kind: View, View: ptr(running(true))})
	var latest, previous uint32
	for i, r := range rows {
		ev := r.ev
		ev.Now = t0.Add(r.at)
		if ev.Kind == Done || ev.Kind == Panicked {
			ev.Attempt = latest
			if r.stale {
				ev.Attempt = previous
			}
		}
		res := stepOf(m, ev)
		if res.StartAttempt {
			previous, latest = latest, res.Attempt.Attempt
			assert.Equal(t, testID, res.Attempt.ContainerID, "row %d %s", i, r.name)
		}
		assert.Equal(t, r.want, got(res), "row %d: %s", i, r.name)
	}
	return m
}

func TestRunLoop(t *testing.T) {
	s := time.Second
	tests := map[string][]row{
		"first run after jitter, then the period": {
			{name: "start", ev: Event{Kind: Started, Jitter: 3 * s}, want: want{timer: TimerArm, wake: 3 * s}},
			{name: "jitter over", ev: Event{Kind: Tick}, at: 3 * s,
				want: want{timer: TimerArm, wake: 13 * s, start: true, cache: []CacheOp{set(messages.Success)}}},
			{name: "done", ev: Event{Kind: Done, Verdict: ok}, at: 4 * s, want: want{label: LabelSuccessful}},
			{name: "next tick", ev: Event{Kind: Tick}, at: 13 * s, want: want{timer: TimerArm, wake: 23 * s, start: true}},
		},
		"ticks while an attempt overruns coalesce into one run": {
			{name: "start", ev: Event{Kind: Started}, want: want{timer: TimerArm, wake: 10 * s, start: true, cache: []CacheOp{set(messages.Success)}}},
			{name: "tick 1", ev: Event{Kind: Tick}, at: 10 * s, want: want{timer: TimerArm, wake: 20 * s}},
			{name: "tick 2", ev: Event{Kind: Tick}, at: 20 * s, want: want{timer: TimerArm, wake: 30 * s}},
			{name: "done: one catch-up run", ev: Event{Kind: Done, Verdict: ok}, at: 25 * s, want: want{start: true, label: LabelSuccessful}},
			{name: "done: no burst", ev: Event{Kind: Done, Verdict: ok}, at: 26 * s, want: want{label: LabelSuccessful}},
			{name: "a late timer skips missed deadlines", ev: Event{Kind: Tick}, at: 45 * s, want: want{timer: TimerArm, wake: 50 * s, start: true}},
		},
		"a trigger runs now and restarts the period; two while busy run once": {
			{name: "start", ev: Event{Kind: Started}, want: want{timer: TimerArm, wake: 10 * s, start: true, cache: []CacheOp{set(messages.Success)}}},
			{name: "done", ev: Event{Kind: Done, Verdict: ok}, want: want{label: LabelSuccessful}},
			{name: "trigger", ev: Event{Kind: Trigger}, at: 4 * s, want: want{timer: TimerArm, wake: 14 * s, start: true}},
			{name: "trigger while busy", ev: Event{Kind: Trigger}, at: 5 * s},
			{name: "and another", ev: Event{Kind: Trigger}, at: 5 * s},
			{name: "done: the remembered trigger runs", ev: Event{Kind: Done, Verdict: ok}, at: 6 * s,
				want: want{timer: TimerArm, wake: 16 * s, start: true, label: LabelSuccessful}},
			{name: "done", ev: Event{Kind: Done, Verdict: ok}, at: 6 * s, want: want{label: LabelSuccessful}},
		},
		"a trigger during the jitter sleep waits for the first run": {
			{name: "start", ev: Event{Kind: Started, Jitter: 5 * s}, want: want{timer: TimerArm, wake: 5 * s}},
			{name: "trigger", ev: Event{Kind: Trigger}, at: s},
			{name: "first run", ev: Event{Kind: Tick}, at: 5 * s, want: want{timer: TimerArm, wake: 15 * s, start: true, cache: []CacheOp{set(messages.Success)}}},
			{name: "done: triggered run", ev: Event{Kind: Done, Verdict: ok}, at: 6 * s, want: want{timer: TimerArm, wake: 16 * s, start: true, label: LabelSuccessful}},
		},
		"a trigger absorbs a remembered tick": {
			{name: "start", ev: Event{Kind: Started}, want: want{timer: TimerArm, wake: 10 * s, start: true, cache: []CacheOp{set(messages.Success)}}},
			{name: "tick while busy", ev: Event{Kind: Tick}, at: 10 * s, want: want{timer: TimerArm, wake: 20 * s}},
			{name: "trigger while busy", ev: Event{Kind: Trigger}, at: 11 * s},
			{name: "done: one run", ev: Event{Kind: Done, Verdict: ok}, at: 12 * s, want: want{timer: TimerArm, wake: 22 * s, start: true, label: LabelSuccessful}},
			{name: "done: nothing left", ev: Event{Kind: Done, Verdict: ok}, at: 12 * s, want: want{label: LabelSuccessful}},
		},
		"stale ticks": {
			{name: "start", ev: Event{Kind: Started}, want: want{timer: TimerArm, wake: 10 * s, start: true, cache: []CacheOp{set(messages.Success)}}},
			{name: "done", ev: Event{Kind: Done, Verdict: ok}, want: want{label: LabelSuccessful}},
			{name: "trigger re-arms for 14 s", ev: Event{Kind: Trigger}, at: 4 * s, want: want{timer: TimerArm, wake: 14 * s, start: true}},
			{name: "done", ev: Event{Kind: Done, Verdict: ok}, at: 4 * s, want: want{label: LabelSuccessful}},
			{name: "the 10 s entry fired before it was re-armed", ev: Event{Kind: Tick}, at: 10 * s},
			{name: "the 14 s tick", ev: Event{Kind: Tick}, at: 14 * s, want: want{timer: TimerArm, wake: 24 * s, start: true}},
		},
		"stale verdicts": {
			{name: "start", ev: Event{Kind: Started}, want: want{timer: TimerArm, wake: 10 * s, start: true, cache: []CacheOp{set(messages.Success)}}},
			{name: "panic in another message: restarting abandons the attempt", ev: Event{Kind: Restarting}, at: s,
				want: want{cancel: true, timer: TimerStop}},
			{name: "restarted: probes at once", ev: Event{Kind: Started}, at: 2 * s, want: want{timer: TimerArm, wake: 12 * s, start: true}},
			{name: "the abandoned attempt's verdict", ev: Event{Kind: Done, Verdict: failed}, at: 2 * s, stale: true},
			{name: "its panic", ev: Event{Kind: Panicked}, at: 2 * s, stale: true},
			{name: "the current one fails: kill", ev: Event{Kind: Done, Verdict: failed}, at: 3 * s,
				want: want{cache: []CacheOp{set(messages.Failure)}, label: LabelFailed}},
			{name: "a duplicate verdict", ev: Event{Kind: Done, Verdict: ok}, at: 3 * s},
		},
		"restart keeps counters and the tracked container": {
			{name: "start", ev: Event{Kind: Started}, want: want{timer: TimerArm, wake: 10 * s, start: true, cache: []CacheOp{set(messages.Success)}}},
			{name: "prober panicked", ev: Event{Kind: Panicked}, at: s, want: want{crash: true}},
			{name: "restarting", ev: Event{Kind: Restarting}, at: s, want: want{cancel: true, timer: TimerStop}},
			{name: "tick while down", ev: Event{Kind: Tick}, at: 10 * s},
			{name: "restarted", ev: Event{Kind: Started}, at: 11 * s, want: want{timer: TimerArm, wake: 21 * s, start: true}},
			{name: "done", ev: Event{Kind: Done, Verdict: failed}, at: 11 * s, want: want{cache: []CacheOp{set(messages.Failure)}, label: LabelFailed}},
		},
		"an errored attempt is discarded and counted as unknown": {
			{name: "start", ev: Event{Kind: Started}, want: want{timer: TimerArm, wake: 10 * s, start: true, cache: []CacheOp{set(messages.Success)}}},
			{name: "errored", ev: Event{Kind: Done, Verdict: boom}, at: s, want: want{label: LabelUnknown}},
			{name: "again", ev: Event{Kind: Tick}, at: 10 * s, want: want{timer: TimerArm, wake: 20 * s, start: true}},
			{name: "errored again: the result stands", ev: Event{Kind: Done, Verdict: boom}, at: 11 * s, want: want{label: LabelUnknown}},
		},
		"stopping cancels the attempt and removes the result": {
			{name: "start", ev: Event{Kind: Started}, want: want{timer: TimerArm, wake: 10 * s, start: true, cache: []CacheOp{set(messages.Success)}}},
			{name: "stopping", ev: Event{Kind: Stopping}, at: s,
				want: want{cancel: true, timer: TimerStop, cache: []CacheOp{{Remove: true, ContainerID: testID}}}},
			{name: "its verdict is stale", ev: Event{Kind: Done, Verdict: failed}, at: s, stale: true},
		},
		"terminal phase: exit and ignore what follows": {
			{name: "start", ev: Event{Kind: Started}, want: want{timer: TimerArm, wake: 10 * s, start: true, cache: []CacheOp{set(messages.Success)}}},
			{name: "pod succeeded", ev: Event{Kind: View, View: &protocol.ContainerView{PodStatusKnown: true, Phase: v1.PodSucceeded}}, at: s},
			{name: "done: the next run exits", ev: Event{Kind: Trigger}, at: 2 * s},
			{name: "verdict: the remembered trigger runs and exits", ev: Event{Kind: Done, Verdict: ok}, at: 2 * s,
				want: want{timer: TimerStop, exit: true, label: LabelSuccessful}},
			{name: "tick after exit", ev: Event{Kind: Tick}, at: 10 * s},
			{name: "trigger after exit", ev: Event{Kind: Trigger}, at: 10 * s},
			{name: "stopping", ev: Event{Kind: Stopping}, at: 11 * s,
				want: want{timer: TimerStop, cache: []CacheOp{{Remove: true, ContainerID: testID}}}},
		},
	}
	for name, rows := range tests {
		t.Run(name, func(t *testing.T) { runRows(t, rows) })
	}
}

func TestRestartAfterGiveUpOfAttemptKeepsState(t *testing.T) {
	m := runRows(t, []row{
		{name: "start", ev: Event{Kind: Started}, want: want{timer: TimerArm, wake: 10 * time.Second, start: true, cache: []CacheOp{set(messages.Success)}}},
		{name: "fail", ev: Event{Kind: Done, Verdict: failed}, want: want{cache: []CacheOp{set(messages.Failure)}, label: LabelFailed}},
	})
	assert.True(t, m.OnHold())
	stepOf(m, Event{Kind: Restarting, Now: t0})
	stepOf(m, Event{Kind: Started, Now: t0})
	assert.True(t, m.OnHold(), "the hold survives a restart")
	assert.Equal(t, testID, m.ContainerID())
	assert.False(t, m.Busy(), "held: no attempt")
}

func TestJitter(t *testing.T) {
	half := func() float64 { return 0.5 }
	assert.Equal(t, 5*time.Second, Jitter(t0.Add(9*time.Second), t0, 0, 10*time.Second, half))
	assert.Zero(t, Jitter(t0.Add(10*time.Second), t0, 0, 10*time.Second, half), "created a period after start")
	assert.Zero(t, Jitter(t0, t0, 0, 10*time.Second, nil))
	assert.Zero(t, Jitter(t0.Add(10*time.Second), t0, 5*time.Second, 10*time.Second, half),
		"a window shorter than the period is the period")
	assert.Equal(t, 5*time.Second, Jitter(t0.Add(time.Minute), t0, time.Hour, 10*time.Second, half),
		"created within the window")
	assert.Zero(t, Jitter(t0.Add(time.Hour), t0, time.Hour, 10*time.Second, half), "created after the window")
}

func TestMetricResult(t *testing.T) {
	for _, tc := range []struct {
		r     messages.Result
		label string
		timed bool
	}{
		{messages.Success, "successful", true},
		{messages.Failure, "failed", false},
		{messages.Unknown, "unknown", true},
	} {
		label, timed := MetricResult(tc.r)
		assert.Equal(t, tc.label, label, tc.r.String())
		assert.Equal(t, tc.timed, timed, tc.r.String())
	}
}

func TestStepDoesNotAllocate(t *testing.T) {
	m := New(Config{Type: messages.Liveness, Spec: spec(1, 1, 0), Period: time.Second})
	stepOf(m, Event{Kind: View, View: ptr(running(true))})
	r := stepOf(m, Event{Kind: Started, Now: t0})
	now := t0
	allocs := testing.AllocsPerRun(100, func() {
		now = now.Add(time.Second)
		r = stepOf(m, Event{Kind: Tick, Now: now})
		r = stepOf(m, Event{Kind: Done, Now: now, Attempt: r.Attempt.Attempt, Verdict: ok})
	})
	assert.Zero(t, allocs)
}

// TestAttemptStartIsWhenItsRunBegan: an attempt's AttemptStart.At is the Now of the event whose
// doProbe run started it (kubelet's startTime: a tick, a trigger, Started, or the Done of the
// attempt before it when a trigger arrived meanwhile), which the shell times the attempt from; the
// Done's Duration is what prober_probe_duration_seconds observes, for successes only among
// completed verdicts (failures and errors are counted, not timed).
func TestAttemptStartIsWhenItsRunBegan(t *testing.T) {
	ms := time.Millisecond
	m := New(Config{Type: messages.Liveness, Spec: spec(1, 3, 0), Period: 10 * time.Second})
	stepOf(m, Event{Kind: View, View: ptr(running(true))})
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	startedAt := func(ev Event) time.Time {
		t.Helper()
		r := stepOf(m, ev)
		require.True(t, r.StartAttempt, "%v starts an attempt", ev.Kind)
		return r.Attempt.At
	}
	done := func(now time.Time, v *Verdict, took time.Duration) Ready {
		return stepOf(m, Event{Kind: Done, Now: now, Attempt: m.attempt, Verdict: v, Duration: took})
	}

	assert.Equal(t, at(0), startedAt(Event{Kind: Started, Now: at(0)}))
	assert.Equal(t, Observation{Label: LabelSuccessful, Timed: true, Duration: 1500 * ms},
		done(at(1500*ms), ok, 1500*ms).Observation)

	assert.Equal(t, at(10*time.Second), startedAt(Event{Kind: Tick, Now: at(10 * time.Second)}))
	assert.False(t, stepOf(m, Event{Kind: Trigger, Now: at(10*time.Second + 200*ms)}).StartAttempt, "busy: remembered")
	r := done(at(10*time.Second+700*ms), ok, 700*ms)
	require.True(t, r.StartAttempt, "the remembered trigger runs at the Done")
	assert.Equal(t, at(10*time.Second+700*ms), r.Attempt.At)

	assert.Equal(t, LabelSuccessful, done(at(10*time.Second+750*ms), ok, 50*ms).Observation.Label)
	assert.Equal(t, at(11*time.Second), startedAt(Event{Kind: Trigger, Now: at(11 * time.Second)}))
	f := done(at(11*time.Second+10*ms), failed, 10*ms).Observation
	assert.Equal(t, LabelFailed, f.Label)
	assert.False(t, f.Timed, "a failure is counted, not timed (kubelet)")
	assert.Equal(t, at(12*time.Second), startedAt(Event{Kind: Trigger, Now: at(12 * time.Second)}))
	assert.Equal(t, Observation{Label: LabelUnknown}, done(at(13*time.Second), boom, time.Second).Observation,
		"an errored attempt is counted, not timed")
}

// unixNanos is Config.TreeStart for t (0 for the zero time: none).
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
