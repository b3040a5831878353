package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

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
func running(started bool) messages.ContainerView {
	return messages.ContainerView{PodStatusKnown: true, Phase: v1.PodRunning, Found: true, ContainerID: testID,
		Running: true, StartedAt: t0, Started: started}
}

// step runs one doProbe: Begin and, if it asks, Complete with res. It returns keepGoing and the
// results published.
func step(c *Core, now time.Time, res messages.Result) (bool, []messages.Result) {
	d := c.Begin(now)
	set := d.Set
	if d.Exit {
		return false, set
	}
	if d.Probe {
		d2 := c.Complete(res, false)
		set = append(set, d2.Set...)
	}
	return true, set
}

// cache applies published results like results.Manager (last write wins).
type cache map[messages.ContainerID]messages.Result

func (m cache) apply(d Decision) {
	if d.RemoveID != "" {
		delete(m, d.RemoveID)
	}
	for _, r := range d.Set {
		m[d.ContainerID] = r
	}
}

func doProbe(c *Core, m cache, now time.Time, res messages.Result) bool {
	d := c.Begin(now)
	m.apply(d)
	if d.Exit {
		return false
	}
	if d.Probe {
		m.apply(c.Complete(res, false))
	}
	return true
}

func TestDoProbe(t *testing.T) {
	for _, pt := range messages.ProbeTypes {
		st := running(pt != messages.Startup)
		terminated := st
		terminated.Running, terminated.Terminated = false, true
		waiting := st
		waiting.Running = false
		otherName := messages.ContainerView{PodStatusKnown: true, Phase: v1.PodRunning}
		failed := st
		failed.Phase = v1.PodFailed
		cases := []struct {
			name      string
			view      messages.ContainerView
			deleting  bool
			delay     int32
			keepGoing bool
			want      []messages.Result
		}{
			{name: "no pod status", view: messages.ContainerView{}, keepGoing: true},
			{name: "pod failed", view: failed, keepGoing: false},
			{name: "deleting", view: st, deleting: true, keepGoing: pt == messages.Readiness,
				want: []messages.Result{InitialValue(pt), messages.Success}},
			{name: "container not found", view: otherName, keepGoing: true},
			{name: "waiting", view: waiting, keepGoing: true, want: []messages.Result{InitialValue(pt), messages.Failure}},
			{name: "terminated never restart", view: terminated, keepGoing: false, want: []messages.Result{InitialValue(pt), messages.Failure}},
			{name: "probe success", view: st, keepGoing: true, want: []messages.Result{InitialValue(pt), messages.Success}},
			{name: "negative initial delay", view: st, delay: -100, keepGoing: true, want: []messages.Result{InitialValue(pt), messages.Success}},
		}
		for _, tc := range cases {
			t.Run(pt.String()+"/"+tc.name, func(t *testing.T) {
				c := New(Config{Type: pt, Spec: spec(0, 0, tc.delay), RestartNever: true, Deleting: tc.deleting})
				c.SetView(tc.view)
				keep, set := step(c, t0, messages.Success)
				assert.Equal(t, tc.keepGoing, keep)
				assert.Equal(t, tc.want, set)
			})
		}
	}
}

func TestSidecarTerminatedKeepsGoing(t *testing.T) {
	c := New(Config{Type: messages.Readiness, Spec: spec(0, 0, 0), RestartNever: true, Sidecar: true})
	v := running(true)
	v.Running, v.Terminated = false, true
	c.SetView(v)
	keep, set := step(c, t0, messages.Success)
	assert.True(t, keep)
	assert.Equal(t, []messages.Result{messages.Failure, messages.Failure}, set)
}

func TestInitialDelay(t *testing.T) {
	for _, pt := range messages.ProbeTypes {
		t.Run(pt.String(), func(t *testing.T) {
			c := New(Config{Type: pt, Spec: spec(0, 0, 10)})
			v := running(pt != messages.Startup)
			v.StartedAt = t0
			c.SetView(v)
			m := cache{}
			require.True(t, doProbe(c, m, t0.Add(9999*time.Millisecond), messages.Success))
			assert.Equal(t, InitialValue(pt), m[testID], "delay not elapsed: initial value")
			v.StartedAt = t0.Add(-100 * time.Second)
			c.SetView(v)
			require.True(t, doProbe(c, m, t0, messages.Success))
			assert.Equal(t, messages.Success, m[testID])
		})
	}
}

