package statusbook

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/internal/podrecord"
	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/internal/podstatus"
	"github.com/probeactor/probeactor/messages"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func execProbe() *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
		TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
}

func testPod(uid string, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-" + uid, Namespace: "ns", UID: types.UID(uid)},
		Spec: v1.PodSpec{Containers: containers, RestartPolicy: v1.RestartPolicyAlways}}
}

func runningStatus(id string) *v1.PodStatus {
	return &v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: id,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}}}}
}

func readiness(id string, r messages.Result) messages.ResultChanged {
	return messages.ResultChanged{PodUID: "u1", Container: "app", ContainerID: messages.ContainerID(id),
		Type: messages.Readiness, Result: r}
}

func TestStatusBook(t *testing.T) {
	pod := testPod("u1", v1.Container{Name: "app", ReadinessProbe: execProbe()})
	rec := podrecord.New(pod)
	key := messages.ProbeKey{PodUID: "u1", Container: "app", Type: messages.Readiness}
	ready := func(b *Book) bool {
		st, ok := b.Status("u1")
		require.True(t, ok)
		return st.ContainerStatuses[0].Ready
	}

	b := New()
	views, _ := b.Recompute("u1", t0)
	assert.Nil(t, views, "no pod yet")
	_, ok := b.Status("u1")
	assert.False(t, ok)

	b.AddPod(rec, podrecord.Probes(rec))
	b.SetRuntime(rec.UID, rec, runningStatus("x://1"))
	views, trigger := b.Recompute("u1", t0)
	require.Len(t, views, 1, "the first status: the workers get their view")
	assert.Equal(t, protocol.ContainerView{PodStatusKnown: true, Phase: v1.PodRunning, Found: true, ContainerID: "x://1",
		Running: true, StartedAt: t0, Started: true}, *views[0].View)
	assert.False(t, ready(b), "a readiness worker without a result: not ready")
	assert.Equal(t, []string{"app"}, trigger, "kubelet's manual trigger for the unready container")

	assert.Empty(t, b.Apply([]messages.ResultChanged{readiness("x://0", messages.Success)}),
		"a container the status does not list is ignored")
	assert.Equal(t, []types.UID{"u1"}, b.Apply([]messages.ResultChanged{readiness("x://1", messages.Success)}))
	views, trigger = b.Recompute("u1", t0)
	assert.Nil(t, views, "readiness does not change what workers see")
	assert.True(t, ready(b))
	assert.Empty(t, trigger)

	b.SetRuntime(rec.UID, rec, runningStatus("x://1")) // the same status again
	views, _ = b.Recompute("u1", t0)
	assert.Nil(t, views, "nothing changed")

	b.SetRuntime(rec.UID, rec, runningStatus("x://2")) // restarted: the old ID's result goes
	assert.Zero(t, b.MirroredResults())
	views, _ = b.Recompute("u1", t0)
	require.Len(t, views, 1)
	assert.Equal(t, messages.ContainerID("x://2"), views[0].View.ContainerID)
	assert.False(t, ready(b))

	b.Apply([]messages.ResultChanged{readiness("x://2", messages.Success)})
	b.SetWorkers("u1", []messages.ProbeKey{key})
	assert.Equal(t, 1, b.MirroredResults(), "the worker still exists")
	b.SetWorkers("u1", nil) // the worker exited: its result goes, the no-worker rule applies
	assert.Zero(t, b.MirroredResults())
	b.Recompute("u1", t0)
	assert.True(t, ready(b), "no readiness worker: ready")

	b.Apply([]messages.ResultChanged{readiness("x://2", messages.Success)})
	b.Cleanup(map[types.UID]struct{}{})
	assert.Empty(t, b.pods)
}

