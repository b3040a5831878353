package proc

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/internal/podapi"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testPod(policy v1.RestartPolicy, inits []v1.Container, apps ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	pod.Spec.RestartPolicy = policy
	pod.Spec.InitContainers = inits
	for _, a := range apps {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: a, Command: []string{"x"}})
	}
	return pod
}

func sidecar(name string) v1.Container {
	always := v1.ContainerRestartPolicyAlways
	return v1.Container{Name: name, Command: []string{"x"}, RestartPolicy: &always}
}

// sim drives a podState like the shell does: starts what decide asks for, with sequential IDs.
type sim struct {
	t   *testing.T
	p   *podState
	now time.Time
	n   int
	ids map[string]string
	// fenced is decide's input: node's cluster lease has run out.
	fenced bool
	// postStart is decide's input: a postStart hook of the pod runs.
	postStart bool
}

func newSim(t *testing.T, pod *v1.Pod) *sim {
	return &sim{t: t, p: newPodState(pod, t0, 10*time.Second, 40*time.Second), now: t0, ids: map[string]string{}}
}

func (s *sim) sync() plan {
	pl := s.p.decide(s.now, s.fenced, s.postStart)
	for _, name := range pl.Start {
		s.n++
		id := "proc://" + string(rune('a'+s.n))
		s.ids[name] = id
		s.p.started(name, id, s.now)
	}
	return pl
}

func (s *sim) exit(name string, code int32) {
	s.p.exited(name, s.ids[name], exitStatus{Code: code, FinishedAt: s.now})
}

func (s *sim) advance(d time.Duration) { s.now = s.now.Add(d) }

func (s *sim) state(name string) v1.ContainerStatus {
	st := s.p.status()
	cs, ok := podapi.ContainerStatus(&st, name)
	require.True(s.t, ok, name)
	return cs
}

func condition(st v1.PodStatus, t v1.PodConditionType) v1.PodCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{}
}

func TestInitContainersRunInOrderBeforeApps(t *testing.T) {
	s := newSim(t, testPod(v1.RestartPolicyAlways, []v1.Container{{Name: "i1"}, {Name: "i2"}}, "app"))
	assert.Equal(t, []string{"i1"}, s.sync().Start)
	st := s.p.status()
	assert.Equal(t, v1.PodPending, st.Phase)
	assert.Equal(t, v1.ConditionFalse, condition(st, v1.PodInitialized).Status)
	assert.Equal(t, "containers with incomplete status: [i1 i2]", condition(st, v1.PodInitialized).Message)
	assert.Equal(t, "PodInitializing", s.state("app").State.Waiting.Reason)

	assert.Empty(t, s.sync().Start, "i1 still running")
	s.exit("i1", 0)
	assert.Equal(t, []string{"i2"}, s.sync().Start)
	s.exit("i2", 0)
	assert.Equal(t, []string{"app"}, s.sync().Start)
	st = s.p.status()
	assert.Equal(t, v1.PodRunning, st.Phase)
	assert.Equal(t, v1.ConditionTrue, condition(st, v1.PodInitialized).Status)
	assert.Equal(t, "Completed", s.state("i1").State.Terminated.Reason)
	assert.Equal(t, v1.ConditionFalse, condition(st, v1.ContainersReady).Status, "ready comes from probes")
}

func TestFailedInitContainer(t *testing.T) {
	t.Run("Never fails the pod and starts nothing more", func(t *testing.T) {
		s := newSim(t, testPod(v1.RestartPolicyNever, []v1.Container{{Name: "i1"}}, "app"))
		s.sync()
		s.exit("i1", 3)
		assert.Empty(t, s.sync().Start)
		st := s.p.status()
		assert.Equal(t, v1.PodFailed, st.Phase)
		assert.Equal(t, int32(3), s.state("i1").State.Terminated.ExitCode)
		assert.NotNil(t, s.state("app").State.Waiting)
	})
	t.Run("OnFailure retries it with back-off", func(t *testing.T) {
		s := newSim(t, testPod(v1.RestartPolicyOnFailure, []v1.Container{{Name: "i1"}}, "app"))
		s.sync()
		s.exit("i1", 3)
		assert.Equal(t, []string{"i1"}, s.sync().Start, "first restart is immediate")
		s.advance(time.Second)
		s.exit("i1", 3)
		pl := s.sync()
		assert.Empty(t, pl.Start)
		assert.Equal(t, s.now.Add(10*time.Second), pl.WakeAt)
		assert.Equal(t, "CrashLoopBackOff", s.state("i1").State.Waiting.Reason)
		assert.Equal(t, v1.PodPending, s.p.status().Phase)
	})
}

