package explain

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func httpProbe(port int, path string, delay, period, timeout, fail int32) *v1.Probe {
	return &v1.Probe{
		ProbeHandler:        v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: intstr.FromInt32(int32(port)), Scheme: v1.URISchemeHTTP}},
		InitialDelaySeconds: delay, PeriodSeconds: period, TimeoutSeconds: timeout, SuccessThreshold: 1, FailureThreshold: fail,
	}
}

func execProbe(timeout int32) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}},
		PeriodSeconds: 5, TimeoutSeconds: timeout, SuccessThreshold: 1, FailureThreshold: 3}
}

func pod(containers ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: containers}}
}

func fields(ws []Warning) []string {
	out := []string{}
	for _, w := range ws {
		out = append(out, w.Field)
	}
	return out
}

// The facts are the probetiming windows worked out by hand (P period, T timeout, F failure
// threshold, D delay); each case says how.
func TestFacts(t *testing.T) {
	// The docs' protected slow starter: startup F30 P10, liveness F1 P10, readiness P5.
	c := v1.Container{Name: "app",
		StartupProbe:   httpProbe(8080, "/healthz", 0, 10, 1, 30),
		LivenessProbe:  httpProbe(8080, "/healthz", 0, 10, 1, 1),
		ReadinessProbe: httpProbe(8080, "/ready", 0, 5, 1, 3)}
	r := Pod(pod(c))
	require.Len(t, r.Containers, 1)
	ps := r.Containers[0].Probes
	require.Len(t, ps, 3)

	assert.Equal(t, "Startup", ps[0].Type)
	assert.Equal(t, "spec.containers[0].startupProbe", ps[0].Field)
	assert.Equal(t, "http-get http://:8080/healthz delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=30", ps[0].Spec)
	// Budget: 29 periods = 290 s at the earliest; 10 + 290 + 1 = 301 s at the latest.
	assert.Equal(t, 290.0, ps[0].Facts[0].Earliest)
	assert.Equal(t, 301.0, ps[0].Facts[0].Latest)
	// Started: the first tick (0..10 s) plus the attempt.
	assert.Equal(t, []float64{0, 11}, []float64{ps[0].Facts[1].Earliest, ps[0].Facts[1].Latest})

	assert.Equal(t, "Readiness", ps[1].Type)
	// Started by 11 s; the manual trigger probes at once: 12 s. Jitter (a first run up to 5 s
	// after node starts, then 1 s) stays below that, so it is not mentioned.
	assert.Equal(t, []float64{0, 12}, []float64{ps[1].Facts[0].Earliest, ps[1].Facts[0].Latest})
	assert.NotContains(t, ps[1].Facts[0].Note, "jitter")
	// Not ready after 3 failures: 2×5 = 10; 5 + 2×5 + 1 = 16.
	assert.Equal(t, []float64{10, 16}, []float64{ps[1].Facts[1].Earliest, ps[1].Facts[1].Latest})

	assert.Equal(t, "Liveness", ps[2].Type)
	// One failure kills: at once, or a period plus a timeout later.
	assert.Equal(t, []float64{0, 11}, []float64{ps[2].Facts[0].Earliest, ps[2].Facts[0].Latest})
	assert.Equal(t, "probes only once the startup probe passed", ps[2].Facts[1].What)
	assert.Empty(t, r.Warnings, "the docs' example has none of the classic mistakes")
}

func TestReadinessNamesTheJitterOnlyWhereItMatters(t *testing.T) {
	// No startup probe, D0 P10 T1: ready within 1 s (the trigger), 11 s right after node starts.
	r := Pod(pod(v1.Container{Name: "app", ReadinessProbe: httpProbe(80, "/", 0, 10, 1, 3)}))
	f := r.Containers[0].Probes[0].Facts[0]
	assert.Equal(t, []float64{0, 1}, []float64{f.Earliest, f.Latest})
	assert.Contains(t, f.Note, "up to 11s right after node (re)starts")
}