func TestFailureThreshold(t *testing.T) {
	c := New(Config{Type: messages.Readiness, Spec: spec(1, 3, 0)})
	c.SetView(running(true))
	m := cache{}
	for cycle := 0; cycle < 2; cycle++ {
		for i := 0; i < 3; i++ {
			require.True(t, doProbe(c, m, t0, messages.Success))
			assert.Equal(t, messages.Success, m[testID], "cycle %d success %d", cycle, i)
		}
		for i := 0; i < 2; i++ {
			require.True(t, doProbe(c, m, t0, messages.Failure))
			assert.Equal(t, messages.Success, m[testID], "cycle %d failure %d below threshold", cycle, i)
		}
		for i := 0; i < 3; i++ {
			require.True(t, doProbe(c, m, t0, messages.Failure))
			assert.Equal(t, messages.Failure, m[testID], "cycle %d failure %d at threshold", cycle, i)
		}
	}
}

func TestSuccessThreshold(t *testing.T) {
	c := New(Config{Type: messages.Readiness, Spec: spec(3, 1, 0)})
	c.SetView(running(true))
	m := cache{}
	for cycle := 0; cycle < 2; cycle++ {
		for i := 0; i < 2; i++ {
			require.True(t, doProbe(c, m, t0, messages.Success))
			assert.Equal(t, messages.Failure, m[testID], "cycle %d success %d below threshold", cycle, i)
		}
		for i := 0; i < 3; i++ {
			require.True(t, doProbe(c, m, t0, messages.Success))
			assert.Equal(t, messages.Success, m[testID])
		}
		require.True(t, doProbe(c, m, t0, messages.Failure))
		assert.Equal(t, messages.Failure, m[testID])
	}
}

func TestStartupProbeSuccessThreshold(t *testing.T) {
	c := New(Config{Type: messages.Startup, Spec: spec(1, 3, 0)})
	c.SetView(running(false))
	m := cache{}
	assert.False(t, c.OnHold())
	require.True(t, doProbe(c, m, t0, messages.Success))
	assert.Equal(t, messages.Success, m[testID])
	assert.True(t, c.OnHold())
	assert.Equal(t, 0, c.ResultRun())
}

func TestStartupProbeFailureThreshold(t *testing.T) {
	c := New(Config{Type: messages.Startup, Spec: spec(1, 3, 0)})
	c.SetView(running(false))
	m := cache{}
	for i := 1; i <= 2; i++ {
		require.True(t, doProbe(c, m, t0, messages.Failure))
		assert.Equal(t, messages.Unknown, m[testID])
		assert.Equal(t, i, c.ResultRun())
	}
	require.True(t, doProbe(c, m, t0, messages.Failure))
	assert.Equal(t, messages.Failure, m[testID])
	assert.Equal(t, 0, c.ResultRun())
	assert.True(t, c.OnHold())
}

func TestOnHoldOnLivenessOrStartupCheckFailure(t *testing.T) {
	for _, pt := range []messages.ProbeType{messages.Liveness, messages.Startup} {
		t.Run(pt.String(), func(t *testing.T) {
			c := New(Config{Type: pt, Spec: spec(1, 1, 0)})
			v := running(pt != messages.Startup)
			c.SetView(v)
			m := cache{}
			require.True(t, doProbe(c, m, t0, messages.Failure))
			assert.Equal(t, messages.Failure, m[testID])
			assert.True(t, c.OnHold())
			// Held: a successful prober is not consulted.
			d := c.Begin(t0)
			assert.False(t, d.Probe)
			m.apply(d)
			assert.Equal(t, messages.Failure, m[testID])
			assert.True(t, c.OnHold())
			// New container ID: released, probed again.
			v.ContainerID = "test://newCont_ID"
			c.SetView(v)
			require.True(t, doProbe(c, m, t0, messages.Success))
			assert.Equal(t, messages.Success, m["test://newCont_ID"])
			_, old := m[testID]
			assert.False(t, old, "old container's result removed")
			assert.Equal(t, pt == messages.Startup, c.OnHold(), "startup holds after success too")
		})
	}
}

