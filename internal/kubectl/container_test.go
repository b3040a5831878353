package kubectl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLogsContainer(t *testing.T) {
	pod := func(annotation string, init []string, app ...string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod"}}
		if annotation != "" {
			p.Annotations = map[string]string{DefaultContainerAnnotation: annotation}
		}
		for _, n := range init {
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n})
		}
		for _, n := range app {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n})
		}
		return p
	}
	cases := []struct {
		name    string
		pod     *v1.Pod
		given   string
		want    string
		notes   []string
		wantErr string
	}{
		{"one container, no note", pod("", nil, "app"), "", "app", nil, ""},
		{"first of two, with kubectl's note", pod("", nil, "app", "side"), "", "app",
			[]string{`Defaulted container "app" out of: app, side`}, ""},
		{"an init container counts as another", pod("", []string{"setup"}, "app"), "", "app",
			[]string{`Defaulted container "app" out of: app, setup (init)`}, ""},
		{"the annotation's, without a note", pod("side", nil, "app", "side"), "", "side", nil, ""},
		{"the annotation may name an init container", pod("setup", []string{"setup"}, "app"), "", "setup", nil, ""},
		{"an annotation naming no container falls back", pod("gone", nil, "app", "side"), "", "app",
			[]string{`Default container name "gone" not found in pod web`, `Defaulted container "app" out of: app, side`}, ""},
		{"a given name beats the annotation", pod("side", nil, "app", "side"), "app", "app", nil, ""},
		{"a given init container", pod("", []string{"setup"}, "app"), "setup", "setup", nil, ""},
		{"a name the pod lacks", pod("", []string{"setup"}, "app", "side"), "nope", "", nil,
			"container nope is not valid for pod web out of: app, side, setup (init)"},
		{"no containers", pod("", nil), "", "", nil, "pod prod/web does not have any containers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, notes, err := LogsContainer(tc.pod, tc.given)
			if tc.wantErr != "" {
				assert.EqualError(t, err, tc.wantErr)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.notes, notes)
		})
	}
}

func TestLogsContainersIsKubectlsAllContainersOrder(t *testing.T) {
	p := &v1.Pod{Spec: v1.PodSpec{
		InitContainers:      []v1.Container{{Name: "i1"}, {Name: "i2"}},
		Containers:          []v1.Container{{Name: "a1"}, {Name: "a2"}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "e1"}}},
	}}
	assert.Equal(t, []string{"i1", "i2", "a1", "a2", "e1"}, LogsContainers(p))
	assert.Equal(t, "a1, a2, e1 (ephem), i1 (init), i2 (init)", AllContainerNames(p))
}