func TestRestartPolicies(t *testing.T) {
	cases := []struct {
		policy    v1.RestartPolicy
		code      int32
		restarted bool
		phase     v1.PodPhase
	}{
		{v1.RestartPolicyAlways, 0, true, v1.PodRunning},
		{v1.RestartPolicyAlways, 1, true, v1.PodRunning},
		{v1.RestartPolicyOnFailure, 0, false, v1.PodSucceeded},
		{v1.RestartPolicyOnFailure, 1, true, v1.PodRunning},
		{v1.RestartPolicyNever, 0, false, v1.PodSucceeded},
		{v1.RestartPolicyNever, 1, false, v1.PodFailed},
	}
	for _, tc := range cases {
		t.Run(string(tc.policy), func(t *testing.T) {
			s := newSim(t, testPod(tc.policy, nil, "app"))
			s.sync()
			first := s.ids["app"]
			s.advance(time.Second)
			s.exit("app", tc.code)
			started := s.sync().Start
			assert.Equal(t, tc.restarted, len(started) == 1)
			assert.Equal(t, tc.phase, s.p.status().Phase)
			cs := s.state("app")
			if tc.restarted {
				assert.Equal(t, int32(1), cs.RestartCount)
				assert.NotEqual(t, first, cs.ContainerID, "new ID on every start")
				require.NotNil(t, cs.LastTerminationState.Terminated)
				assert.Equal(t, tc.code, cs.LastTerminationState.Terminated.ExitCode)
				assert.NotNil(t, cs.State.Running)
			} else {
				assert.Equal(t, int32(0), cs.RestartCount)
				assert.Equal(t, tc.code, cs.State.Terminated.ExitCode)
			}
		})
	}
}

func TestCrashLoopBackOff(t *testing.T) {
	s := newSim(t, testPod(v1.RestartPolicyAlways, nil, "app"))
	s.sync()
	s.exit("app", 1)
	require.Len(t, s.sync().Start, 1) // immediate first restart
	waits := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 40 * time.Second}
	for i, w := range waits {
		s.advance(time.Second)
		s.exit("app", 1)
		pl := s.sync()
		require.Empty(t, pl.Start, "restart %d", i)
		assert.Equal(t, s.now.Add(w), pl.WakeAt, "restart %d", i)
		require.Len(t, pl.Events, 1)
		assert.Equal(t, "BackOff", pl.Events[0].Reason)
		assert.Equal(t, "Back-off restarting failed container app in pod p_ns(u)", pl.Events[0].Message)
		cs := s.state("app")
		assert.Equal(t, "CrashLoopBackOff", cs.State.Waiting.Reason)
		assert.Equal(t, "back-off "+w.String()+" restarting failed container=app pod=p_ns(u)", cs.State.Waiting.Message)
		assert.Equal(t, int32(1), cs.LastTerminationState.Terminated.ExitCode)
		assert.Equal(t, v1.PodRunning, s.p.status().Phase)

		s.advance(w - time.Millisecond)
		assert.Empty(t, s.sync().Start, "still backing off")
		assert.Empty(t, s.p.decide(s.now, false, false).Events, "BackOff recorded once per exit")
		s.advance(time.Millisecond)
		assert.Len(t, s.sync().Start, 1)
		assert.Equal(t, int32(i+2), s.state("app").RestartCount)
	}
	// A long stable run resets the back-off.
	s.advance(81 * time.Second)
	s.exit("app", 1)
	assert.Len(t, s.sync().Start, 1)
}

