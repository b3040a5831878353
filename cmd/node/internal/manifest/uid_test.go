package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestContentUIDIsTheSameForTheSameManifest(t *testing.T) {
	pod := func(ns, name, image string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: image}}}}
	}
	uid := func(p *v1.Pod) string { ContentUID(p); return string(p.UID) }
	a := uid(pod("", "web", "x"))
	assert.Len(t, a, 32)
	assert.Equal(t, a, uid(pod("", "web", "x")), "the same manifest, the same pod")
	assert.Equal(t, a, uid(pod("default", "web", "x")), "the default namespace spelled out or not")
	assert.NotEqual(t, a, uid(pod("", "web", "y")), "changed content: a new pod")
	assert.NotEqual(t, a, uid(pod("", "api", "x")), "another name")
	assert.NotEqual(t, a, uid(pod("prod", "web", "x")), "another namespace")
	given := pod("", "web", "x")
	given.UID = "mine"
	assert.Equal(t, "mine", uid(given), "a UID the manifest gives is kept")
}