func TestLivenessWithoutStartupProbeHasAStartBudget(t *testing.T) {
	// The docs' liveness example: D15 P20 F3 (and a readiness probe, so no warning about it):
	// killed after a failure begins 40..61 s; a never-healthy container 55..76 s after its start.
	c := v1.Container{Name: "app", LivenessProbe: httpProbe(8080, "/healthz", 15, 20, 1, 3), ReadinessProbe: httpProbe(8080, "/ready", 5, 10, 1, 3)}
	r := Pod(pod(c))
	f := r.Containers[0].Probes[1].Facts // startup, readiness, liveness order: liveness is second here
	assert.Equal(t, "Liveness", r.Containers[0].Probes[1].Type)
	assert.Equal(t, []float64{40, 61}, []float64{f[0].Earliest, f[0].Latest})
	assert.Equal(t, []float64{55, 76}, []float64{f[1].Earliest, f[1].Latest})
	assert.Contains(t, f[0].What, "killed and restarted")
}

func TestRestartPolicyNeverIsAKillWithoutRestart(t *testing.T) {
	p := pod(v1.Container{Name: "app", LivenessProbe: httpProbe(80, "/", 0, 10, 1, 3), ReadinessProbe: httpProbe(80, "/r", 0, 10, 1, 3)})
	p.Spec.RestartPolicy = v1.RestartPolicyNever
	f := Pod(p).Containers[0].Probes[1].Facts[0]
	assert.Contains(t, f.What, "restartPolicy Never: not restarted")
}

func TestWarnings(t *testing.T) {
	same := httpProbe(8080, "/healthz", 0, 10, 1, 3)
	for name, c := range map[string]struct {
		c    v1.Container
		want []string
	}{
		"same handler, same thresholds": {v1.Container{Name: "a", LivenessProbe: same, ReadinessProbe: same.DeepCopy()},
			[]string{"spec.containers[0]"}},
		"same handler, liveness more patient": {v1.Container{Name: "a", LivenessProbe: httpProbe(8080, "/healthz", 0, 10, 1, 6), ReadinessProbe: same},
			[]string{}},
		"liveness without readiness": {v1.Container{Name: "a", LivenessProbe: same},
			[]string{"spec.containers[0]"}},
		"liveness timeout equal to its period": {v1.Container{Name: "a", LivenessProbe: httpProbe(80, "/", 0, 5, 5, 3), ReadinessProbe: httpProbe(80, "/r", 0, 5, 5, 3)},
			[]string{"spec.containers[0].livenessProbe.timeoutSeconds"}},
		"exec probes with a 1 s timeout": {v1.Container{Name: "a", ReadinessProbe: execProbe(1), LivenessProbe: &v1.Probe{
			ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 10, TimeoutSeconds: 3, SuccessThreshold: 1, FailureThreshold: 3}},
			[]string{"spec.containers[0].readinessProbe.timeoutSeconds"}},
		// Startup F3 P10: the 3rd failure can come 20 s after the start, before liveness's
		// 60 s delay; 7 failures would give 60 s.
		"startup budget shorter than the liveness delay": {v1.Container{Name: "a",
			StartupProbe:   httpProbe(80, "/", 0, 10, 1, 3),
			LivenessProbe:  httpProbe(80, "/", 60, 10, 1, 3),
			ReadinessProbe: httpProbe(80, "/ready", 0, 10, 1, 3)},
			[]string{"spec.containers[0].startupProbe"}},
		"startup budget as long as the liveness delay": {v1.Container{Name: "a",
			StartupProbe:   httpProbe(80, "/", 0, 10, 1, 7),
			LivenessProbe:  httpProbe(80, "/", 60, 10, 1, 3),
			ReadinessProbe: httpProbe(80, "/ready", 0, 10, 1, 3)},
			[]string{}},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, c.want, fields(Pod(pod(c.c)).Warnings))
		})
	}
}