func TestKilledForRestartOverridesThePolicy(t *testing.T) {
	s := newSim(t, testPod(v1.RestartPolicyOnFailure, nil, "app"))
	s.sync()
	s.p.killedForRestart("app", s.ids["app"])
	s.exit("app", 0) // exited cleanly on SIGTERM
	assert.Len(t, s.sync().Start, 1)
}

func TestStartFailure(t *testing.T) {
	s := newSim(t, testPod(v1.RestartPolicyNever, nil, "app"))
	pl := s.p.decide(s.now, s.fenced, false)
	s.p.startFailed(pl.Start[0], "proc://1", errors.New(`exec: "nope": executable file not found in $PATH`), s.now)
	cs := s.state("app")
	assert.Equal(t, "StartError", cs.State.Terminated.Reason)
	assert.Equal(t, int32(128), cs.State.Terminated.ExitCode)
	assert.Equal(t, v1.PodFailed, s.p.status().Phase)
}

func TestSidecars(t *testing.T) {
	side := sidecar("side")
	side.StartupProbe = &v1.Probe{}
	s := newSim(t, testPod(v1.RestartPolicyNever, []v1.Container{side, {Name: "init"}}, "app"))
	assert.Equal(t, []string{"side"}, s.sync().Start)
	assert.Empty(t, s.sync().Start, "waits for the sidecar's startup probe")
	s.p.sidecarStarted("side", s.ids["side"])
	assert.Equal(t, []string{"init"}, s.sync().Start)
	s.exit("init", 0)
	assert.Equal(t, []string{"app"}, s.sync().Start)
	assert.Equal(t, v1.PodRunning, s.p.status().Phase)

	s.exit("side", 1)
	assert.Equal(t, []string{"side"}, s.sync().Start, "sidecars restart even under Never")
	s.p.sidecarStarted("side", s.ids["side"])

	s.exit("app", 0)
	pl := s.sync()
	assert.Equal(t, []string{"side"}, pl.Stop, "the pod is done: its sidecar is stopped")
	s.exit("side", 143)
	pl = s.sync()
	assert.Empty(t, pl.Start)
	assert.Empty(t, pl.Events, "no BackOff: a stopped sidecar of a finished pod is not restarted")
	assert.Equal(t, int32(143), s.state("side").State.Terminated.ExitCode)
	assert.Equal(t, v1.PodSucceeded, s.p.status().Phase)
}

func TestTerminatingStartsNothing(t *testing.T) {
	s := newSim(t, testPod(v1.RestartPolicyAlways, nil, "app"))
	s.sync()
	s.p.terminating = true
	s.exit("app", 143)
	assert.Empty(t, s.sync().Start)
}

func TestSidecarCrashDuringInitIsRestartedBeforeTheNextInit(t *testing.T) {
	s := newSim(t, testPod(v1.RestartPolicyNever, []v1.Container{sidecar("side"), {Name: "init"}}, "app"))
	assert.Equal(t, []string{"side"}, s.sync().Start)
	assert.Equal(t, []string{"init"}, s.sync().Start, "no startup probe: the next init may start")
	s.exit("side", 1)
	assert.Equal(t, []string{"side"}, s.sync().Start)
	s.exit("init", 0)
	assert.Equal(t, []string{"app"}, s.sync().Start)
}

func withPostStart(c v1.Container) v1.Container {
	c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	return c
}

// A container with a postStart hook is the last start of a plan, and while a postStart hook runs
// nothing of the pod starts, as kubelet's SyncPod runs the hook before it starts the next
// container; a restart held so spends no back-off step.
func TestPostStartHoldsTheNextStart(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, "a", "b", "c")
	pod.Spec.Containers[1] = withPostStart(pod.Spec.Containers[1])
	s := newSim(t, pod)
	assert.Equal(t, []string{"a", "b"}, s.sync().Start, "c waits for b's postStart hook")
	s.postStart = true
	assert.Empty(t, s.sync().Start)
	s.exit("a", 1)
	s.advance(11 * time.Second) // a's back-off (10 s) is over
	assert.Empty(t, s.sync().Start, "nothing starts while the hook runs, not even a restart")
	s.postStart = false
	assert.Equal(t, []string{"a", "c"}, s.sync().Start, "the hook ended: a's restart was not charged a back-off step while held")

	side := withPostStart(sidecar("side"))
	s = newSim(t, testPod(v1.RestartPolicyNever, []v1.Container{side, {Name: "init"}}, "app"))
	assert.Equal(t, []string{"side"}, s.sync().Start)
	s.postStart = true
	assert.Empty(t, s.sync().Start, "the next init container waits for the sidecar's postStart hook")
	s.postStart = false
	assert.Equal(t, []string{"init"}, s.sync().Start)
}

