package upstream

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"

	"github.com/probeactor/probeactor/internal/restartpolicy"
)

// TestRestartRulesAreKubelets: what decides a restart (node's restarts and phase) and a probe
// worker's keep-going after its container terminated (kubelet 1.37 worker.go doProbe:
// ContainerShouldRestart(container, pod, exitCode) || ShouldAllContainersRestart(pod, nil, status),
// both gates on, their defaults) is upstream's own functions' answer, on 5,000 random containers,
// pods and statuses: container and pod restart policies (unknown values included), rules with In,
// NotIn, unknown operators, empty values, no exitCodes, Restart, RestartAllContainers and unknown
// actions, exit codes inside and outside the rules, and the AllContainersRestarting condition.
func TestRestartRulesAreKubelets(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 37))
	pick := func(n int) int { return r.IntN(n) }
	containerPolicies := []*v1.ContainerRestartPolicy{nil, ptr(v1.ContainerRestartPolicyAlways), ptr(v1.ContainerRestartPolicyOnFailure),
		ptr(v1.ContainerRestartPolicyNever), ptr(v1.ContainerRestartPolicy("Sometimes"))}
	podPolicies := []v1.RestartPolicy{"", v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}
	operators := []v1.ContainerRestartRuleOnExitCodesOperator{v1.ContainerRestartRuleOnExitCodesOpIn, v1.ContainerRestartRuleOnExitCodesOpNotIn, "Between"}
	actions := []v1.ContainerRestartRuleAction{v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers, "Ignore"}
	codes := []int32{0, 1, 2, 42, 137, 255}
	container := func(name string) v1.Container {
		c := v1.Container{Name: name, RestartPolicy: containerPolicies[pick(len(containerPolicies))]}
		for range pick(4) {
			rule := v1.ContainerRestartRule{Action: actions[pick(len(actions))]}
			if pick(8) > 0 {
				rule.ExitCodes = &v1.ContainerRestartRuleOnExitCodes{Operator: operators[pick(len(operators))]}
				for range pick(4) {
					rule.ExitCodes.Values = append(rule.ExitCodes.Values, codes[pick(len(codes))])
				}
			}
			c.RestartPolicyRules = append(c.RestartPolicyRules, rule)
		}
		return c
	}
	state := func() v1.ContainerState {
		switch pick(3) {
		case 0:
			return v1.ContainerState{Running: &v1.ContainerStateRunning{}}
		case 1:
			return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}
		default:
			return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: codes[pick(len(codes))]}}
		}
	}
	for i := range 5000 {
		pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: podPolicies[pick(len(podPolicies))],
			InitContainers: []v1.Container{container("init")}, Containers: []v1.Container{container("a"), container("b")}}}
		status := &v1.PodStatus{
			InitContainerStatuses: []v1.ContainerStatus{{Name: "init", State: state()}},
			ContainerStatuses:     []v1.ContainerStatus{{Name: "a", State: state()}, {Name: "b", State: state()}},
		}
		if pick(6) == 0 {
			status.Conditions = []v1.PodCondition{{Type: v1.AllContainersRestarting, Status: []v1.ConditionStatus{v1.ConditionTrue, v1.ConditionFalse}[pick(2)]}}
		}
		require.Equal(t, podutil.AllContainersCouldRestart(&pod.Spec), restartpolicy.CouldRestartAll(&pod.Spec), "case %d: %+v", i, pod.Spec)
		require.Equal(t, kubecontainer.ShouldAllContainersRestart(pod, nil, status), restartpolicy.AllRestarting(pod.Spec.InitContainers, pod.Spec.Containers, status),
			"case %d: %+v / %+v", i, pod.Spec, status)
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			for _, code := range codes {
				require.Equal(t, podutil.ContainerShouldRestart(c, pod.Spec, code), restartpolicy.ShouldRestart(&c, pod.Spec.RestartPolicy, code),
					"case %d: %+v, pod %q, exit %d", i, c, pod.Spec.RestartPolicy, code)
				wantRule, wantOK := podutil.FindMatchingContainerRestartRule(c, code)
				gotRule, gotOK := restartpolicy.MatchingRule(&c, code)
				require.Equal(t, wantOK, gotOK, "case %d: %+v exit %d", i, c, code)
				require.Equal(t, wantRule, gotRule, "case %d: %+v exit %d", i, c, code)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }
