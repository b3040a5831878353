package podspec

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidate(t *testing.T) {
	never := v1.ContainerRestartPolicyNever
	onFailure := v1.ContainerRestartPolicyOnFailure
	sometimes := v1.ContainerRestartPolicy("Sometimes")
	always := v1.ContainerRestartPolicyAlways
	meta := metav1.ObjectMeta{Name: "p", UID: "u"}
	negative := int64(-1)
	cases := []struct {
		name string
		pod  v1.Pod
		want []string
	}{
		{"valid", v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}},
			InitContainers: []v1.Container{{Name: "side", RestartPolicy: &always}}}}, nil},
		{"no identity, no containers", v1.Pod{}, []string{"metadata.uid: Required value", "metadata.name: Required value: name or generateName is required", "spec.containers: Required value"}},
		{"generateName", v1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", UID: "u"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}},
			[]string{"metadata.name: Required value: generateName is not supported here: give the pod its name"}},
		{"bad names", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "P!", Namespace: "N_", UID: "u"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}},
			[]string{`metadata.name: Invalid value: "P!"`, `metadata.namespace: Invalid value: "N_"`}},
		{"duplicate names", v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "c"}},
			Containers:     []v1.Container{{Name: "c"}, {}}}},
			[]string{`spec.initContainers[0].name: Duplicate value: "c"`, "spec.containers[1].name: Required value"}},
		{"bad policies", v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{RestartPolicy: "Sometimes", TerminationGracePeriodSeconds: &negative,
			InitContainers: []v1.Container{{Name: "i", RestartPolicy: &sometimes}},
			Containers:     []v1.Container{{Name: "C_", RestartPolicy: &sometimes}}}},
			[]string{`spec.restartPolicy: Unsupported value: "Sometimes"`,
				`spec.initContainers[0].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"`,
				`spec.containers[0].name: Invalid value: "C_"`,
				`spec.containers[0].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"`,
				"spec.terminationGracePeriodSeconds: Invalid value: -1"}},
		{"container restart policies and rules (1.37)", v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "i", RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{
				rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 1)}},
				{Name: "side", RestartPolicy: &always, RestartPolicyRules: []v1.ContainerRestartRule{
					rule(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpIn, 9)}}},
			Containers: []v1.Container{{Name: "c", RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{
				rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42),
				rule(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpNotIn),
			}}, {Name: "d", RestartPolicy: &onFailure}}}}, nil},
		{"bad restart rules", v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "i", RestartPolicyRules: []v1.ContainerRestartRule{
				rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 1)}}},
			Containers: []v1.Container{{Name: "c", RestartPolicyRules: []v1.ContainerRestartRule{
				rule("Ignore", "Between", 1), {Action: v1.ContainerRestartRuleActionRestart},
				rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, make([]int32, 256)...),
			}}, {Name: "d", RestartPolicy: &never, RestartPolicyRules: slices.Repeat([]v1.ContainerRestartRule{
				rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 1)}, 21)}}}},
			[]string{"spec.initContainers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used",
				"spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used",
				`spec.containers[0].restartPolicyRules[0].action: Unsupported value: "Ignore": supported values: "Restart", "RestartAllContainers"`,
				`spec.containers[0].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Between": supported values: "In", "NotIn"`,
				"spec.containers[0].restartPolicyRules[1].exitCodes: Required value: must be specified",
				"spec.containers[0].restartPolicyRules[2].exitCodes.values: Too many: 256: must have at most 255 items",
				"spec.containers[1].restartPolicyRules: Too many: 21: must have at most 20 items",
			}},
		{"env", v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c",
			Env: []v1.EnvVar{{Value: "x"}, {Name: "A", Value: "x", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "A=B", Value: "x"}, {Name: "tab\there", Value: "x"}, {Name: "1st my.var-x (relaxed)", Value: "x"}}}}}},
			[]string{"spec.containers[0].env[0].name: Required value", "spec.containers[0].env[1].valueFrom: Invalid value",
				`spec.containers[0].env[2].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`,
				`spec.containers[0].env[3].name: Invalid value: "tab\there": a valid environment variable name must consist only of printable ASCII characters other than '='`}},
		{"probe", v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c",
			LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: -1,
				TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}}}}},
			[]string{"spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(&tc.pod)
			assert.Len(t, errs, len(tc.want), "%v", errs)
			for _, w := range tc.want {
				assert.Contains(t, errs.ToAggregate().Error(), w)
			}
		})
	}
	assert.NotEmpty(t, Validate(nil), "a nil pod is refused, not a panic")
}

func rule(action v1.ContainerRestartRuleAction, op v1.ContainerRestartRuleOnExitCodesOperator, values ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{Action: action, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: values}}
}

func TestSetDefaults(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c",
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{}}}}}}}
	SetDefaults(pod)
	assert.Equal(t, "default", pod.Namespace)
	assert.Empty(t, pod.UID, "an identity is never invented")
	assert.Equal(t, v1.RestartPolicyAlways, pod.Spec.RestartPolicy)
	assert.Equal(t, int64(30), *pod.Spec.TerminationGracePeriodSeconds)
	p := pod.Spec.Containers[0].ReadinessProbe
	assert.Equal(t, []int32{1, 10, 1, 3}, []int32{p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold})
	assert.Equal(t, "/", p.HTTPGet.Path)
	before := pod.DeepCopy()
	SetDefaults(pod)
	assert.Equal(t, before, pod, "idempotent")
	SetDefaults(nil)

	negative := int64(-5)
	pod.Spec.TerminationGracePeriodSeconds = &negative
	SetDefaults(pod)
	assert.Equal(t, int64(1), *pod.Spec.TerminationGracePeriodSeconds, "a negative grace period is 1, as the API server's SetDefaults_Pod makes it")
	assert.Equal(t, int64(-5), negative, "the caller's value is not written through")
}

func TestPrepareAndUnique(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c",
		LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}}}}}
	require.Empty(t, Prepare(pod), "a pod valid once defaulted")
	errs := Validate(&v1.Pod{})
	assert.Equal(t, errs, Unique(append(errs, errs...)))
}
