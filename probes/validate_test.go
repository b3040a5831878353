package probes

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func validProbe() *v1.Probe {
	return &v1.Probe{
		ProbeHandler:     v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt(8080), Scheme: v1.URISchemeHTTP}},
		TimeoutSeconds:   1,
		PeriodSeconds:    10,
		SuccessThreshold: 1,
		FailureThreshold: 3,
	}
}

func ptrTo[T any](v T) *T { return &v }

func errStrings(t *testing.T, pod *v1.Pod) []string {
	t.Helper()
	var got []string
	for _, e := range ValidatePod(pod) {
		got = append(got, e.Error())
	}
	return got
}

func TestValidatePod(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	always := v1.ContainerRestartPolicyAlways
	withProbe := func(mutate func(p *v1.Probe)) *v1.Probe { p := validProbe(); mutate(p); return p }

	for _, tc := range []struct {
		name string
		spec v1.PodSpec
		want []string
	}{
		{name: "valid", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
			LivenessProbe: validProbe(), ReadinessProbe: validProbe(), StartupProbe: validProbe()}}}},
		{name: "liveness success threshold", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
			LivenessProbe: withProbe(func(p *v1.Probe) { p.SuccessThreshold = 2 })}}},
			want: []string{"spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"}},
		{name: "startup success threshold", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}, {Name: "b",
			StartupProbe: withProbe(func(p *v1.Probe) { p.SuccessThreshold = 3 })}}},
			want: []string{"spec.containers[1].startupProbe.successThreshold: Invalid value: 3: must be 1"}},
		{name: "readiness may have success threshold > 1 but no grace period", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
			ReadinessProbe: withProbe(func(p *v1.Probe) { p.SuccessThreshold = 3; p.TerminationGracePeriodSeconds = i64(5) })}}},
			want: []string{"spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes"}},
		{name: "negative fields", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
			ReadinessProbe: withProbe(func(p *v1.Probe) {
				p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold = -1, -2, -3, -4, -5
			})}}},
			want: []string{
				"spec.containers[0].readinessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0",
				"spec.containers[0].readinessProbe.timeoutSeconds: Invalid value: -2: must be greater than or equal to 0",
				"spec.containers[0].readinessProbe.periodSeconds: Invalid value: -3: must be greater than or equal to 0",
				"spec.containers[0].readinessProbe.successThreshold: Invalid value: -4: must be greater than or equal to 0",
				"spec.containers[0].readinessProbe.failureThreshold: Invalid value: -5: must be greater than or equal to 0",
			}},
		{name: "liveness grace period must be positive", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
			LivenessProbe: withProbe(func(p *v1.Probe) { p.TerminationGracePeriodSeconds = i64(0) })}}},
			want: []string{"spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0"}},
		{name: "no handler", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
			LivenessProbe: withProbe(func(p *v1.Probe) { p.HTTPGet = nil })}}},
			want: []string{"spec.containers[0].livenessProbe: Required value: must specify a handler type"}},
		{name: "two handlers", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
			LivenessProbe: withProbe(func(p *v1.Probe) {
				p.Exec = &v1.ExecAction{Command: []string{"true"}}
				p.GRPC = &v1.GRPCAction{Port: 9000}
			})}}},
			want: []string{
				"spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type",
				"spec.containers[0].livenessProbe.grpc: Forbidden: may not specify more than 1 handler type",
			}},
		{name: "h2c: protocols", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
			LivenessProbe:  withProbe(func(p *v1.Probe) { p.HTTPGet.Protocol = ptrTo(v1.HTTPProtocolHTTP2) }),
			ReadinessProbe: withProbe(func(p *v1.Probe) { p.HTTPGet.Protocol = ptrTo(v1.HTTPProtocolHTTP1); p.HTTPGet.Host = "h" }),
			StartupProbe:   withProbe(func(p *v1.Probe) { p.HTTPGet.Protocol = ptrTo(v1.HTTPProtocol("HTTP3")) })}}},
			want: []string{`spec.containers[0].startupProbe.httpGet.protocol: Unsupported value: "HTTP3": supported values: "HTTP1", "HTTP2"`}},
		{name: "h2c: HTTP2 with HTTPS", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
			LivenessProbe: withProbe(func(p *v1.Probe) {
				p.HTTPGet.Protocol = ptrTo(v1.HTTPProtocolHTTP2)
				p.HTTPGet.Scheme = v1.URISchemeHTTPS
			})}}},
			want: []string{`spec.containers[0].livenessProbe.httpGet.protocol: Invalid value: "HTTP2": is only supported with HTTP (H2C)`}},
		{name: "h2c: HTTP2 with a host", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
			LivenessProbe: withProbe(func(p *v1.Probe) { p.HTTPGet.Protocol = ptrTo(v1.HTTPProtocolHTTP2); p.HTTPGet.Host = "example.com" })}}},
			want: []string{"spec.containers[0].livenessProbe.httpGet.host: Invalid value: \"example.com\": must be empty when `protocol` is \"HTTP2\""}},
		{name: "grpc modes", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
			LivenessProbe: withProbe(func(p *v1.Probe) {
				p.HTTPGet = nil
				p.GRPC = &v1.GRPCAction{Port: 9000, Mode: ptrTo(v1.GRPCProbeModeTLS)}
			}),
			ReadinessProbe: withProbe(func(p *v1.Probe) {
				p.HTTPGet = nil
				p.GRPC = &v1.GRPCAction{Port: 9000, Mode: ptrTo(v1.GRPCProbeMode("mTLS"))}
			})}}},
			want: []string{`spec.containers[0].readinessProbe.grpc.mode: Unsupported value: "mTLS": supported values: "Plaintext", "TLS"`}},
		{name: "exec without command", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
			LivenessProbe: withProbe(func(p *v1.Probe) { p.HTTPGet = nil; p.Exec = &v1.ExecAction{} })}}},
			want: []string{"spec.containers[0].livenessProbe.exec.command: Required value"}},
		{name: "http path, port, scheme, header", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
			ReadinessProbe: withProbe(func(p *v1.Probe) {
				p.HTTPGet = &v1.HTTPGetAction{Port: intstr.FromInt(0), Scheme: "FTP",
					HTTPHeaders: []v1.HTTPHeader{{Name: "Good-Name", Value: "x"}, {Name: "bad name", Value: "y"}}}
			})}}},
			want: []string{
				"spec.containers[0].readinessProbe.httpGet.path: Required value",
				"spec.containers[0].readinessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
				`spec.containers[0].readinessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"`,
				`spec.containers[0].readinessProbe.httpGet.httpHeaders: Invalid value: "bad name": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')`,
			}},
		{name: "port names", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
			LivenessProbe: withProbe(func(p *v1.Probe) { p.HTTPGet = nil; p.TCPSocket = &v1.TCPSocketAction{Port: intstr.FromString("web")} }),
			ReadinessProbe: withProbe(func(p *v1.Probe) {
				p.HTTPGet = nil
				p.TCPSocket = &v1.TCPSocketAction{Port: intstr.FromString("Bad_Name")}
			}),
			StartupProbe: withProbe(func(p *v1.Probe) { p.HTTPGet = nil; p.GRPC = &v1.GRPCAction{Port: 70000} }),
		}}},
			want: []string{
				`spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: "Bad_Name": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
				"spec.containers[0].startupProbe.grpc.port: Invalid value: 70000: must be between 1 and 65535, inclusive",
			}},
		{name: "init containers and sidecars", spec: v1.PodSpec{
			InitContainers: []v1.Container{
				{Name: "init", LivenessProbe: validProbe(), StartupProbe: validProbe()},
				{Name: "sidecar", RestartPolicy: &always, LivenessProbe: withProbe(func(p *v1.Probe) { p.SuccessThreshold = 2 })},
			},
			Containers: []v1.Container{{Name: "a"}},
		},
			want: []string{
				"spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
				"spec.initContainers[0].startupProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
				"spec.initContainers[1].livenessProbe.successThreshold: Invalid value: 2: must be 1",
			}},
		{name: "ephemeral containers", spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "a"}},
			EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
				Name: "debug", ReadinessProbe: validProbe()}}},
		},
			want: []string{"spec.ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, errStrings(t, &v1.Pod{Spec: tc.spec}))
		})
	}
	require.Len(t, ValidatePod(nil), 1)
}

func TestSetDefaults(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "sidecar", StartupProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{
			TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(1)}}}}},
		Containers: []v1.Container{{
			Name:           "a",
			Ports:          []v1.ContainerPort{{ContainerPort: 80}},
			LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt(80)}}},
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9}}, PeriodSeconds: 3, FailureThreshold: 7},
		}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: "debug", LivenessProbe: &v1.Probe{}}}},
	}}
	SetDefaults(pod)
	assert.Equal(t, v1.RestartPolicyAlways, pod.Spec.RestartPolicy)
	require.NotNil(t, pod.Spec.TerminationGracePeriodSeconds)
	assert.Equal(t, int64(30), *pod.Spec.TerminationGracePeriodSeconds)
	assert.Equal(t, v1.ProtocolTCP, pod.Spec.Containers[0].Ports[0].Protocol)

	live := pod.Spec.Containers[0].LivenessProbe
	assert.Equal(t, &v1.Probe{
		ProbeHandler:   v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt(80), Path: "/", Scheme: v1.URISchemeHTTP}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
	}, live)
	ready := pod.Spec.Containers[0].ReadinessProbe
	assert.Equal(t, int32(3), ready.PeriodSeconds, "set values are kept")
	assert.Equal(t, int32(7), ready.FailureThreshold)
	require.NotNil(t, ready.GRPC.Service)
	assert.Empty(t, *ready.GRPC.Service)
	assert.Equal(t, int32(10), pod.Spec.InitContainers[0].StartupProbe.PeriodSeconds)
	assert.Equal(t, int32(3), pod.Spec.EphemeralContainers[0].LivenessProbe.FailureThreshold)

	// A defaulted pod with probes is valid; defaulting twice changes nothing.
	pod.Spec.EphemeralContainers = nil
	pod.Spec.InitContainers = nil
	assert.Empty(t, ValidatePod(pod))
	before := pod.DeepCopy()
	SetDefaults(pod)
	assert.Equal(t, before, pod)
	SetDefaults(nil)
	SetProbeDefaults(nil)
}