func TestResultRunOnLivenessCheckFailure(t *testing.T) {
	c := New(Config{Type: messages.Liveness, Spec: spec(1, 3, 0)})
	c.SetView(running(true))
	m := cache{}
	steps := []struct {
		res  messages.Result
		want messages.Result
		run  int
	}{
		{messages.Success, messages.Success, 1},
		{messages.Failure, messages.Success, 1},
		{messages.Failure, messages.Success, 2},
		{messages.Failure, messages.Failure, 0},
	}
	for i, s := range steps {
		require.True(t, doProbe(c, m, t0, s.res))
		assert.Equal(t, s.want, m[testID], "step %d", i)
		assert.Equal(t, s.run, c.ResultRun(), "step %d", i)
	}
}

func TestResultRunOnStartupCheckFailure(t *testing.T) {
	c := New(Config{Type: messages.Startup, Spec: spec(1, 3, 0)})
	c.SetView(running(false))
	m := cache{}
	for i, want := range []struct {
		r   messages.Result
		run int
	}{{messages.Unknown, 1}, {messages.Unknown, 2}, {messages.Failure, 0}} {
		require.True(t, doProbe(c, m, t0, messages.Failure))
		assert.Equal(t, want.r, m[testID], "step %d", i)
		assert.Equal(t, want.run, c.ResultRun(), "step %d", i)
	}
}

func TestLivenessProbeDisabledByStarted(t *testing.T) {
	c := New(Config{Type: messages.Liveness, Spec: spec(1, 1, 0)})
	c.SetView(running(false))
	m := cache{}
	require.True(t, doProbe(c, m, t0, messages.Failure))
	assert.Equal(t, messages.Success, m[testID], "not probed before started")
	c.SetView(running(true))
	require.True(t, doProbe(c, m, t0, messages.Failure))
	assert.Equal(t, messages.Failure, m[testID])
}

func TestStartupProbeDisabledByStarted(t *testing.T) {
	c := New(Config{Type: messages.Startup, Spec: spec(1, 2, 0)})
	c.SetView(running(false))
	m := cache{}
	require.True(t, doProbe(c, m, t0, messages.Failure))
	assert.Equal(t, messages.Unknown, m[testID])
	require.True(t, doProbe(c, m, t0, messages.Success))
	assert.Equal(t, messages.Success, m[testID])
	c.SetView(running(true))
	require.True(t, doProbe(c, m, t0, messages.Failure))
	assert.Equal(t, messages.Success, m[testID], "not probed once started")
}

// §7.12: a restarted container gets the initial value; resultRun carries over for readiness but is
// 0 after a liveness hold.
func TestContainerRestartCarriesRun(t *testing.T) {
	c := New(Config{Type: messages.Readiness, Spec: spec(1, 3, 0)})
	v := running(true)
	c.SetView(v)
	m := cache{}
	require.True(t, doProbe(c, m, t0, messages.Failure))
	require.True(t, doProbe(c, m, t0, messages.Failure))
	assert.Equal(t, 2, c.ResultRun())
	v.ContainerID = "test://new"
	c.SetView(v)
	require.True(t, doProbe(c, m, t0, messages.Failure))
	assert.Equal(t, 3, c.ResultRun(), "run carries over a container change")
	assert.Equal(t, messages.Failure, m["test://new"])
	assert.NotContains(t, m, testID)
}

func TestErroredAttemptDiscarded(t *testing.T) {
	c := New(Config{Type: messages.Liveness, Spec: spec(1, 1, 0)})
	c.SetView(running(true))
	d := c.Begin(t0)
	require.True(t, d.Probe)
	assert.Equal(t, []messages.Result{messages.Success}, d.Set)
	d = c.Complete(messages.Failure, true)
	assert.Empty(t, d.Set)
	assert.Equal(t, 0, c.ResultRun())
	assert.False(t, c.InFlight())
}

func TestAttemptForReplacedContainerDiscarded(t *testing.T) {
	c := New(Config{Type: messages.Liveness, Spec: spec(1, 1, 0)})
	v := running(true)
	c.SetView(v)
	require.True(t, c.Begin(t0).Probe)
	assert.False(t, c.Begin(t0).Probe, "at most one attempt in flight")
	v.ContainerID = "test://new"
	c.SetView(v)
	d := c.Complete(messages.Failure, false)
	assert.Empty(t, d.Set, "result of the old container is discarded")
	d = c.Begin(t0)
	assert.Equal(t, testID, d.RemoveID)
	assert.Equal(t, messages.ContainerID("test://new"), d.ContainerID)
	assert.Equal(t, []messages.Result{messages.Success}, d.Set)
}