// A running container the runtime reports ready and started, with no result for its ID yet (node
// re-adopting it after its own restart), is ready and started from its first status on, before any
// worker ran, with no manual trigger (kubelet 1.35+, KEP-4781); its workers see the report. A probe
// result then decides as usual. A fresh container (Ready false, Started unset) is unchanged.
func TestAdoptedContainerIsReadyAndStartedAtOnce(t *testing.T) {
	pod := testPod("u1", v1.Container{Name: "app", ReadinessProbe: execProbe(), StartupProbe: execProbe(),
		LivenessProbe: execProbe()})
	rec := podrecord.New(pod)
	flags := func(b *Book) (ready, started bool) {
		st, ok := b.Status("u1")
		require.True(t, ok)
		return st.ContainerStatuses[0].Ready, *st.ContainerStatuses[0].Started
	}
	reported := func(id string, ready bool, started *bool) *v1.PodStatus {
		st := runningStatus(id)
		st.ContainerStatuses[0].Ready, st.ContainerStatuses[0].Started = ready, started
		return st
	}
	yes := true

	b := New()
	b.AddPod(rec, podrecord.Probes(rec))
	b.SetRuntime(rec.UID, rec, reported("x://1", true, &yes))
	views, trigger := b.Recompute("u1", t0)
	ready, started := flags(b)
	assert.True(t, ready, "adopted: ready before any result")
	assert.True(t, started, "adopted: started before any result")
	assert.Empty(t, trigger, "ready: nothing to trigger")
	require.Len(t, views, 1)
	assert.Equal(t, protocol.ContainerView{PodStatusKnown: true, Phase: v1.PodRunning, Found: true, ContainerID: "x://1",
		Running: true, StartedAt: t0, Started: true, ReportedReady: true, ReportedStarted: true}, *views[0].View,
		"the workers see the report (and liveness sees a started container)")
	st, _ := b.Status("u1")
	assert.Equal(t, v1.ConditionTrue, condStatusOf(st, v1.PodReady))
	assert.Zero(t, b.MirroredResults(), "nothing is mirrored that the cache does not hold")

	// The workers' first publishes (worker.Adopted) change nothing; a readiness Failure (after
	// its threshold) does.
	b.Apply([]messages.ResultChanged{readiness("x://1", messages.Success),
		{PodUID: "u1", Container: "app", ContainerID: "x://1", Type: messages.Startup, Result: messages.Success}})
	b.Recompute("u1", t0)
	ready, started = flags(b)
	assert.True(t, ready && started)
	b.Apply([]messages.ResultChanged{readiness("x://1", messages.Failure)})
	_, trigger = b.Recompute("u1", t0)
	ready, started = flags(b)
	assert.False(t, ready, "a result overrides the report")
	assert.True(t, started)
	assert.Equal(t, []string{"app"}, trigger)
	b.SetRuntime(rec.UID, rec, reported("x://1", true, &yes)) // the runtime repeats its report
	b.Recompute("u1", t0)
	ready, _ = flags(b)
	assert.False(t, ready, "the result still decides")

	// A fresh container: not started (its startup worker has no result), not ready.
	b.SetRuntime(rec.UID, rec, reported("x://2", false, nil))
	views, _ = b.Recompute("u1", t0)
	ready, started = flags(b)
	assert.False(t, ready)
	assert.False(t, started)
	require.Len(t, views, 1)
	assert.False(t, views[0].View.ReportedReady || views[0].View.ReportedStarted || views[0].View.Started)

	// Reported ready only: a ready container has started.
	b.SetRuntime(rec.UID, rec, reported("x://3", true, nil))
	_, trigger = b.Recompute("u1", t0)
	ready, started = flags(b)
	assert.True(t, ready)
	assert.True(t, started)
	assert.Empty(t, trigger)

	// Reported started only: started, and readiness as for any started container without a result.
	no := false
	b.SetRuntime(rec.UID, rec, reported("x://4", false, &yes))
	_, trigger = b.Recompute("u1", t0)
	ready, started = flags(b)
	assert.False(t, ready)
	assert.True(t, started)
	assert.Equal(t, []string{"app"}, trigger)
	b.SetRuntime(rec.UID, rec, reported("x://5", false, &no))
	b.Recompute("u1", t0)
	_, started = flags(b)
	assert.False(t, started, "Started false is a fresh container")

	// Not running: not started, whatever the runtime reports (Ready is then the runtime's own, as
	// kubelet's overlay leaves it for a container that has not started).
	stopped := reported("x://6", false, &yes)
	stopped.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}
	b.SetRuntime(rec.UID, rec, stopped)
	views, trigger = b.Recompute("u1", t0)
	_, started = flags(b)
	assert.False(t, started)
	assert.Empty(t, trigger)
	require.Len(t, views, 1)
	assert.False(t, views[0].View.Running || views[0].View.Started)
}

