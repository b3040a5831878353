package proc

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// The three decisions of podState.decide, each from a table of container states. A state is a few
// words: "" (never started), "running", "running unstarted" (a sidecar whose startup probe has not
// passed), "exited N" (exit code N, a second ago), plus "backoff" (it was restarted before, so the
// next restart waits) or "killed" (a probe killed it for a restart).

var decideNow = t0.Add(time.Hour)

// stated returns a podState for pod with its containers put in states.
func stated(t *testing.T, pod *v1.Pod, states map[string]string) *podState {
	t.Helper()
	p := newPodState(pod, t0, 10*time.Second, 40*time.Second)
	for name, state := range states {
		c, ok := p.byName[name]
		require.True(t, ok, "no container %q", name)
		words := strings.Fields(state)
		for i := 0; i < len(words); i++ {
			switch words[i] {
			case "running":
				c.current = &instance{id: "proc://" + name, startedAt: decideNow.Add(-time.Minute)}
				c.started = true
			case "unstarted":
				c.started = false
			case "exited":
				i++
				code, err := strconv.Atoi(words[i])
				require.NoError(t, err, state)
				c.current = &instance{id: "proc://" + name, startedAt: decideNow.Add(-time.Minute), exited: true,
					exit: exitStatus{Code: int32(code), FinishedAt: decideNow.Add(-time.Second)}}
				c.started = true
			case "backoff":
				c.backoff.next(c.current.exit.FinishedAt, c.current.exit.FinishedAt) // the previous restart
			case "killed":
				c.forceRestart = true
			case "fenced": // the exit was the cluster lease's (its shim fenced it)
				c.current.exit.Reason = ReasonFenced
			default:
				t.Fatalf("unknown state word %q in %q", words[i], state)
			}
		}
	}
	return p
}

func reasons(pl plan) []string {
	var out []string
	for _, e := range pl.Events {
		out = append(out, e.Reason+" "+e.Container)
	}
	return out
}

func inits(names ...string) []v1.Container {
	var out []v1.Container
	for _, n := range names {
		if side, ok := strings.CutPrefix(n, "side:"); ok {
			out = append(out, sidecar(side))
		} else {
			out = append(out, v1.Container{Name: n, Command: []string{"x"}})
		}
	}
	return out
}

// want is a decision's expected plan.
type want struct {
	start, stop []string
	wakeIn      time.Duration // WakeAt - decideNow; 0: no wake-up
	events      []string      // "Reason container"
}

func (w want) check(t *testing.T, pl plan) {
	t.Helper()
	assert.Equal(t, w.start, pl.Start, "start")
	assert.Equal(t, w.stop, pl.Stop, "stop")
	if w.wakeIn == 0 {
		assert.True(t, pl.WakeAt.IsZero(), "no wake-up, got %v", pl.WakeAt)
	} else {
		assert.Equal(t, decideNow.Add(w.wakeIn), pl.WakeAt, "wake-up")
	}
	assert.Equal(t, w.events, reasons(pl), "events")
}

