package podspec

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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

// TestValidatePathsAndOrder: which container a clash of names is reported on, an empty name's
// clashes, the paths of errors in later containers' hooks and probes, and the order of the errors,
// with few containers (names compared by a scan) and many (maps).
func TestValidatePathsAndOrder(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "p", UID: "u"}
	always := v1.ContainerRestartPolicyAlways
	grace := int64(30)
	mtls := v1.GRPCProbeMode("mTLS")
	probe := func(h v1.ProbeHandler) *v1.Probe {
		return &v1.Probe{ProbeHandler: h, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	}
	named := func(names ...string) []v1.Container {
		cs := make([]v1.Container, len(names))
		for i, n := range names {
			cs[i].Name = n
		}
		return cs
	}
	cases := []struct {
		name string
		pod  v1.Pod
		want []string
	}{
		{"duplicates", v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{
			InitContainers: named("a", "i", "i", "", ""),
			Containers:     named("a", "b", "a", "b")}},
			[]string{
				`spec.containers[2].name: Duplicate value: "a"`,
				`spec.containers[3].name: Duplicate value: "b"`,
				`spec.initContainers[0].name: Duplicate value: "a"`,
				`spec.initContainers[2].name: Duplicate value: "i"`,
				"spec.initContainers[3].name: Required value",
				"spec.initContainers[4].name: Required value",
			}},
		{"empty names", v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{
			InitContainers: named("", "", "b"),
			Containers:     named("b", "", "")}},
			[]string{
				`spec.containers[2].name: Duplicate value: ""`,
				`spec.initContainers[0].name: Duplicate value: ""`,
				`spec.initContainers[1].name: Duplicate value: ""`,
				`spec.initContainers[2].name: Duplicate value: "b"`,
				"spec.initContainers[0].name: Required value",
				"spec.initContainers[1].name: Required value",
				"spec.containers[1].name: Required value",
				"spec.containers[2].name: Required value",
			}},
		{"errors of every kind, in order", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "I_", LivenessProbe: &v1.Probe{}}},
			Containers: []v1.Container{{Name: "c"}, {Name: "c", Env: []v1.EnvVar{{Value: "x"}},
				RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart}},
				Lifecycle:          &v1.Lifecycle{PreStop: &v1.LifecycleHandler{}},
				LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
					TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 2, FailureThreshold: 1}}}}},
			[]string{
				"metadata.uid: Required value: the pod's identity: every later call names the pod by it",
				`spec.containers[1].name: Duplicate value: "c"`,
				`spec.initContainers[0].name: Invalid value: "I_": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				"spec.containers[1].restartPolicy: Required value: must specify restartPolicy when restart rules are used",
				"spec.containers[1].restartPolicyRules[0].exitCodes: Required value: must be specified",
				"spec.containers[1].env[0].name: Required value",
				"spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
				"spec.containers[1].lifecycle.preStop: Required value: must specify a handler type",
				"spec.containers[1].livenessProbe.successThreshold: Invalid value: 2: must be 1",
			}},
		{"the hooks and probes of a second container and a sidecar", v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace,
			InitContainers: []v1.Container{{Name: "i"}, {Name: "s", RestartPolicy: &always, Lifecycle: &v1.Lifecycle{
				PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 31}}}, StartupProbe: probe(v1.ProbeHandler{})}},
			Containers: []v1.Container{
				{Name: "a", Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}}},
					LivenessProbe: probe(v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("http")}})},
				{Name: "b", Lifecycle: &v1.Lifecycle{
					PostStart: &v1.LifecycleHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(0)}},
					PreStop:   &v1.LifecycleHandler{Exec: &v1.ExecAction{}, Sleep: &v1.SleepAction{Seconds: 1}}},
					ReadinessProbe: probe(v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80), Scheme: v1.URISchemeHTTP}}),
					StartupProbe:   probe(v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9000, Mode: &mtls}})},
			}}},
			[]string{
				"spec.initContainers[1].lifecycle.preStop.sleep: Invalid value: 31: must be non-negative and less than terminationGracePeriodSeconds (30)",
				"spec.initContainers[1].startupProbe: Required value: must specify a handler type",
				"spec.containers[1].lifecycle.postStart.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive",
				"spec.containers[1].lifecycle.preStop.exec.command: Required value",
				"spec.containers[1].lifecycle.preStop.sleep: Forbidden: may not specify more than 1 handler type",
				"spec.containers[1].readinessProbe.httpGet.path: Required value",
				`spec.containers[1].startupProbe.grpc.mode: Unsupported value: "mTLS": supported values: "Plaintext", "TLS"`,
			}},
	}
	for _, tc := range cases {
		for _, many := range []bool{false, true} {
			pod := tc.pod.DeepCopy()
			if many { // more containers than duplicateNames scans, after those of the case
				for i := range scanNames {
					pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: fmt.Sprintf("pad-%d", i)})
				}
			}
			t.Run(fmt.Sprintf("%s/%d containers", tc.name, len(pod.Spec.Containers)+len(pod.Spec.InitContainers)), func(t *testing.T) {
				var got []string
				for _, e := range Validate(pod) {
					got = append(got, e.Error())
				}
				assert.Equal(t, tc.want, got)
			})
		}
	}
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
