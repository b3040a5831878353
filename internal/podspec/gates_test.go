package podspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probeactor/probeactor/features"
)

// gatedPod uses every field a gate controls: container restart policies and rules (a
// RestartAllContainers one among them), a sidecar's rules, httpGet.protocol and grpc.mode.
func gatedPod() *v1.Pod {
	never, always := v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyAlways
	h2 := v1.HTTPProtocolHTTP2
	tlsMode := v1.GRPCProbeModeTLS
	return &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{
			{Name: "i", RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{
				rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 1)}},
			{Name: "side", RestartPolicy: &always, RestartPolicyRules: []v1.ContainerRestartRule{
				rule(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpIn, 9)},
				StartupProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9000, Mode: &tlsMode}}}},
		},
		Containers: []v1.Container{{Name: "c", RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{
			rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42),
			rule(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpIn, 43)},
			LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt(8080), Protocol: &h2}}},
		}},
	}}
}

func TestValidateGates(t *testing.T) {
	for _, tc := range []struct {
		gates string
		want  []string
	}{
		{gates: "H2CContainerProbe=true,GRPCContainerProbeTLS=true"},
		{gates: "", want: []string{
			"spec.initContainers[1].startupProbe.grpc.mode: Forbidden: may not be set when the GRPCContainerProbeTLS feature gate is disabled",
			"spec.containers[0].livenessProbe.httpGet.protocol: Forbidden: may not be set when the H2CContainerProbe feature gate is disabled",
		}},
		{gates: "H2CContainerProbe=true,GRPCContainerProbeTLS=true,RestartAllContainersOnContainerExits=false", want: []string{
			"spec.initContainers[1].restartPolicyRules: Forbidden: restartPolicyRules are not allowed for init containers with restart policy Always",
			`spec.containers[0].restartPolicyRules[1].action: Unsupported value: "RestartAllContainers": supported values: "Restart"`,
		}},
		{gates: "H2CContainerProbe=true,GRPCContainerProbeTLS=true,RestartAllContainersOnContainerExits=false,ContainerRestartRules=false", want: []string{
			`spec.initContainers[0].restartPolicy: Unsupported value: "Never": supported values: "Always"`,
			"spec.initContainers[0].restartPolicyRules: Forbidden: may not be set when the ContainerRestartRules feature gate is disabled",
			"spec.initContainers[1].restartPolicyRules: Forbidden: may not be set when the ContainerRestartRules feature gate is disabled",
			"spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
			"spec.containers[0].restartPolicyRules: Forbidden: may not be set when the ContainerRestartRules feature gate is disabled",
		}},
	} {
		t.Run(tc.gates, func(t *testing.T) {
			var got []string
			for _, e := range ValidateGates(gatedPod(), features.MustParse(tc.gates)) {
				got = append(got, e.Error())
			}
			assert.Equal(t, tc.want, got)
		})
	}
	assert.Empty(t, ValidateGates(nil, features.Gates{}))
	plain := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	assert.Empty(t, ValidateGates(plain, features.MustParse("ContainerRestartRules=false,RestartAllContainersOnContainerExits=false")),
		"a pod without gated fields passes whatever the gates")
}

func TestSetGatedDefaults(t *testing.T) {
	pod := gatedPod()
	pod.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt(80)}}}
	SetGatedDefaults(pod, features.Gates{})
	assert.Nil(t, pod.Spec.Containers[0].ReadinessProbe.HTTPGet.Protocol, "with H2CContainerProbe off nothing is defaulted")
	SetGatedDefaults(pod, features.MustParse("H2CContainerProbe=true"))
	assert.Equal(t, v1.HTTPProtocolHTTP1, *pod.Spec.Containers[0].ReadinessProbe.HTTPGet.Protocol)
	assert.Equal(t, v1.HTTPProtocolHTTP2, *pod.Spec.Containers[0].LivenessProbe.HTTPGet.Protocol, "a set protocol stays")
}