func TestDecideInit(t *testing.T) {
	cases := []struct {
		name       string
		policy     v1.RestartPolicy
		inits      []string // "side:" prefix: a sidecar
		states     map[string]string
		initFailed bool // already failed before this decision
		complete   bool
		failed     bool // initFailed afterwards
		want       want
	}{
		{name: "no init containers", complete: true},
		{name: "the first starts first", inits: []string{"i1", "i2"}, want: want{start: []string{"i1"}}},
		{name: "one at a time", inits: []string{"i1", "i2"}, states: map[string]string{"i1": "running"}},
		{name: "the next after a success", inits: []string{"i1", "i2"}, states: map[string]string{"i1": "exited 0"}, want: want{start: []string{"i2"}}},
		{name: "all succeeded", inits: []string{"i1", "i2"}, states: map[string]string{"i1": "exited 0", "i2": "exited 0"}, complete: true},
		{name: "a failure is retried under Always", policy: v1.RestartPolicyAlways, inits: []string{"i1"}, states: map[string]string{"i1": "exited 1"}, want: want{start: []string{"i1"}}},
		{name: "a failure is retried under OnFailure", policy: v1.RestartPolicyOnFailure, inits: []string{"i1"}, states: map[string]string{"i1": "exited 1"}, want: want{start: []string{"i1"}}},
		{name: "a retry waits out its back-off", policy: v1.RestartPolicyAlways, inits: []string{"i1"}, states: map[string]string{"i1": "exited 1 backoff"},
			want: want{wakeIn: 9 * time.Second, events: []string{"BackOff i1"}}},
		{name: "a failure under Never fails the pod and stops its sidecar", policy: v1.RestartPolicyNever, inits: []string{"side:s", "i1"},
			states: map[string]string{"s": "running", "i1": "exited 1"}, failed: true, want: want{stop: []string{"s"}}},
		{name: "a probe kill is restarted even under Never", policy: v1.RestartPolicyNever, inits: []string{"i1"}, states: map[string]string{"i1": "exited 1 killed"}, want: want{start: []string{"i1"}}},
		{name: "a failed pod stops whatever still runs", policy: v1.RestartPolicyNever, inits: []string{"side:s", "i1"},
			states: map[string]string{"s": "running", "i1": "exited 1", "app": "running"}, initFailed: true, failed: true, want: want{stop: []string{"s", "app"}}},
		{name: "a sidecar starts before the next init", inits: []string{"side:s", "i1"}, want: want{start: []string{"s"}}},
		{name: "a sidecar's startup probe holds the next init", inits: []string{"side:s", "i1"}, states: map[string]string{"s": "running unstarted"}},
		{name: "a started sidecar lets the next init start", inits: []string{"side:s", "i1"}, states: map[string]string{"s": "running"}, want: want{start: []string{"i1"}}},
		{name: "sidecars only: complete once started", inits: []string{"side:s"}, states: map[string]string{"s": "running"}, complete: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := stated(t, testPod(tc.policy, inits(tc.inits...), "app"), tc.states)
			p.initFailed = tc.initFailed
			var pl plan
			assert.Equal(t, tc.complete, p.decideInit(decideNow, &pl), "complete")
			assert.Equal(t, tc.failed, p.initFailed, "initFailed")
			tc.want.check(t, pl)
		})
	}
}

