package proc

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/clock"
)

// Kubelet 1.37's container restart rules (KEP-5307) and RestartAllContainers (KEP-5532) in node's
// pod core: decisions, phase, container statuses and the AllContainersRestarting condition.

func withRules(c v1.Container, policy v1.ContainerRestartPolicy, rules ...v1.ContainerRestartRule) v1.Container {
	c.RestartPolicy = &policy
	c.RestartPolicyRules = rules
	return c
}

func ruleOn(action v1.ContainerRestartRuleAction, op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{Action: action, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
}

// restartAllPod: init container "init", app "app" that restarts the whole pod when it exits 42,
// app "other" without rules.
func restartAllPod(policy v1.RestartPolicy) *v1.Pod {
	pod := testPod(policy, []v1.Container{{Name: "init", Command: []string{"x"}}}, "app", "other")
	pod.Spec.Containers[0] = withRules(pod.Spec.Containers[0], v1.ContainerRestartPolicyNever,
		ruleOn(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpIn, 42))
	return pod
}

func TestContainerRestartRulesDecideRestarts(t *testing.T) {
	restart := v1.ContainerRestartRuleActionRestart
	in, notIn := v1.ContainerRestartRuleOnExitCodesOpIn, v1.ContainerRestartRuleOnExitCodesOpNotIn
	for _, tc := range []struct {
		name    string
		policy  v1.RestartPolicy
		app     v1.Container
		exit    int32
		restart bool
		phase   v1.PodPhase // once the only app container exited (and, when restarted, before it starts again)
	}{
		{name: "a rule restarts under pod Never", policy: v1.RestartPolicyNever,
			app: withRules(v1.Container{}, v1.ContainerRestartPolicyNever, ruleOn(restart, in, 42)), exit: 42, restart: true, phase: v1.PodRunning},
		{name: "no rule matches: the container's Never", policy: v1.RestartPolicyAlways,
			app: withRules(v1.Container{}, v1.ContainerRestartPolicyNever, ruleOn(restart, in, 42)), exit: 1, phase: v1.PodFailed},
		{name: "no rule matches, exit 0: Succeeded", policy: v1.RestartPolicyAlways,
			app: withRules(v1.Container{}, v1.ContainerRestartPolicyNever, ruleOn(restart, in, 42)), exit: 0, phase: v1.PodSucceeded},
		{name: "NotIn: every exit but 0 restarts", policy: v1.RestartPolicyNever,
			app: withRules(v1.Container{}, v1.ContainerRestartPolicyNever, ruleOn(restart, notIn, 0)), exit: 3, restart: true, phase: v1.PodRunning},
		{name: "container OnFailure over pod Never", policy: v1.RestartPolicyNever,
			app: withRules(v1.Container{}, v1.ContainerRestartPolicyOnFailure), exit: 2, restart: true, phase: v1.PodRunning},
		{name: "container Always over pod OnFailure, exit 0", policy: v1.RestartPolicyOnFailure,
			app: withRules(v1.Container{}, v1.ContainerRestartPolicyAlways), exit: 0, restart: true, phase: v1.PodRunning},
		{name: "no container policy: the pod's Never", policy: v1.RestartPolicyNever, exit: 1, phase: v1.PodFailed},
		{name: "no container policy: the pod's OnFailure", policy: v1.RestartPolicyOnFailure, exit: 1, restart: true, phase: v1.PodRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(tc.policy, nil, "app")
			tc.app.Name, tc.app.Command = "app", []string{"x"}
			pod.Spec.Containers[0] = tc.app
			s := newSim(t, pod)
			require.Equal(t, []string{"app"}, s.sync().Start)
			s.advance(time.Minute)
			s.exit("app", tc.exit)
			assert.Equal(t, tc.phase, s.p.status().Phase, "phase once it exited")
			pl := s.sync()
			if tc.restart {
				assert.Equal(t, []string{"app"}, pl.Start)
				assert.Equal(t, int32(1), s.state("app").RestartCount)
			} else {
				assert.Empty(t, pl.Start)
				assert.Equal(t, tc.exit, s.state("app").State.Terminated.ExitCode)
			}
		})
	}
}

