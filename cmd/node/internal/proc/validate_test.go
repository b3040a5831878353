package proc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidate(t *testing.T) {
	never := v1.ContainerRestartPolicy("Never")
	cases := []struct {
		name string
		pod  v1.Pod
		want []string
	}{
		{"valid", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Args: []string{"sleep"}}}}}, nil},
		{"no name, no containers", v1.Pod{}, []string{"metadata.name: Required value", "spec.containers: Required value"}},
		{"no command", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}},
			[]string{"spec.containers[0].command: Required value: node runs containers as local processes"}},
		{"duplicate names", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "c", Command: []string{"x"}}},
			Containers:     []v1.Container{{Name: "c", Command: []string{"x"}}}}},
			[]string{`spec.containers[0].name: Duplicate value: "c"`}},
		{"bad policies", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{RestartPolicy: "Sometimes",
			InitContainers: []v1.Container{{Name: "i", Command: []string{"x"}, RestartPolicy: &never}},
			Containers:     []v1.Container{{Name: "C_", Command: []string{"x"}}}}},
			[]string{`spec.restartPolicy: Unsupported value: "Sometimes"`, `spec.initContainers[0].restartPolicy: Unsupported value: "Never"`, `spec.containers[0].name: Invalid value: "C_"`}},
		{"secret env", v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Command: []string{"x"},
			Env: []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{}}}}}}}},
			[]string{"spec.containers[0].env[0].valueFrom: Forbidden"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(&tc.pod)
			assert.Len(t, errs, len(tc.want), "%v", errs)
			joined := errs.ToAggregate()
			for _, w := range tc.want {
				assert.Contains(t, joined.Error(), w)
			}
		})
	}
}

func TestSetDefaults(t *testing.T) {
	pod := &v1.Pod{}
	SetDefaults(pod)
	assert.Equal(t, "default", pod.Namespace)
	assert.NotEmpty(t, pod.UID)
	assert.Equal(t, v1.RestartPolicyAlways, pod.Spec.RestartPolicy)
	assert.Equal(t, int64(30), *pod.Spec.TerminationGracePeriodSeconds)
	uid := pod.UID
	SetDefaults(pod)
	assert.Equal(t, uid, pod.UID, "an existing UID is kept")
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