func condStatusOf(st v1.PodStatus, ct v1.PodConditionType) v1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == ct {
			return c.Status
		}
	}
	return ""
}

// refBook is the straightforward statusManager the Book replaced: it keeps a full adjusted
// Status per pod, recomputed from a deep copy of the runtime status each time.
type refBook struct {
	adjusted *v1.PodStatus
}

func (r *refBook) recompute(pod *v1.Pod, rt *v1.PodStatus, p podstatus.Probes, now time.Time) {
	st := rt.DeepCopy()
	podstatus.UpdatePodStatus(pod, st, p)
	if r.adjusted != nil { // keep lastTransitionTime of unchanged conditions
		for _, ct := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
			for _, c := range r.adjusted.Conditions {
				if c.Type == ct {
					podstatus.SetCondition(st, c, c.LastTransitionTime)
				}
			}
		}
	}
	podstatus.SetProbeConditions(pod, st, metav1.NewTime(now))
	r.adjusted = st
}

// The Book's adjusted status is the reference's after every step of random sequences of
// runtime pushes (with and without the runtime's own ContainersReady/Ready conditions), results and
// worker changes.
func TestStatusBookMatchesFullRecompute(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := testPod("u1", v1.Container{Name: "a", ReadinessProbe: execProbe(), StartupProbe: execProbe()},
		v1.Container{Name: "b", ReadinessProbe: execProbe()}, v1.Container{Name: "plain"})
	pod.Spec.InitContainers = []v1.Container{{Name: "init"}, {Name: "side", RestartPolicy: &always, ReadinessProbe: execProbe()}}
	pod.Generation = 5
	rec := podrecord.New(pod)
	all := podrecord.Probes(rec)
	for seed := range 200 {
		rnd := rand.New(rand.NewPCG(uint64(seed), 7))
		b, ref := New(), &refBook{}
		b.AddPod(rec, podrecord.Probes(rec))
		now := t0
		var rt *v1.PodStatus
		gen := 0
		for step := range 30 {
			now = now.Add(time.Duration(rnd.IntN(3)) * time.Second)
			switch rnd.IntN(4) {
			case 0: // a runtime push
				gen++
				rt = randomStatus(rnd, gen)
				rt.ObservedGeneration = pod.Generation // as Tree.SetPodStatus sets it
				b.SetRuntime(rec.UID, rec, rt)
			case 1: // a result
				if rt == nil {
					continue
				}
				c := all[rnd.IntN(len(all))]
				id := idOf(rt, c.Key.Container)
				if id == "" || c.Key.Type == messages.Liveness {
					continue
				}
				b.Apply([]messages.ResultChanged{{PodUID: "u1", Container: c.Key.Container, ContainerID: id, Type: c.Key.Type,
					Result: messages.Result(rnd.IntN(3) - 1)}})
			case 2: // workers come and go
				var keys []messages.ProbeKey
				for _, p := range all {
					if rnd.IntN(3) > 0 {
						keys = append(keys, p.Key)
					}
				}
				b.SetWorkers("u1", keys)
			default:
			}
			if rt == nil {
				continue
			}
			b.Recompute("u1", now)
			ref.recompute(pod, rt, probesView{b.pods["u1"]}, now)
			got, ok := b.Status("u1")
			require.True(t, ok)
			if !equality.Semantic.DeepEqual(*ref.adjusted, got) {
				t.Fatalf("seed %d step %d:\nwant %+v\n got %+v", seed, step, ref.adjusted, got)
			}
		}
	}
}

func idOf(st *v1.PodStatus, name string) messages.ContainerID {
	for _, ss := range [][]v1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses} {
		for _, cs := range ss {
			if cs.Name == name {
				return messages.ContainerID(cs.ContainerID)
			}
		}
	}
	return ""
}