func TestInitContainerRestartRules(t *testing.T) {
	// pod Never: a failed init container fails the pod, unless its own rules restart it.
	init := withRules(v1.Container{Name: "i", Command: []string{"x"}}, v1.ContainerRestartPolicyNever,
		ruleOn(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 75))
	s := newSim(t, testPod(v1.RestartPolicyNever, []v1.Container{init}, "app"))
	require.Equal(t, []string{"i"}, s.sync().Start)
	s.exit("i", 75)
	assert.Equal(t, v1.PodPending, s.p.status().Phase, "75 is retried: not failed")
	assert.Equal(t, []string{"i"}, s.sync().Start)
	s.exit("i", 1)
	assert.Empty(t, s.sync().Start)
	assert.True(t, s.p.initFailed)
	assert.Equal(t, v1.PodFailed, s.p.status().Phase)

	// pod Always: an init container with its own Never is not retried.
	never := withRules(v1.Container{Name: "i", Command: []string{"x"}}, v1.ContainerRestartPolicyNever)
	s = newSim(t, testPod(v1.RestartPolicyAlways, []v1.Container{never}, "app"))
	s.sync()
	s.exit("i", 1)
	assert.Empty(t, s.sync().Start)
	assert.Equal(t, v1.PodFailed, s.p.status().Phase)
}

// TestRestartAllContainersInPlace: the app's exit 42 (its RestartAllContainers rule) kills every
// running container, then starts the pod again from its init container, each restart counted,
// with kubelet's condition and container states on the way; probes' views follow (no container
// ID while a container waits to start again).
func TestRestartAllContainersInPlace(t *testing.T) {
	s := newSim(t, restartAllPod(v1.RestartPolicyNever))
	require.Equal(t, []string{"init"}, s.sync().Start)
	s.exit("init", 0)
	require.Equal(t, []string{"app", "other"}, s.sync().Start)
	st := s.p.status()
	assert.Equal(t, v1.ConditionFalse, condition(st, v1.AllContainersRestarting).Status, "the condition exists for a pod with such a rule")

	s.advance(time.Minute)
	s.exit("app", 42)
	st = s.p.status()
	assert.Equal(t, v1.PodRunning, st.Phase, "restarting, not failed")
	c := condition(st, v1.AllContainersRestarting)
	assert.Equal(t, []string{string(v1.ConditionTrue), "RestartAllContainersStarted", "container exited with restart policy rule"},
		[]string{string(c.Status), c.Reason, c.Message})
	pl := s.sync()
	assert.Equal(t, []string{"other"}, pl.Kill, "every running container is killed")
	assert.Empty(t, pl.Start, "nothing starts before every container stopped")
	again := s.sync()
	assert.Equal(t, []string{"other"}, again.Kill, "asked at each decision until it stopped (the shell begins one kill per instance)")
	assert.Empty(t, again.Start)

	s.advance(2 * time.Second)
	s.exit("other", 137)
	assert.Equal(t, v1.PodRunning, s.p.status().Phase, "still restarting")
	pl = s.sync()
	assert.Equal(t, []string{"init"}, pl.Start, "all gone: initialization starts over, without back-off")
	st = s.p.status()
	assert.Equal(t, v1.ConditionFalse, condition(st, v1.AllContainersRestarting).Status)
	for _, name := range []string{"app", "other"} {
		cs := s.state(name)
		require.NotNil(t, cs.State.Waiting, name)
		assert.Equal(t, ReasonRestartingAllContainers, cs.State.Waiting.Reason, name)
		assert.Equal(t, "The container is removed because RestartAllContainers in place", cs.State.Waiting.Message)
		assert.Empty(t, cs.ContainerID, "%s: removed, so no container ID (a probe worker waits)", name)
		assert.Equal(t, int32(1), cs.RestartCount, name)
		require.NotNil(t, cs.LastTerminationState.Terminated, name)
		assert.Equal(t, int32(137), cs.LastTerminationState.Terminated.ExitCode)
		assert.Equal(t, ReasonRestartingAllContainers, cs.LastTerminationState.Terminated.Reason)
	}
	assert.Equal(t, v1.PodRunning, st.Phase, "the removed containers count as restarting")
	assert.Equal(t, int32(1), s.state("init").RestartCount)
	assert.Equal(t, v1.ConditionTrue, condition(st, v1.PodInitialized).Status, "initialization runs again, but an initialized pod stays so (kubelet 1.37)")

	s.exit("init", 0)
	assert.Equal(t, []string{"app", "other"}, s.sync().Start)
	for _, name := range []string{"app", "other"} {
		cs := s.state(name)
		assert.NotNil(t, cs.State.Running, name)
		assert.Equal(t, int32(1), cs.RestartCount, "%s: one restart, counted once", name)
		assert.Equal(t, ReasonRestartingAllContainers, cs.LastTerminationState.Terminated.Reason)
	}

	// Another exit: no rule matches, pod Never: no restart at all.
	s.exit("other", 0)
	assert.Empty(t, s.sync().Start)
	assert.False(t, s.p.restartingAll)
}