func TestDecideApps(t *testing.T) {
	cases := []struct {
		name   string
		policy v1.RestartPolicy
		states map[string]string // containers "a" and "b"
		active bool
		want   want
	}{
		{name: "not started yet", active: true, want: want{start: []string{"a", "b"}}},
		{name: "running", states: map[string]string{"a": "running", "b": "running"}, active: true},
		{name: "Always restarts a success", policy: v1.RestartPolicyAlways, states: map[string]string{"a": "exited 0", "b": "running"}, active: true, want: want{start: []string{"a"}}},
		{name: "OnFailure keeps a success", policy: v1.RestartPolicyOnFailure, states: map[string]string{"a": "exited 0", "b": "exited 0"}},
		{name: "OnFailure restarts a failure", policy: v1.RestartPolicyOnFailure, states: map[string]string{"a": "exited 0", "b": "exited 2"}, active: true, want: want{start: []string{"b"}}},
		{name: "Never keeps a failure", policy: v1.RestartPolicyNever, states: map[string]string{"a": "exited 1", "b": "exited 0"}},
		{name: "Never: one still running keeps the app active", policy: v1.RestartPolicyNever, states: map[string]string{"a": "exited 1", "b": "running"}, active: true},
		{name: "a probe kill restarts under Never", policy: v1.RestartPolicyNever, states: map[string]string{"a": "exited 0 killed", "b": "exited 0"}, active: true, want: want{start: []string{"a"}}},
		{name: "CrashLoopBackOff waits and wakes at the earliest", policy: v1.RestartPolicyAlways, states: map[string]string{"a": "exited 1 backoff", "b": "exited 1 backoff"}, active: true,
			want: want{wakeIn: 9 * time.Second, events: []string{"BackOff a", "BackOff b"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := stated(t, testPod(tc.policy, nil, "a", "b"), tc.states)
			var pl plan
			assert.Equal(t, tc.active, p.decideApps(decideNow, &pl), "app active")
			tc.want.check(t, pl)
		})
	}
	t.Run("BackOff is announced once per exit", func(t *testing.T) {
		p := stated(t, testPod(v1.RestartPolicyAlways, nil, "a", "b"), map[string]string{"a": "exited 1 backoff", "b": "running"})
		var first, second plan
		p.decideApps(decideNow, &first)
		p.decideApps(decideNow.Add(time.Second), &second)
		assert.Equal(t, []string{"BackOff a"}, reasons(first))
		assert.Empty(t, second.Events)
		assert.Equal(t, decideNow.Add(9*time.Second), second.WakeAt, "still waiting for the same expiry")
	})
}

func TestDecideSidecars(t *testing.T) {
	t.Run("during init", func(t *testing.T) {
		cases := []struct {
			name   string
			policy v1.RestartPolicy
			states map[string]string // sidecar "s", app "app"
			next   bool
			want   want
		}{
			{name: "not started: start it, wait", want: want{start: []string{"s"}}},
			{name: "startup probe pending: wait", states: map[string]string{"s": "running unstarted"}},
			{name: "started: go on", states: map[string]string{"s": "running"}, next: true},
			{name: "exited: restarted even under Never", policy: v1.RestartPolicyNever, states: map[string]string{"s": "exited 0"}, want: want{start: []string{"s"}}},
			{name: "exited in back-off: wait", states: map[string]string{"s": "exited 1 backoff"}, want: want{wakeIn: 9 * time.Second, events: []string{"BackOff s"}}},
			{name: "exited after the app started: left to decideSidecars", states: map[string]string{"s": "exited 1", "app": "running"}, next: true},
			{name: "unstarted after the app started: go on", states: map[string]string{"s": "running unstarted", "app": "exited 0"}, next: true},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				p := stated(t, testPod(tc.policy, inits("side:s"), "app"), tc.states)
				var pl plan
				assert.Equal(t, tc.next, p.decideSidecarDuringInit(p.byName["s"], decideNow, &pl), "next")
				tc.want.check(t, pl)
			})
		}
	})
	t.Run("after init", func(t *testing.T) {
		cases := []struct {
			name      string
			states    map[string]string // sidecars "s1", "s2"
			appActive bool
			want      want
		}{
			{name: "running with the app: nothing to do", states: map[string]string{"s1": "running", "s2": "running"}, appActive: true},
			{name: "exited while the app runs: restarted", states: map[string]string{"s1": "exited 0", "s2": "running"}, appActive: true, want: want{start: []string{"s1"}}},
			{name: "crash-looping while the app runs: backs off", states: map[string]string{"s1": "exited 1 backoff", "s2": "running"}, appActive: true,
				want: want{wakeIn: 9 * time.Second, events: []string{"BackOff s1"}}},
			{name: "the app is done: running sidecars stop", states: map[string]string{"s1": "running", "s2": "exited 0"}, want: want{stop: []string{"s1"}}},
			{name: "the app is done: an exited sidecar stays down, no BackOff", states: map[string]string{"s1": "exited 1 backoff", "s2": "exited 143"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				p := stated(t, testPod(v1.RestartPolicyNever, inits("side:s1", "side:s2"), "app"), tc.states)
				var pl plan
				p.decideSidecars(decideNow, tc.appActive, &pl)
				tc.want.check(t, pl)
			})
		}
	})
}

