package proc

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/features"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		pod  v1.Pod
		want []string
	}{
		{"valid", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Args: []string{"sleep"}}}}}, nil},
		{"no command", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}},
			[]string{"spec.containers[0].command: Required value: node runs containers as local processes"}},
		{"secret env", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Command: []string{"x"},
			Env: []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{}}}}}}}},
			[]string{"spec.containers[0].env[0].valueFrom: Forbidden"}},
		{"unsupported fieldRef", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Command: []string{"x"},
			Env: []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}}}}}}},
			[]string{`spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.serviceAccountName"`}},
		{"tcpSocket hook and stopSignal", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Command: []string{"x"},
			Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{TCPSocket: &v1.TCPSocketAction{}}, StopSignal: ptr(v1.SIGUSR1)}}}}},
			[]string{"spec.containers[0].lifecycle.preStop.tcpSocket: Forbidden: node runs exec, httpGet and sleep hooks",
				"spec.containers[0].lifecycle.stopSignal: Forbidden: node implements no ContainerStopSignals"}},
		{"terminationMessagePolicy", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Command: []string{"x"},
			TerminationMessagePolicy: "Always"}}}},
			[]string{`spec.containers[0].terminationMessagePolicy: Unsupported value: "Always": supported values: "File", "FallbackToLogsOnError"`}},
		{"activeDeadlineSeconds", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{ActiveDeadlineSeconds: ptr(int64(0)),
			Containers: []v1.Container{{Name: "c", Command: []string{"x"}}}}},
			[]string{"spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"}},
		{"hostname", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Hostname: "Web_1", HostnameOverride: ptr("x"),
			Containers: []v1.Container{{Name: "c", Command: []string{"x"}}}}},
			[]string{`spec.hostname: Invalid value: "Web_1": a lowercase RFC 1123 label must consist of`,
				"spec.hostnameOverride: Forbidden: node implements no HostnameOverride"}},
		{"ephemeral containers", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Command: []string{"x"}}},
			EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "e"}}}}},
			[]string{"spec.ephemeralContainers: Forbidden"}},
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
}

// Prepare is node validate's check of one pod: a UID, the API's defaults and rules (podspec), the
// creation time, the runtime's limits; each problem once.
func TestPrepare(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Args: []string{"sleep"},
		LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}}}}}
	require.Empty(t, Prepare(pod, now, features.Gates{}))
	assert.NotEmpty(t, pod.UID)
	assert.Equal(t, "default", pod.Namespace)
	assert.Equal(t, int32(10), pod.Spec.Containers[0].LivenessProbe.PeriodSeconds, "probe defaults")
	assert.Equal(t, now, pod.CreationTimestamp.Time)
	uid := pod.UID
	require.Empty(t, Prepare(pod, now, features.Gates{}))
	assert.Equal(t, uid, pod.UID, "an existing UID is kept")

	bad := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "C_"}}}}
	errs := Prepare(bad, now, features.Gates{}).ToAggregate().Error()
	for _, w := range []string{"metadata.name: Required value", `spec.containers[0].name: Invalid value: "C_"`,
		"spec.containers[0].command: Required value"} {
		assert.Contains(t, errs, w)
	}
}

func TestContainerArgvAndEnv(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	c := &v1.Container{
		Args: []string{"echo", "$(GREETING) $(WHO)", "$$(GREETING)", "$(UNSET)"},
		Env: []v1.EnvVar{
			{Name: "WHO", Value: "world"},
			{Name: "GREETING", Value: "hello $(WHO)"},
			{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		},
	}
	assert.Equal(t, []string{"echo", "hello world world", "$(GREETING)", "$(UNSET)"}, containerArgv(pod, c))
	env := containerEnv(pod, c)
	assert.Contains(t, env, "POD=p")
	assert.Contains(t, env, "HOSTNAME=p")
	assert.Contains(t, env, "GREETING=hello world")
}

// The hostname, as kubelet makes it: spec.hostname, else the pod's name, cut to 63 characters
// without a trailing '-' or '.'.
func TestPodHostname(t *testing.T) {
	pod := func(name, hostname string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Hostname: hostname}}
	}
	assert.Equal(t, "web", podHostname(pod("web", "")))
	assert.Equal(t, "db-0", podHostname(pod("web", "db-0")))
	long := strings.Repeat("a", 61) + "-.b" // 64 characters: cut at 63, then "-." trimmed
	assert.Equal(t, strings.Repeat("a", 61), podHostname(pod(long, "")))
	assert.Contains(t, containerEnv(pod("web", "db-0"), &v1.Container{}), "HOSTNAME=db-0")
}

func ptr[T any](v T) *T { return &v }
