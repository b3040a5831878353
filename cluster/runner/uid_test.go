package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestClusterUIDIsTheSameOnEveryMember(t *testing.T) {
	assign := ClusterUID("demo")
	p1, p2 := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
	assign(p1)
	assign(p2)
	assert.NotEmpty(t, p1.UID)
	assert.Equal(t, p1.UID, p2.UID, "namespace defaulted alike")
	other := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	ClusterUID("prod")(other)
	assert.NotEqual(t, p1.UID, other.UID, "another cluster, another pod")
	given := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "mine"}}
	assign(given)
	assert.Equal(t, types.UID("mine"), given.UID, "a manifest's UID is kept")
}

// TestClusterUIDDerivationIsStable pins the derivation: members running different versions of
// node must still derive the same UIDs.
func TestClusterUIDDerivationIsStable(t *testing.T) {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	ClusterUID("demo")(p)
	assert.Equal(t, types.UID("efd4b14a7ff45af3f9cb8f56b9456f50"), p.UID)
}
