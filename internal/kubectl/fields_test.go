package kubectl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFieldSelectors(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod"},
		Spec:   v1.PodSpec{NodeName: "n1", RestartPolicy: v1.RestartPolicyAlways, HostNetwork: true},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIPs: []v1.PodIP{{IP: "10.0.0.7"}, {IP: "fd00::7"}}}}
	for _, tc := range []struct {
		selector string
		match    bool
		err      string
	}{
		{"status.phase=Running", true, ""},
		{"status.phase!=Running", false, ""},
		{"spec.nodeName=n1,metadata.namespace=prod", true, ""},
		{"spec.host=n1", true, ""}, // old clients' name for spec.nodeName
		{"status.podIP=10.0.0.7", true, ""},
		{"status.podIP=fd00::7", false, ""}, // the first IP only
		{"status.podIPs=10.0.0.7", false, ""},
		{"spec.hostNetwork=true,spec.restartPolicy==Always", true, ""},
		{"spec.schedulerName=", true, ""},
		{"status.hostIP=1.2.3.4", false, "field label not supported: status.hostIP"},
		{"status.phase", false, "invalid selector: 'status.phase'; can't understand 'status.phase'"},
	} {
		sel, err := ParseFieldSelector("pod", tc.selector)
		if tc.err != "" {
			assert.EqualError(t, err, tc.err, tc.selector)
			continue
		}
		require.NoError(t, err, tc.selector)
		assert.Equal(t, tc.match, sel.Matches(PodFields(pod)), tc.selector)
	}

	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: v1.NodeSpec{Unschedulable: true}}
	sel, err := ParseFieldSelector("node", "spec.unschedulable=true,metadata.name=n1")
	require.NoError(t, err)
	assert.True(t, sel.Matches(NodeFields(node)))
	_, err = ParseFieldSelector("node", "spec.host=n1")
	assert.EqualError(t, err, "field label not supported: spec.host")
}