// While node's cluster lease has run out (decide's fenced input) nothing starts: each container
// that would start now waits, Waiting/Fenced, without spending a back-off step; stops and back-off
// go on as ever. The same state with the lease held again starts them.
// A container its shim fenced (the member's lease ran out while its node was away) and that a next
// node adopted under a lease again restarts at once: the cluster, not the container, ended it, so
// no back-off step is spent or waited for, even in the middle of a back-off; its restart counts.
func TestAFencedExitRestartsWithoutBackOff(t *testing.T) {
	for _, state := range []string{"exited 143 fenced", "exited 143 backoff fenced"} {
		p := stated(t, testPod(v1.RestartPolicyAlways, nil, "app"), map[string]string{"app": state})
		before := p.containers[0].backoff.current
		pl := p.decide(decideNow, false, false)
		assert.Equal(t, []string{"app"}, pl.Start, state)
		assert.Empty(t, reasons(pl), "%s: no BackOff", state)
		assert.Equal(t, before, p.containers[0].backoff.current, "%s: no back-off step spent", state)
	}
	p := stated(t, testPod(v1.RestartPolicyAlways, nil, "app"), map[string]string{"app": "exited 1 backoff"})
	assert.Empty(t, p.decide(decideNow, false, false).Start, "an exit of the container's own still backs off")
}

func TestDecideWhileFenced(t *testing.T) {
	cases := []struct {
		name   string
		policy v1.RestartPolicy
		inits  []string // "side:" prefix: a sidecar
		states map[string]string
		want   want     // the fenced decision
		fenced []string // shown Waiting, Fenced
		later  []string // started once the lease is held again
	}{
		{name: "a first start waits", fenced: []string{"app"}, later: []string{"app"}},
		{name: "an init container waits", inits: []string{"i1"}, fenced: []string{"i1"}, later: []string{"i1"}},
		{name: "a sidecar waits", inits: []string{"side:s"}, fenced: []string{"s"}, later: []string{"s"}},
		{name: "a restart under Always waits", policy: v1.RestartPolicyAlways, states: map[string]string{"app": "exited 0"},
			fenced: []string{"app"}, later: []string{"app"}},
		{name: "a failed init container's restart waits", policy: v1.RestartPolicyOnFailure, inits: []string{"i1"}, states: map[string]string{"i1": "exited 1"},
			fenced: []string{"i1"}, later: []string{"i1"}},
		{name: "a sidecar's restart while the app runs waits", inits: []string{"side:s"}, states: map[string]string{"s": "exited 1", "app": "running"},
			fenced: []string{"s"}, later: []string{"s"}},
		{name: "a probe kill's restart under Never waits", policy: v1.RestartPolicyNever, states: map[string]string{"app": "exited 0 killed"},
			fenced: []string{"app"}, later: []string{"app"}},
		{name: "a back-off still runs its course", policy: v1.RestartPolicyAlways, states: map[string]string{"app": "exited 1 backoff"},
			want: want{wakeIn: 9 * time.Second, events: []string{"BackOff app"}}},
		{name: "sidecars still stop once the app is done", policy: v1.RestartPolicyNever, inits: []string{"side:s"}, states: map[string]string{"s": "running", "app": "exited 0"},
			want: want{stop: []string{"s"}}},
		{name: "running containers are left alone", states: map[string]string{"app": "running"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := stated(t, testPod(tc.policy, inits(tc.inits...), "app"), tc.states)
			tc.want.check(t, p.decide(decideNow, true, false))
			for _, c := range p.containers {
				cs := p.containerStatus(c, !p.initDone())
				if slices.Contains(tc.fenced, c.spec.Name) {
					require.NotNil(t, cs.State.Waiting, c.spec.Name)
					assert.Equal(t, ReasonFenced, cs.State.Waiting.Reason, c.spec.Name)
					assert.Equal(t, "the node's cluster lease ran out: no container of this pod starts here again; the cluster places the pod anew", cs.State.Waiting.Message)
					if c.current != nil {
						assert.Equal(t, c.current.id, cs.LastTerminationState.Terminated.ContainerID, "the dead instance is lastState")
						assert.Zero(t, c.backoff.current, "no back-off step spent on a start that did not happen")
					}
				} else {
					assert.False(t, cs.State.Waiting != nil && cs.State.Waiting.Reason == ReasonFenced, "%s: %+v", c.spec.Name, cs.State)
				}
			}

			again := p.decide(decideNow, false, false)
			assert.Equal(t, tc.later, again.Start, "the lease held again")
			for _, c := range p.containers {
				assert.False(t, c.fenced, "%s: fenced no more", c.spec.Name)
			}
		})
	}
}