func randomStatus(rnd *rand.Rand, gen int) *v1.PodStatus {
	state := func() v1.ContainerState {
		switch rnd.IntN(3) {
		case 0:
			return v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}
		case 1:
			return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: int32(rnd.IntN(2))}}
		default:
			return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "x"}}
		}
	}
	cs := func(name string) v1.ContainerStatus {
		var started *bool
		if k := rnd.IntN(3); k < 2 {
			started = ptr(k == 0)
		}
		return v1.ContainerStatus{Name: name, ContainerID: fmt.Sprintf("x://%s/%d", name, rnd.IntN(2)+gen%2),
			State: state(), Ready: rnd.IntN(2) == 0, Started: started}
	}
	st := &v1.PodStatus{Phase: []v1.PodPhase{v1.PodRunning, v1.PodPending, v1.PodSucceeded}[rnd.IntN(3)], PodIP: "10.0.0.1",
		ContainerStatuses:     []v1.ContainerStatus{cs("a"), cs("b"), cs("plain")},
		InitContainerStatuses: []v1.ContainerStatus{cs("init"), cs("side")},
		Conditions:            []v1.PodCondition{{Type: v1.PodInitialized, Status: v1.ConditionTrue}}}
	if rnd.IntN(4) == 0 { // the runtime reports probe conditions of its own
		for _, ct := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady} {
			if rnd.IntN(2) == 0 {
				st.Conditions = append(st.Conditions, v1.PodCondition{Type: ct,
					Status:             []v1.ConditionStatus{v1.ConditionTrue, v1.ConditionFalse}[rnd.IntN(2)],
					LastTransitionTime: metav1.NewTime(t0.Add(time.Duration(rnd.IntN(100)) * time.Second)),
					LastProbeTime:      metav1.NewTime(t0.Add(time.Duration(rnd.IntN(100)) * time.Second))})
			}
		}
	}
	if rnd.IntN(5) == 0 {
		st.ContainerStatuses = st.ContainerStatuses[:2] // "plain" not reported
	}
	return st
}

// TestViewsReachAWorkerTheBookDoesNotCount: the book's worker set can lag probeManager's. After
// AddPod, RemovePod, AddPod, the first worker's exit report (its keys without the new worker's) may
// arrive after the second AddPod counted the new worker; until probeManager's corrected report
// follows, the book counts no worker for the container. A status in that window must still reach
// the new worker: views cover every probed container of an added pod, whatever the book counts
// (probeManager hands them to the workers it has). Otherwise the worker would probe, or keep, the
// container it was born with: a stale ID, a pod that is no longer running.
func TestViewsReachAWorkerTheBookDoesNotCount(t *testing.T) {
	pod := testPod("u1", v1.Container{Name: "app", LivenessProbe: execProbe()}, v1.Container{Name: "plain"})
	rec := podrecord.New(pod)
	b := New()
	b.AddPod(rec, podrecord.Probes(rec))
	b.SetRuntime(rec.UID, rec, runningStatus("x://1"))
	views, _ := b.Recompute("u1", t0)
	require.Len(t, views, 1)

	b.SetWorkers("u1", nil) // the late report of the first worker's exit
	b.SetRuntime(rec.UID, rec, runningStatus("x://2"))
	views, _ = b.Recompute("u1", t0)
	require.Len(t, views, 1, "the new worker gets the new status")
	assert.Equal(t, "app", views[0].Container, "only probed containers have workers")
	assert.Equal(t, messages.ContainerID("x://2"), views[0].View.ContainerID)
	assert.Equal(t, views, b.Views("u1"), "AddPod's views are the same set")

	unadded := podrecord.New(testPod("u2", v1.Container{Name: "app", LivenessProbe: execProbe()}))
	b.SetRuntime(unadded.UID, unadded, runningStatus("x://3"))
	views, _ = b.Recompute("u2", t0)
	assert.Nil(t, views, "a pod AddPod never gave has no workers to tell")
}

func ptr[T any](v T) *T { return &v }

