package upstream

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/core"
	noderegistry "k8s.io/kubernetes/pkg/registry/core/node"
	podregistry "k8s.io/kubernetes/pkg/registry/core/pod"

	"github.com/probeactor/probeactor/internal/kubectl"
)

// TestFieldSelectorsAreTheAPIServers: `node get --field-selector` refuses what the API server
// refuses, in its words (fields.ParseSelector, then v1's field label conversion in legacyscheme),
// and selects what it selects (the pod and node registries' selectable fields), on 5,000 random
// selectors against random pods and 1,000 against random nodes.
func TestFieldSelectorsAreTheAPIServers(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(83, 89))
	podFields := []string{"metadata.name", "metadata.namespace", "spec.nodeName", "spec.host", "spec.restartPolicy", "spec.schedulerName",
		"spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName",
		"spec.containers", "metadata.uid", "status.hostIP"}
	values := []string{"", "web", "default", "n1", "Always", "Never", "default-scheduler", "sa", "true", "false", "Running", "Pending", "10.0.0.1", "fd00::1"}
	randomSelector := func(fieldNames []string) string {
		var terms []string
		for range 1 + r.IntN(3) {
			op := pickOf(r, "=", "==", "!=")
			terms = append(terms, pickOf(r, fieldNames...)+op+pickOf(r, values...))
		}
		s := strings.Join(terms, ",")
		if r.IntN(20) == 0 {
			s = pickOf(r, "status.phase", "=Running", "a=b=c", "status.phase in (Running)", "x\\")
		}
		return s
	}
	theirSelector := func(kind, s string) (fields.Selector, error) {
		sel, err := fields.ParseSelector(s)
		if err != nil {
			return nil, err
		}
		gvk := v1.SchemeGroupVersion.WithKind(kind)
		return sel.Transform(func(f, v string) (string, string, error) { return legacyscheme.Scheme.ConvertFieldLabel(gvk, f, v) })
	}
	// parseBoth parses s for kind both ways; both must refuse it with the same error, or both accept
	// it (ok).
	parseBoth := func(kind, s string, i int) (theirs, ours fields.Selector, ok bool) {
		theirs, theirErr := theirSelector(kind, s)
		ours, ourErr := kubectl.ParseFieldSelector(strings.ToLower(kind), s)
		if theirErr != nil {
			require.Error(t, ourErr, "%s selector %d %q", kind, i, s)
			assert.Equal(t, theirErr.Error(), ourErr.Error(), "%s selector %d %q", kind, i, s)
			return nil, nil, false
		}
		require.NoError(t, ourErr, "%s selector %d %q", kind, i, s)
		return theirs, ours, true
	}
	for i := range 5000 {
		s := randomSelector(podFields)
		theirs, ours, ok := parseBoth("Pod", s, i)
		if !ok {
			continue
		}
		pod := &v1.Pod{}
		pod.Name, pod.Namespace = pickOf(r, "web", "db"), pickOf(r, "default", "prod")
		pod.Spec = v1.PodSpec{NodeName: pickOf(r, "", "n1"), RestartPolicy: v1.RestartPolicy(pickOf(r, "Always", "Never")),
			SchedulerName: pickOf(r, "", "default-scheduler"), ServiceAccountName: pickOf(r, "", "sa"), HostNetwork: r.IntN(2) == 0}
		pod.Status = v1.PodStatus{Phase: v1.PodPhase(pickOf(r, "Running", "Pending", "")), NominatedNodeName: pickOf(r, "", "n1")}
		for _, ip := range [][]string{nil, {"10.0.0.1"}, {"10.0.0.1", "fd00::1"}, {"fd00::1"}}[r.IntN(4)] {
			pod.Status.PodIPs = append(pod.Status.PodIPs, v1.PodIP{IP: ip})
		}
		var internal core.Pod
		require.NoError(t, legacyscheme.Scheme.Convert(pod, &internal, nil))
		want := theirs.Matches(podregistry.ToSelectableFields(&internal))
		if !assert.Equal(t, want, ours.Matches(kubectl.PodFields(pod)), "selector %d %q on %+v %+v", i, s, pod.Spec, pod.Status) {
			t.FailNow()
		}
	}
	for i := range 1000 {
		s := randomSelector([]string{"metadata.name", "spec.unschedulable", "metadata.namespace", "status.phase"})
		theirs, ours, ok := parseBoth("Node", s, i)
		if !ok {
			continue
		}
		node := &v1.Node{}
		node.Name, node.Spec.Unschedulable = pickOf(r, "n1", "web"), r.IntN(2) == 0
		var internal core.Node
		require.NoError(t, legacyscheme.Scheme.Convert(node, &internal, nil))
		assert.Equal(t, theirs.Matches(noderegistry.NodeToSelectableFields(&internal)), ours.Matches(kubectl.NodeFields(node)),
			"node selector %d %q on %s unschedulable=%v", i, s, node.Name, node.Spec.Unschedulable)
	}
}
