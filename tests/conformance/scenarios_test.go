package conformance

import (
	"errors"
	"time"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

const s = time.Second

func failureThreshold(n int32) func(*v1.Probe) { return func(p *v1.Probe) { p.FailureThreshold = n } }
func successThreshold(n int32) func(*v1.Probe) { return func(p *v1.Probe) { p.SuccessThreshold = n } }
func initialDelay(n int32) func(*v1.Probe)     { return func(p *v1.Probe) { p.InitialDelaySeconds = n } }

const (
	L = messages.Liveness
	R = messages.Readiness
	S = messages.Startup
)

// Scenarios follow the spec's test catalog (§7.1, §7.2, §7.12) at the level both implementations
// expose: cached results, probe-adjusted pod status, kill requests and probe attempt counts. Checks
// are made half-way between ticks so that the exact instant of the first probe (kubelet probes as
// soon as a worker starts; an implementation may wait for the first status) does not matter.
var scenarios = []scenario{
	{
		name: "initial_values_then_startup_gates_readiness_and_liveness",
		run: func(x *h) {
			pod := Pod("p", Container("c", Probe(L, initialDelay(10)), Probe(R, initialDelay(10)), Probe(S, initialDelay(10))))
			x.start(pod)
			x.at(s + s/2)
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), L), "liveness initial value")
			assert.Equal(x.t, messages.Failure, x.result(ID("p", "c", 1), R), "readiness initial value")
			assert.Equal(x.t, messages.Unknown, x.result(ID("p", "c", 1), S), "startup initial value")
			cs := x.container("p", "c")
			assert.False(x.t, started(cs), "Started before the startup probe succeeded")
			assert.False(x.t, cs.Ready, "Ready before any readiness success")
			assert.Equal(x.t, v1.ConditionFalse, x.condition("p", v1.PodReady).Status)
			x.at(9*s + s/2)
			assert.Zero(x.t, x.prober.Calls("c", S)+x.prober.Calls("c", L)+x.prober.Calls("c", R), "probed within initialDelaySeconds")
			x.at(12*s + s/2)
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), S))
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), R))
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), L))
			cs = x.container("p", "c")
			assert.True(x.t, started(cs), "Started after startup success")
			assert.True(x.t, cs.Ready, "Ready after readiness success")
			assert.Equal(x.t, v1.ConditionTrue, x.condition("p", v1.ContainersReady).Status)
			assert.Equal(x.t, v1.ConditionTrue, x.condition("p", v1.PodReady).Status)
		},
	},
	{
		name: "readiness_failure_threshold",
		run: func(x *h) {
			pod := Pod("p", Container("c", nil, Probe(R, failureThreshold(3)), nil))
			x.start(pod)
			x.at(s + s/2)
			require.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), R))
			require.True(x.t, x.container("p", "c").Ready)
			x.prober.Set("c", R, probes.Failure)
			x.at(3*s + s/2) // two failures (t=2 s, 3 s): below the threshold
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), R))
			assert.True(x.t, x.container("p", "c").Ready)
			x.at(4*s + s/2) // third failure
			assert.Equal(x.t, messages.Failure, x.result(ID("p", "c", 1), R))
			assert.False(x.t, x.container("p", "c").Ready)
			cr := x.condition("p", v1.ContainersReady)
			assert.Equal(x.t, v1.ConditionFalse, cr.Status)
			assert.Equal(x.t, "ContainersNotReady", cr.Reason)
			assert.Equal(x.t, "containers with unready status: [c]", cr.Message)
			assert.Empty(x.t, x.runtime.Kills(), "readiness failure must not kill")
		},
	},
	{
		name: "readiness_success_threshold",
		run: func(x *h) {
			pod := Pod("p", Container("c", nil, Probe(R, successThreshold(3)), nil))
			x.start(pod)
			// At t=0 the actor core probes twice (first probe on the first container view, plus the
			// trigger). kubelet probes once if the manual trigger of the status push finds the new
			// status (its first doProbe ran before any status existed), else not before its first
			// tick: UpdatePodStatus triggers the worker before the status manager stores the status,
			// a race kubelet has too. Either way fewer than three successes: no result yet, or the
			// initial Failure.
			x.at(s / 2)
			if r, ok := x.d.Result(ID("p", "c", 1), R); ok {
				assert.Equal(x.t, messages.Failure, r)
			}
			assert.False(x.t, x.container("p", "c").Ready)
			x.at(3*s + s/2) // at least three
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), R))
			assert.True(x.t, x.container("p", "c").Ready)
			x.prober.Set("c", R, probes.Failure)
			x.at(4*s + s/2)
			assert.Equal(x.t, messages.Failure, x.result(ID("p", "c", 1), R), "one failure with failureThreshold 1")
		},
	},
	{
		name: "startup_holds_liveness_and_readiness_off",
		run: func(x *h) {
			pod := Pod("p", Container("c", Probe(L), Probe(R), Probe(S, failureThreshold(10))))
			x.prober.Set("c", S, probes.Failure)
			x.prober.Set("c", L, probes.Failure)
			x.runtime.Hold() // keep the container (and its ID) after the liveness kill request
			x.start(pod)
			x.at(3*s + s/2)
			assert.Equal(x.t, messages.Unknown, x.result(ID("p", "c", 1), S))
			assert.Positive(x.t, x.prober.Calls("c", S))
			assert.Zero(x.t, x.prober.Calls("c", L), "liveness probed before the container started")
			assert.Zero(x.t, x.prober.Calls("c", R), "readiness probed before the container started")
			assert.Empty(x.t, x.runtime.Kills())
			assert.False(x.t, started(x.container("p", "c")))
			x.prober.Set("c", S, probes.Success)
			x.at(4*s + s/2)
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), S))
			assert.True(x.t, started(x.container("p", "c")))
			x.at(6*s + s/2)
			assert.Positive(x.t, x.prober.Calls("c", L), "liveness probed after the container started")
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), R))
			assert.Equal(x.t, messages.Failure, x.result(ID("p", "c", 1), L))
			kills := x.runtime.Kills()
			require.Len(x.t, kills, 1)
			assert.Equal(x.t, messages.Liveness, kills[0].Probe)
		},
	},
	{
		name: "startup_success_holds_the_startup_probe",
		run: func(x *h) {
			pod := Pod("p", Container("c", nil, nil, Probe(S, failureThreshold(3))))
			x.start(pod)
			x.at(s + s/2)
			require.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), S))
			calls := x.prober.Calls("c", S)
			x.prober.Set("c", S, probes.Failure)
			x.at(6*s + s/2)
			assert.Equal(x.t, calls, x.prober.Calls("c", S), "startup probed after success")
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), S))
			assert.Empty(x.t, x.runtime.Kills())
		},
	},
	{
		name: "liveness_failure_kills_holds_and_restart_gets_a_fresh_threshold",
		run: func(x *h) {
			grace := int64(7)
			pod := Pod("p", Container("c", Probe(L, failureThreshold(3), func(p *v1.Probe) { p.TerminationGracePeriodSeconds = &grace }), nil, nil))
			x.prober.Set("c", L, probes.Failure)
			x.runtime.Hold() // the kill waits, so the old container keeps running while we watch the hold
			x.start(pod)
			x.at(2*s + s/2) // at most two failures
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), L))
			assert.Empty(x.t, x.runtime.Kills())
			x.at(3*s + s/2)
			assert.Equal(x.t, messages.Failure, x.result(ID("p", "c", 1), L))
			kills := x.runtime.Kills()
			require.Len(x.t, kills, 1)
			k := kills[0]
			assert.Equal(x.t, "c", k.Container)
			assert.Equal(x.t, ID("p", "c", 1), k.ContainerID)
			assert.Equal(x.t, messages.Liveness, k.Probe)
			assert.True(x.t, k.Restart)
			assert.Equal(x.t, "Container c failed liveness probe, will be restarted", k.Message)
			assert.Equal(x.t, 7*s, k.GracePeriod)
			assert.Equal(x.t, types.UID("p"), k.Pod.UID)
			held := x.prober.Calls("c", L)
			x.at(6*s + s/2)
			assert.Equal(x.t, held, x.prober.Calls("c", L), "liveness probed while on hold")
			// The runtime kills and restarts the container: a new container ID.
			x.runtime.Release()
			x.runtime.Hold()
			x.at(7*s + s/2)
			x.noResult(ID("p", "c", 1), L)
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 2), L), "new container starts from the initial value with a fresh threshold")
			assert.Greater(x.t, x.prober.Calls("c", L), held, "probing resumed for the new container")
			x.at(10*s + s/2)
			assert.Equal(x.t, messages.Failure, x.result(ID("p", "c", 2), L))
			require.Len(x.t, x.runtime.Kills(), 2)
			assert.Equal(x.t, ID("p", "c", 2), x.runtime.Kills()[1].ContainerID)
		},
	},
	{
		name: "startup_failure_kills_without_restart_under_restart_policy_never",
		run: func(x *h) {
			pod := Pod("p", Container("c", Probe(L), nil, Probe(S, failureThreshold(2))))
			pod.Spec.RestartPolicy = v1.RestartPolicyNever
			x.prober.Set("c", S, probes.Failure)
			x.start(pod)
			x.at(3*s + s/2)
			assert.Equal(x.t, messages.Failure, x.result(ID("p", "c", 1), S))
			kills := x.runtime.Kills()
			require.Len(x.t, kills, 1)
			assert.Equal(x.t, messages.Startup, kills[0].Probe)
			assert.False(x.t, kills[0].Restart)
			assert.Equal(x.t, "Container c failed startup probe", kills[0].Message)
			assert.Equal(x.t, 30*s, kills[0].GracePeriod, "pod default grace period")
			assert.Zero(x.t, x.prober.Calls("c", L))
			assert.False(x.t, started(x.container("p", "c")))
		},
	},
	{
		name: "readiness_restarted_container_starts_not_ready",
		run: func(x *h) {
			pod := Pod("p", Container("c", nil, Probe(R, successThreshold(2)), nil))
			x.start(pod)
			x.at(3*s + s/2)
			require.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), R))
			x.d.SetPodStatus(pod, Running(pod, time.Now(), map[string]messages.ContainerID{"c": ID("p", "c", 2)}))
			x.at(4*s + s/2)
			x.noResult(ID("p", "c", 1), R)
			// resultRun carries over across a new container ID in kubelet (only a hold resets it), so the
			// new container may already be Success after one probe; it must have started from Failure.
			x.at(6*s + s/2)
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 2), R))
			assert.True(x.t, x.container("p", "c").Ready)
		},
	},
	{
		// kubelet 1.37 (PodObservedGenerationTracking, GA and locked since 1.35): the status and the
		// conditions probing drives carry the generation of the pod they were computed for.
		name: "status_and_probe_conditions_observe_the_pod_generation",
		run: func(x *h) {
			pod := Pod("p", Container("c", nil, Probe(R), nil))
			pod.Generation = 3
			x.start(pod)
			x.at(s + s/2)
			require.True(x.t, x.container("p", "c").Ready)
			assert.Equal(x.t, int64(3), x.status("p").ObservedGeneration)
			assert.Equal(x.t, int64(3), x.condition("p", v1.PodReady).ObservedGeneration)
			assert.Equal(x.t, int64(3), x.condition("p", v1.ContainersReady).ObservedGeneration)
			next := pod.DeepCopy()
			next.Generation = 4
			x.d.SetPodStatus(next, Running(next, x.t0, nil))
			x.at(2*s + s/2)
			assert.Equal(x.t, int64(4), x.status("p").ObservedGeneration)
			assert.Equal(x.t, int64(4), x.condition("p", v1.PodReady).ObservedGeneration)
			assert.Equal(x.t, int64(4), x.condition("p", v1.ContainersReady).ObservedGeneration)
		},
	},
	{
		name: "waiting_container_is_not_ready_and_not_probed",
		run: func(x *h) {
			pod := Pod("p", Container("c", Probe(L), Probe(R), nil))
			require.NoError(x.t, x.d.AddPod(pod))
			st := Running(pod, x.t0, nil)
			st.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
			x.d.SetPodStatus(pod, st)
			x.at(2*s + s/2)
			assert.Equal(x.t, messages.Failure, x.result(ID("p", "c", 1), R))
			assert.Equal(x.t, messages.Failure, x.result(ID("p", "c", 1), L))
			assert.Zero(x.t, x.prober.Calls("c", R)+x.prober.Calls("c", L))
			assert.False(x.t, x.container("p", "c").Ready)
		},
	},
	{
		name: "pod_removal_stops_every_worker_and_forgets_results",
		run: func(x *h) {
			pod := Pod("p", Container("a", Probe(L), Probe(R), Probe(S)), Container("b", nil, Probe(R), nil))
			x.start(pod)
			x.at(2*s + s/2)
			for _, pt := range []messages.ProbeType{L, R, S} {
				require.Equal(x.t, messages.Success, x.result(ID("p", "a", 1), pt))
			}
			x.d.RemovePod(pod)
			x.at(3*s + s/2)
			calls := x.prober.Calls("a", L) + x.prober.Calls("a", R) + x.prober.Calls("a", S) + x.prober.Calls("b", R)
			x.at(6*s + s/2)
			assert.Equal(x.t, calls, x.prober.Calls("a", L)+x.prober.Calls("a", R)+x.prober.Calls("a", S)+x.prober.Calls("b", R), "probed after RemovePod")
			for _, pt := range []messages.ProbeType{L, R, S} {
				x.noResult(ID("p", "a", 1), pt)
			}
			x.noResult(ID("p", "b", 1), R)
			x.d.RemovePod(pod) // idempotent
			x.at(7 * s)
		},
	},
	{
		name: "stop_liveness_and_startup_keeps_readiness",
		run: func(x *h) {
			pod := Pod("p", Container("c", Probe(L), Probe(R), nil))
			x.start(pod)
			x.at(2*s + s/2)
			require.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), L))
			x.d.StopLivenessAndStartup(pod)
			x.at(3*s + s/2)
			l, r := x.prober.Calls("c", L), x.prober.Calls("c", R)
			x.at(6*s + s/2)
			assert.Equal(x.t, l, x.prober.Calls("c", L), "liveness probed after StopLivenessAndStartup")
			assert.Greater(x.t, x.prober.Calls("c", R), r, "readiness stopped too")
			x.noResult(ID("p", "c", 1), L)
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), R))
		},
	},
	{
		name: "cleanup_pods_keeps_only_desired",
		run: func(x *h) {
			keep := Pod("keep", Container("k", nil, Probe(R), nil))
			drop := Pod("drop", Container("d", Probe(L), Probe(R), nil))
			x.start(keep)
			x.start(drop)
			x.at(1*s + s/2)
			x.d.CleanupPods(map[types.UID]struct{}{"keep": {}})
			x.d.CleanupPods(map[types.UID]struct{}{"keep": {}}) // repeated: no deadlock
			x.at(2*s + s/2)
			k, d := x.prober.Calls("k", R), x.prober.Calls("d", L)+x.prober.Calls("d", R)
			x.at(5*s + s/2)
			assert.Greater(x.t, x.prober.Calls("k", R), k)
			assert.Equal(x.t, d, x.prober.Calls("d", L)+x.prober.Calls("d", R))
			assert.Equal(x.t, messages.Success, x.result(ID("keep", "k", 1), R))
			x.noResult(ID("drop", "d", 1), R)
			x.noResult(ID("drop", "d", 1), L)
		},
	},
	{
		name: "terminal_phase_ends_the_workers",
		run: func(x *h) {
			pod := Pod("p", Container("c", Probe(L), Probe(R), nil))
			x.start(pod)
			x.at(s + s/2)
			require.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), R))
			x.runtime.Update(pod.UID, func(st *v1.PodStatus) {
				st.Phase = v1.PodSucceeded
				st.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}
			})
			x.at(2*s + s/2)
			calls := x.prober.Calls("c", L) + x.prober.Calls("c", R)
			x.at(5*s + s/2)
			assert.Equal(x.t, calls, x.prober.Calls("c", L)+x.prober.Calls("c", R))
			x.noResult(ID("p", "c", 1), R)
			x.noResult(ID("p", "c", 1), L)
		},
	},
	{
		// kubelet 1.37 (ContainerRestartRules): a terminated container's worker keeps going while
		// its restart rules or policy restart it, whatever the pod's restartPolicy says.
		name: "restart_rules_decide_whether_a_terminated_containers_worker_keeps_going",
		run: func(x *h) {
			never := v1.ContainerRestartPolicyNever
			rules := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
			a, b := Container("a", nil, Probe(R), nil), Container("b", nil, Probe(R), nil)
			a.RestartPolicy, a.RestartPolicyRules = &never, rules
			b.RestartPolicy, b.RestartPolicyRules = &never, rules
			pod := Pod("p", a, b)
			x.start(pod)
			x.at(s + s/2)
			require.Equal(x.t, messages.Success, x.result(ID("p", "a", 1), R))
			require.Equal(x.t, messages.Success, x.result(ID("p", "b", 1), R))
			st := Running(pod, x.t0, nil)
			st.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 42}} // its rule restarts it
			st.ContainerStatuses[1].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}  // Never: done
			x.d.SetPodStatus(pod, st)
			x.at(2*s + s/2)
			assert.Equal(x.t, messages.Failure, x.result(ID("p", "a", 1), R))
			x.noResult(ID("p", "b", 1), R) // the worker exited and removed its result
			callsB := x.prober.Calls("b", R)
			x.d.SetPodStatus(pod, Running(pod, time.Now(), map[string]messages.ContainerID{"a": ID("p", "a", 2), "b": ID("p", "b", 2)}))
			x.at(5*s + s/2)
			assert.Equal(x.t, messages.Success, x.result(ID("p", "a", 2), R), "a's worker probes the restarted container")
			x.noResult(ID("p", "b", 2), R)
			assert.Equal(x.t, callsB, x.prober.Calls("b", R), "b's worker is gone")
		},
	},
	{
		// kubelet 1.37 with ChangeContainerStatusOnKubeletRestart off (KEP-4781): a container that
		// started more than 10 s before the prober gets no initial value; its result appears only
		// once a probe reaches a threshold.
		name: "a_container_that_started_before_the_prober_keeps_its_result",
		run: func(x *h) {
			pod := Pod("p", Container("c", nil, Probe(R, failureThreshold(5)), nil))
			x.prober.Set("c", R, probes.Failure)
			require.NoError(x.t, x.d.AddPod(pod))
			x.d.SetPodStatus(pod, Running(pod, x.t0.Add(-time.Hour), nil))
			x.at(s + s/2)
			// Probed (kubeletstyle's status triggers run it once more than the actor core does), and
			// still below the threshold of 5: no result, not ready.
			require.Positive(x.t, x.prober.Calls("c", R))
			require.Less(x.t, x.prober.Calls("c", R), 5)
			x.noResult(ID("p", "c", 1), R)
			assert.False(x.t, x.container("p", "c").Ready)
			x.at(6*s + s/2)
			assert.Equal(x.t, messages.Failure, x.result(ID("p", "c", 1), R), "five failures reach the threshold")
			x.prober.Set("c", R, probes.Success)
			x.at(7*s + s/2)
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), R))
			assert.True(x.t, x.container("p", "c").Ready)
		},
	},
	{
		name: "probe_error_changes_nothing",
		run: func(x *h) {
			pod := Pod("p", Container("c", Probe(L), Probe(R), nil))
			x.start(pod)
			x.at(s + s/2)
			require.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), R))
			x.prober.SetError("c", R, errors.New("port not found"))
			x.prober.SetError("c", L, errors.New("port not found"))
			x.at(5*s + s/2)
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), R))
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), L))
			assert.Empty(x.t, x.runtime.Kills())
		},
	},
	{
		name: "panicking_prober_keeps_the_result_and_the_worker",
		run: func(x *h) {
			pod := Pod("p", Container("c", nil, Probe(R), nil))
			x.start(pod)
			x.at(s + s/2)
			require.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), R))
			x.prober.SetPanic("c", R)
			x.at(3*s + s/2)
			assert.Equal(x.t, messages.Success, x.result(ID("p", "c", 1), R), "a panic changed the result")
			x.prober.Set("c", R, probes.Failure)
			x.at(5*s + s/2)
			assert.Equal(x.t, messages.Failure, x.result(ID("p", "c", 1), R), "worker gone after a panic")
		},
	},
	{
		name: "subscriber_sees_every_final_state",
		run: func(x *h) {
			pod := Pod("p", Container("a", Probe(L), Probe(R), nil), Container("b", nil, Probe(R), nil))
			x.start(pod)
			x.at(s + s/2)
			x.prober.Set("b", R, probes.Failure)
			x.at(3*s + s/2)
			final := x.changes.final()
			assert.Equal(x.t, messages.Success, final[key{ID("p", "a", 1), R}])
			assert.Equal(x.t, messages.Failure, final[key{ID("p", "b", 1), R}])
			assert.Equal(x.t, messages.Success, final[key{ID("p", "a", 1), L}])
		},
	},
}