// A terminated container's view carries its exit code, and every view of the pod whether it
// restarts all its containers in place (kubelet 1.37's ShouldAllContainersRestart: the condition,
// or an exit a RestartAllContainers rule matches): the worker's keep-going reads both.
func TestViewsCarryWhatATerminatedContainersWorkerNeeds(t *testing.T) {
	never := v1.ContainerRestartPolicyNever
	pod := testPod("u1",
		v1.Container{Name: "app", ReadinessProbe: execProbe(), RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{{
			Action: v1.ContainerRestartRuleActionRestartAllContainers, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{
				Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}},
		v1.Container{Name: "other", ReadinessProbe: execProbe()})
	rec := podrecord.New(pod)
	b := New()
	b.AddPod(rec, podrecord.Probes(rec))
	status := func(appExit int32, conds ...v1.PodCondition) *v1.PodStatus {
		return &v1.PodStatus{Phase: v1.PodRunning, Conditions: conds, ContainerStatuses: []v1.ContainerStatus{
			{Name: "app", ContainerID: "x://app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: appExit}}},
			{Name: "other", ContainerID: "x://other", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}},
		}}
	}
	byName := func(views []View) map[string]protocol.ContainerView {
		out := map[string]protocol.ContainerView{}
		for _, v := range views {
			out[v.Container] = *v.View
		}
		return out
	}

	b.SetRuntime(rec.UID, rec, status(3))
	views := byName(must(b.Recompute("u1", t0)))
	assert.True(t, views["app"].Terminated)
	assert.Equal(t, int32(3), views["app"].ExitCode)
	assert.False(t, views["app"].AllRestarting)
	assert.False(t, views["other"].AllRestarting)

	b.SetRuntime(rec.UID, rec, status(42))
	views = byName(must(b.Recompute("u1", t0)))
	assert.Equal(t, int32(42), views["app"].ExitCode)
	assert.True(t, views["app"].AllRestarting, "42 restarts the whole pod")
	assert.True(t, views["other"].AllRestarting)

	b.SetRuntime(rec.UID, rec, status(3, v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue}))
	views = byName(must(b.Recompute("u1", t0)))
	assert.True(t, views["other"].AllRestarting, "the condition says so")
}

func must(views []View, _ []string) []View { return views }

// After AddPod of a pod with no other worker, the book's keys are the pod's probes, kept as a flag
// (no copy of the keys); the set it answers for is the same as a list's: AddPod adds the pod's
// probes to the keys it had, SetWorkers replaces them.
func TestWorkerKeysAfterAddPod(t *testing.T) {
	both := podrecord.New(testPod("u1", v1.Container{Name: "app", ReadinessProbe: execProbe(), LivenessProbe: execProbe()}))
	startupOnly := podrecord.New(testPod("u1", v1.Container{Name: "app", StartupProbe: execProbe()}))
	b := New()
	has := func(typ messages.ProbeType) bool { return probesView{b.pods["u1"]}.HasWorker("app", typ) }
	key := func(typ messages.ProbeType) messages.ProbeKey {
		return messages.ProbeKey{PodUID: "u1", Container: "app", Type: typ}
	}

	b.AddPod(both, podrecord.Probes(both))
	assert.True(t, b.pods["u1"].podProbes)
	assert.Nil(t, b.pods["u1"].workers, "no copy of the keys")
	assert.True(t, has(messages.Readiness))
	assert.True(t, has(messages.Liveness))
	assert.False(t, has(messages.Startup))
	assert.False(t, probesView{b.pods["u1"]}.HasWorker("other", messages.Readiness))

	b.SetWorkers("u1", []messages.ProbeKey{key(messages.Liveness)})
	assert.False(t, has(messages.Readiness))
	assert.True(t, has(messages.Liveness))

	// a worker still exiting (liveness) beside the new pod's probe
	b.AddPod(startupOnly, podrecord.Probes(startupOnly))
	assert.False(t, b.pods["u1"].podProbes)
	assert.True(t, has(messages.Liveness))
	assert.True(t, has(messages.Startup))
	assert.False(t, has(messages.Readiness))

	b.SetWorkers("u1", []messages.ProbeKey{key(messages.Startup)})
	b.AddPod(both, podrecord.Probes(both)) // startup's worker is still exiting
	assert.ElementsMatch(t, []messages.ProbeKey{key(messages.Startup), key(messages.Readiness), key(messages.Liveness)},
		b.pods["u1"].workerKeys())
	b.SetWorkers("u1", nil)
	b.AddPod(startupOnly, podrecord.Probes(startupOnly))
	assert.Equal(t, []messages.ProbeKey{key(messages.Startup)}, b.pods["u1"].workerKeys())
	b.AddPod(both, podrecord.Probes(both)) // startup's worker not reported gone yet: still counted
	assert.ElementsMatch(t, []messages.ProbeKey{key(messages.Startup), key(messages.Readiness), key(messages.Liveness)},
		b.pods["u1"].workerKeys())
	assert.True(t, has(messages.Startup))
}
