package fleetv1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A container's probes travel whole (node describe shows them from the aggregator), at about 40
// bytes each; a pod without probes carries none.
func TestProbesTravelWithTheirContainer(t *testing.T) {
	pod := runningPod()
	app := &pod.Spec.Containers[0]
	app.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080), Scheme: v1.URISchemeHTTP}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	app.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/ready"}}},
		TimeoutSeconds: 1, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 3}
	pod.Spec.InitContainers[0].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("admin")}},
		TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 30}

	plain, err := FromPod(runningPod())
	require.NoError(t, err)
	wire, err := FromPod(pod)
	require.NoError(t, err)
	assert.LessOrEqual(t, proto.Size(wire)-proto.Size(plain), 3*48, "three probes")
	require.NoError(t, (&Changes{Node: "n1", Incarnation: 1, Seq: 1, Pods: []*PodChanged{wire}}).Validate())

	b, err := proto.Marshal(wire)
	require.NoError(t, err)
	var back PodChanged
	require.NoError(t, proto.Unmarshal(b, &back))
	got, err := ToPod(&back, "n1")
	require.NoError(t, err)
	assert.True(t, equality.Semantic.DeepEqual(app.LivenessProbe, got.Spec.Containers[0].LivenessProbe))
	assert.True(t, equality.Semantic.DeepEqual(app.ReadinessProbe, got.Spec.Containers[0].ReadinessProbe))
	assert.Nil(t, got.Spec.Containers[0].StartupProbe)
	assert.True(t, equality.Semantic.DeepEqual(pod.Spec.InitContainers[0].StartupProbe, got.Spec.InitContainers[0].StartupProbe))

	// Bytes that do not decode are refused before the aggregator applies the batch, naming the container.
	wire.Meta.Containers[0].LivenessProbe = []byte{0xff, 0xff, 0xff}
	err = (&Changes{Node: "n1", Incarnation: 1, Seq: 1, Pods: []*PodChanged{wire}}).Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "changes: pods[0]: container app: decode probe")
	_, err = ToPod(wire, "n1")
	assert.ErrorContains(t, err, "container app: decode probe")
}
