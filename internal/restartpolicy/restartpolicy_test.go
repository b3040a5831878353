package restartpolicy

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

func policy(p v1.ContainerRestartPolicy) *v1.ContainerRestartPolicy { return &p }

func rule(action v1.ContainerRestartRuleAction, op v1.ContainerRestartRuleOnExitCodesOperator, values ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{Action: action, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: values}}
}

const (
	restart    = v1.ContainerRestartRuleActionRestart
	restartAll = v1.ContainerRestartRuleActionRestartAllContainers
	in         = v1.ContainerRestartRuleOnExitCodesOpIn
	notIn      = v1.ContainerRestartRuleOnExitCodesOpNotIn
)

func TestShouldRestart(t *testing.T) {
	never, onFailure, always := policy(v1.ContainerRestartPolicyNever), policy(v1.ContainerRestartPolicyOnFailure), policy(v1.ContainerRestartPolicyAlways)
	for _, tc := range []struct {
		name      string
		c         v1.Container
		pod       v1.RestartPolicy
		exit      int32
		want      bool
		restarts  bool // RestartsAll
		matchRule bool
	}{
		{name: "pod Always", pod: v1.RestartPolicyAlways, exit: 0, want: true},
		{name: "pod default is Always", pod: "", exit: 0, want: true},
		{name: "pod OnFailure, 0", pod: v1.RestartPolicyOnFailure, exit: 0, want: false},
		{name: "pod OnFailure, 1", pod: v1.RestartPolicyOnFailure, exit: 1, want: true},
		{name: "pod Never, 1", pod: v1.RestartPolicyNever, exit: 1, want: false},
		{name: "container Never over pod Always", c: v1.Container{RestartPolicy: never}, pod: v1.RestartPolicyAlways, exit: 1, want: false},
		{name: "container Always over pod Never", c: v1.Container{RestartPolicy: always}, pod: v1.RestartPolicyNever, exit: 0, want: true},
		{name: "container OnFailure, 0", c: v1.Container{RestartPolicy: onFailure}, pod: v1.RestartPolicyAlways, exit: 0, want: false},
		{name: "container OnFailure, 3", c: v1.Container{RestartPolicy: onFailure}, pod: v1.RestartPolicyNever, exit: 3, want: true},
		{name: "unknown container policy: the pod's", c: v1.Container{RestartPolicy: policy("Sometimes")}, pod: v1.RestartPolicyNever, exit: 3, want: false},
		{name: "rule In matches", c: v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(restart, in, 42, 43)}},
			pod: v1.RestartPolicyNever, exit: 43, want: true, matchRule: true},
		{name: "rule In misses: the container's Never", c: v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(restart, in, 42)}},
			pod: v1.RestartPolicyAlways, exit: 1, want: false},
		{name: "rule NotIn matches", c: v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(restart, notIn, 0)}},
			pod: v1.RestartPolicyNever, exit: 2, want: true, matchRule: true},
		{name: "rule NotIn misses", c: v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(restart, notIn, 0)}},
			pod: v1.RestartPolicyAlways, exit: 0, want: false},
		{name: "empty values: In matches nothing", c: v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(restart, in)}},
			pod: v1.RestartPolicyAlways, exit: 5, want: false},
		{name: "empty values: NotIn matches everything", c: v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(restart, notIn)}},
			pod: v1.RestartPolicyNever, exit: 0, want: true, matchRule: true},
		{name: "first matching rule wins", c: v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{
			rule(restartAll, in, 7), rule(restart, notIn, 0)}}, pod: v1.RestartPolicyNever, exit: 7, want: true, restarts: true, matchRule: true},
		{name: "second rule", c: v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{
			rule(restartAll, in, 7), rule(restart, notIn, 0)}}, pod: v1.RestartPolicyNever, exit: 8, want: true, matchRule: true},
		{name: "unknown operator matches nothing", c: v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(restart, "Between", 1)}},
			pod: v1.RestartPolicyAlways, exit: 1, want: false},
		{name: "unknown action: the container's policy", c: v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule("Ignore", in, 1)}},
			pod: v1.RestartPolicyAlways, exit: 1, want: false, matchRule: true},
		{name: "rule without exitCodes matches nothing", c: v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{{Action: restart}}},
			pod: v1.RestartPolicyAlways, exit: 1, want: false},
		{name: "rules without a container policy are not read", c: v1.Container{RestartPolicyRules: []v1.ContainerRestartRule{rule(restart, in, 1)}},
			pod: v1.RestartPolicyNever, exit: 1, want: false, matchRule: true},
		{name: "sidecar: Always", c: v1.Container{RestartPolicy: always}, pod: v1.RestartPolicyNever, exit: 1, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ShouldRestart(&tc.c, tc.pod, tc.exit))
			assert.Equal(t, tc.restarts, RestartsAll(&tc.c, tc.exit))
			_, matched := MatchingRule(&tc.c, tc.exit)
			assert.Equal(t, tc.matchRule, matched)
		})
	}
}

func TestAllRestarting(t *testing.T) {
	never := policy(v1.ContainerRestartPolicyNever)
	spec := v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init", RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(restartAll, in, 9)}}},
		Containers: []v1.Container{{Name: "app", RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(restartAll, in, 42)}},
			{Name: "other"}},
	}
	terminated := func(name string, code int32) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
	}
	running := func(name string) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	}
	for i, tc := range []struct {
		status *v1.PodStatus
		want   bool
	}{
		{nil, false},
		{&v1.PodStatus{}, false},
		{&v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{running("app"), terminated("other", 42)}}, false},
		{&v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{terminated("app", 42)}}, true},
		{&v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{terminated("app", 41)}}, false},
		{&v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{terminated("init", 9)}}, true},
		{&v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue}}}, true},
		{&v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse}}}, false},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			assert.Equal(t, tc.want, AllRestarting(spec.InitContainers, spec.Containers, tc.status))
		})
	}
	assert.True(t, CouldRestartAll(&spec))
	assert.False(t, CouldRestartAll(&v1.PodSpec{Containers: []v1.Container{{Name: "a", RestartPolicy: never,
		RestartPolicyRules: []v1.ContainerRestartRule{rule(restart, in, 1)}}}}))
}

// TestNoAllocation: the functions run on every worker's doProbe of a terminated container.
func TestNoAllocation(t *testing.T) {
	c := v1.Container{RestartPolicy: policy(v1.ContainerRestartPolicyNever), RestartPolicyRules: []v1.ContainerRestartRule{rule(restart, in, 1, 2, 3)}}
	st := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 2}}}}}
	spec := &v1.PodSpec{Containers: []v1.Container{c}}
	spec.Containers[0].Name = "a"
	allocs := testing.AllocsPerRun(100, func() {
		_ = ShouldRestart(&c, v1.RestartPolicyNever, 2)
		_ = AllRestarting(spec.InitContainers, spec.Containers, st)
	})
	assert.Zero(t, allocs)
}