// preStop against the grace period: none with a grace period of 0, a sleep that leaves less than
// kubelet's 2 s floor after it (the pod's grace period, or a liveness probe's own).
func TestPreStopWarnings(t *testing.T) {
	sleep := func(s int64) *v1.Lifecycle {
		return &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: s}}}
	}
	grace := func(g int64) *int64 { return &g }
	for name, c := range map[string]struct {
		grace int64
		c     v1.Container
		want  []string
	}{
		"sleep within the grace period":  {30, v1.Container{Name: "a", Lifecycle: sleep(20)}, []string{}},
		"sleep leaves exactly the floor": {30, v1.Container{Name: "a", Lifecycle: sleep(28)}, []string{}},
		"sleep uses the grace period up": {30, v1.Container{Name: "a", Lifecycle: sleep(29)}, []string{"spec.containers[0].lifecycle.preStop.sleep.seconds"}},
		"no grace period": {0, v1.Container{Name: "a", Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"x"}}}}},
			[]string{"spec.containers[0].lifecycle.preStop"}},
		"a liveness kill's own grace period": {60, v1.Container{Name: "a", Lifecycle: sleep(20), ReadinessProbe: execProbe(5),
			LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 10, TimeoutSeconds: 5,
				SuccessThreshold: 1, FailureThreshold: 3, TerminationGracePeriodSeconds: grace(10)}},
			[]string{"spec.containers[0].livenessProbe.terminationGracePeriodSeconds"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := pod(c.c)
			p.Spec.TerminationGracePeriodSeconds = grace(c.grace)
			assert.Equal(t, c.want, fields(Pod(p).Warnings))
		})
	}
}

func TestStartupWarningSaysHowManyFailuresWouldDo(t *testing.T) {
	r := Pod(pod(v1.Container{Name: "a",
		StartupProbe:   httpProbe(80, "/", 0, 10, 1, 3),
		LivenessProbe:  httpProbe(80, "/", 60, 10, 1, 3),
		ReadinessProbe: httpProbe(80, "/ready", 0, 10, 1, 3)}))
	require.Len(t, r.Warnings, 1)
	assert.Contains(t, r.Warnings[0].Message, "gives the application 20s to start")
	assert.Contains(t, r.Warnings[0].Message, "initialDelaySeconds 60")
	assert.Contains(t, r.Warnings[0].Message, "at least 7")
}

func TestSidecarsAreExplainedAndRegularInitContainersAreNot(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	p := pod(v1.Container{Name: "app"})
	p.Spec.RestartPolicy = v1.RestartPolicyNever
	p.Spec.InitContainers = []v1.Container{{Name: "setup"}, {Name: "proxy", RestartPolicy: &always, LivenessProbe: httpProbe(15000, "/", 0, 10, 1, 3)}}
	r := Pod(p)
	require.Len(t, r.Containers, 1)
	assert.True(t, r.Containers[0].Sidecar)
	assert.Equal(t, "spec.initContainers[1].livenessProbe", r.Containers[0].Probes[0].Field)
	assert.Contains(t, r.Containers[0].Probes[0].Facts[0].What, "killed and restarted", "a sidecar always restarts")
	assert.Equal(t, []string{"spec.initContainers[1]"}, fields(r.Warnings))
}

func TestPrint(t *testing.T) {
	var b bytes.Buffer
	r := Pod(pod(v1.Container{Name: "app", LivenessProbe: httpProbe(8080, "/healthz", 0, 10, 1, 3)}))
	require.NoError(t, Print(&b, []Report{r, Pod(pod())}))
	assert.Equal(t, `Pod default/web
  Container app
    Liveness:  http-get http://:8080/healthz delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3
      after a failure begins, the container is killed and restarted: at the earliest 20s, at the latest 31s
      startup budget: a container that never becomes healthy is killed and restarted, after its start: at the earliest 20s, at the latest 31s
        (no startup probe: liveness probes from initialDelaySeconds on)
  Warnings:
    spec.containers[0]: livenessProbe without a readinessProbe: the container is Ready as soon as it has started, so it receives traffic before it can serve and keeps receiving it until liveness restarts it

Pod default/web
  no probes: nothing to explain
`, b.String())
}