// activeDeadlineSeconds, as kubelet's activeDeadlineHandler: decide wakes at the deadline; then
// the pod is Failed, DeadlineExceeded (one event), its containers are stopped and none starts
// again; a pod that had already Succeeded stays so.
func TestActiveDeadline(t *testing.T) {
	deadline := int64(10)
	pod := testPod(v1.RestartPolicyAlways, []v1.Container{sidecar("side")}, "app")
	pod.Spec.ActiveDeadlineSeconds = &deadline
	s := newSim(t, pod)
	assert.Equal(t, []string{"side"}, s.sync().Start)
	assert.Equal(t, []string{"app"}, s.sync().Start)
	s.advance(5 * time.Second)
	pl := s.sync()
	assert.Equal(t, t0.Add(10*time.Second), pl.WakeAt, "wakes at the deadline")
	assert.Empty(t, pl.Stop)
	assert.Equal(t, v1.PodRunning, s.p.status().Phase)

	s.advance(5 * time.Second)
	pl = s.sync()
	assert.ElementsMatch(t, []string{"side", "app"}, pl.Stop)
	assert.Equal(t, []event{{Type: v1.EventTypeNormal, Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}}, pl.Events)
	st := s.p.status()
	assert.Equal(t, v1.PodFailed, st.Phase)
	assert.Equal(t, "DeadlineExceeded", st.Reason)
	assert.Equal(t, "Pod was active on the node longer than the specified deadline", st.Message)

	s.exit("app", 143)
	s.exit("side", 143)
	s.advance(time.Minute)
	pl = s.sync()
	assert.Empty(t, pl.Start, "nothing starts again, whatever the restart policy")
	assert.Empty(t, pl.Events, "the event once")
	assert.Equal(t, v1.PodFailed, s.p.status().Phase)

	done := testPod(v1.RestartPolicyNever, nil, "job")
	done.Spec.ActiveDeadlineSeconds = &deadline
	s = newSim(t, done)
	s.sync()
	s.exit("job", 0)
	s.advance(time.Minute)
	pl = s.sync()
	assert.Empty(t, pl.Events)
	assert.Equal(t, v1.PodSucceeded, s.p.status().Phase, "a pod that completed stays Succeeded")
}

// A condition keeps its lastTransitionTime while its status holds; a new one, or one whose status
// changed, takes now.
func TestStampTransitions(t *testing.T) {
	before, now := metav1.Time{Time: t0}, t0.Add(time.Minute)
	prev := []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionFalse, LastTransitionTime: before},
		{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: before},
		{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: before},
	}
	st := v1.PodStatus{Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue},        // changed
		{Type: v1.ContainersReady, Status: v1.ConditionTrue}, // held
		{Type: v1.PodInitialized, Status: v1.ConditionTrue},  // new
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},    // held
	}}
	stampTransitions(&st, prev, now)
	want := map[v1.PodConditionType]time.Time{v1.PodReady: now, v1.ContainersReady: t0, v1.PodInitialized: now, v1.PodScheduled: t0}
	for _, c := range st.Conditions {
		assert.True(t, want[c.Type].Equal(c.LastTransitionTime.Time), "%s: %v", c.Type, c.LastTransitionTime)
	}

	first := v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}}}
	stampTransitions(&first, nil, now)
	assert.True(t, first.Conditions[0].LastTransitionTime.Time.Equal(now), "the first status: every condition at now")
}