// While a pod terminates, an exit its rule matches restarts nothing.
func TestRestartAllContainersNotWhileTerminating(t *testing.T) {
	s := newSim(t, restartAllPod(v1.RestartPolicyAlways))
	s.sync()
	s.exit("init", 0)
	s.sync()
	s.p.terminating = true
	s.exit("app", 42)
	assert.False(t, s.p.restartingAll)
	assert.Empty(t, s.sync().Kill)
}

// A start that fails (StartError, exit 128) is an exit like any other for the rules.
func TestRestartAllOnStartError(t *testing.T) {
	pod := restartAllPod(v1.RestartPolicyNever)
	pod.Spec.Containers[0].RestartPolicyRules[0].ExitCodes.Values = []int32{128}
	s := newSim(t, pod)
	s.sync()
	s.exit("init", 0)
	pl := s.p.decide(s.now, false, false)
	require.Equal(t, []string{"app", "other"}, pl.Start)
	s.p.startFailed("app", "proc://x", assert.AnError, s.now)
	s.p.started("other", "proc://y", s.now)
	assert.True(t, s.p.restartingAll)
	assert.Equal(t, []string{"other"}, s.sync().Kill)
}

func TestPodWithoutRestartAllRuleHasNoCondition(t *testing.T) {
	s := newSim(t, testPod(v1.RestartPolicyAlways, nil, "app"))
	s.sync()
	for _, c := range s.p.status().Conditions {
		assert.NotEqual(t, v1.AllContainersRestarting, c.Type)
	}
}

// TestRestartAllContainersWithRealProcesses: the runtime carries the core's RestartAllContainers
// restart out on real processes: the app exiting 42 kills the sleeping sidekick (SIGTERM, its 2 s
// floor, then SIGKILL: it ignores TERM), and the pod starts again from its init container; each
// run writes its own log, and the restart counts and the Killing event are kubelet's.
func TestRestartAllContainersWithRealProcesses(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	dir := t.TempDir()
	pod := shPod("again", v1.RestartPolicyNever, "")
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Command: []string{"sh", "-c", "echo x >> runs"}, WorkingDir: dir}}
	// The app exits 42 on the first run only (a second run finds the marker and sleeps).
	pod.Spec.Containers = []v1.Container{
		withRules(v1.Container{Name: "app", Command: []string{"sh", "-c", "if [ -e ran ]; then echo run two; exec sleep 300; fi; touch ran; echo run one; sleep 0.3; exit 42"}, WorkingDir: dir},
			v1.ContainerRestartPolicyNever, ruleOn(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpIn, 42)),
		{Name: "sidekick", Command: []string{"sh", "-c", `trap "" TERM; sleep 300 & wait`}, WorkingDir: dir},
	}
	require.NoError(t, rt.Run(pod))
	require.Eventually(t, func() bool {
		app, _ := rec.container(pod.UID, "app")
		side, _ := rec.container(pod.UID, "sidekick")
		return app.State.Running != nil && app.RestartCount == 1 && side.State.Running != nil && side.RestartCount == 1
	}, settle, tick)
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	require.NoError(t, err)
	assert.Equal(t, "x\nx\n", string(b), "the init container ran again")
	init, phase := rec.container(pod.UID, "init")
	assert.Equal(t, int32(1), init.RestartCount)
	assert.Equal(t, v1.PodRunning, phase)
	side, _ := rec.container(pod.UID, "sidekick")
	assert.Equal(t, ReasonRestartingAllContainers, side.LastTerminationState.Terminated.Reason)
	assert.Contains(t, rec.reasons("sidekick"), "Killing: killing")
	rec.mu.Lock()
	c := condition(rec.statuses[pod.UID], v1.AllContainersRestarting)
	rec.mu.Unlock()
	assert.Equal(t, v1.ConditionFalse, c.Status, "done restarting")

	// Each run writes its own log, and logs read each run's back (the restart counted before the
	// run after it started).
	for previous, want := range map[bool]string{false: "run two\n", true: "run one\n"} {
		path, err := rt.LogPath(pod.UID, "app", previous)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(path)
			return err == nil && string(b) == want
		}, settle, tick, "previous=%v: %s", previous, path)
	}
}

// The runtime's status and each of its conditions carry the pod's generation, as kubelet 1.37's
// (PodObservedGenerationTracking, GA).
func TestStatusObservesThePodGeneration(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, "app")
	pod.Generation = 7
	s := newSim(t, pod)
	s.sync()
	st := s.p.status()
	assert.Equal(t, int64(7), st.ObservedGeneration)
	require.NotEmpty(t, st.Conditions)
	for _, c := range st.Conditions {
		assert.Equal(t, int64(7), c.ObservedGeneration, c.Type)
	}
}
