package fleetv1

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
)

// runningPod is a typical running single-container pod with its probe-adjusted status: the
// shape scaleout.md §1.1 measured at 285 bytes.
func runningPod() *v1.Pod {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	started := true
	always := v1.ContainerRestartPolicyAlways
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "0b7f3a52-3a0e-4c55-9d1c-1a2b3c4d5e6f", CreationTimestamp: metav1.NewTime(t0),
			Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "proxy", Image: "example/proxy:1", RestartPolicy: &always}},
			Containers:     []v1.Container{{Name: "app", Image: "example/app:1.0", Command: []string{"ignored"}}},
		},
		Status: v1.PodStatus{
			Phase:     v1.PodRunning,
			PodIP:     "127.0.0.1",
			HostIP:    "127.0.0.1",
			StartTime: &metav1.Time{Time: t0},
			Conditions: []v1.PodCondition{
				{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
				{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(5 * time.Second))},
				{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(5 * time.Second))},
			},
			ContainerStatuses: []v1.ContainerStatus{{
				Name: "app", Image: "example/app:1.0", ContainerID: "proc://4f9c2d", Ready: true, Started: &started, RestartCount: 1,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(2 * time.Second))}},
			}},
		},
	}
}

func TestPodStatusRoundTripsSemanticallyEqual(t *testing.T) {
	pod := runningPod()
	wire, err := FromPod(pod)
	require.NoError(t, err)
	b, err := proto.Marshal(wire)
	require.NoError(t, err)
	var back PodChanged
	require.NoError(t, proto.Unmarshal(b, &back))
	got, err := ToPod(&back, "n1")
	require.NoError(t, err)

	assert.True(t, equality.Semantic.DeepEqual(pod.Status, got.Status), "status changed on the wire:\nsent %+v\ngot  %+v", pod.Status, got.Status)
	assert.Equal(t, pod.Name, got.Name)
	assert.Equal(t, pod.Namespace, got.Namespace)
	assert.Equal(t, pod.UID, got.UID)
	assert.Equal(t, pod.Labels, got.Labels, "labels travel: the fleet's pods are selected by them")
	assert.True(t, pod.CreationTimestamp.Equal(&got.CreationTimestamp))
	assert.Equal(t, "n1", got.Spec.NodeName)
	require.Len(t, got.Spec.Containers, 1)
	assert.Equal(t, v1.Container{Name: "app", Image: "example/app:1.0"}, got.Spec.Containers[0], "only names and images travel")
	require.Len(t, got.Spec.InitContainers, 1)
	require.NotNil(t, got.Spec.InitContainers[0].RestartPolicy)
	assert.Equal(t, v1.ContainerRestartPolicyAlways, *got.Spec.InitContainers[0].RestartPolicy)
}

func TestWireSizeStaysSmall(t *testing.T) {
	st, err := runningPod().Status.Marshal()
	require.NoError(t, err)
	assert.LessOrEqual(t, len(st), 300, "a running pod's status in Kubernetes' protobuf encoding")

	rc := FromResultChanged(messages.ResultChanged{PodUID: "0b7f3a52-3a0e-4c55-9d1c-1a2b3c4d5e6f", Container: "app", ContainerID: "proc://4f9c2d", Type: messages.Readiness, Result: messages.Success})
	assert.LessOrEqual(t, proto.Size(rc), 64, "one result change")

	batch := &Changes{Node: "n1", Incarnation: uint64(time.Now().UnixNano()), Seq: 12345}
	for range 256 {
		batch.Results = append(batch.Results, rc)
	}
	assert.LessOrEqual(t, proto.Size(batch), 256*66+40, "a batch costs its changes plus a small header")
}

func TestEnumsRoundTripAndRejectUnknown(t *testing.T) {
	for _, pt := range []messages.ProbeType{messages.Liveness, messages.Readiness, messages.Startup} {
		got, err := ToProbeType(FromProbeType(pt))
		require.NoError(t, err)
		assert.Equal(t, pt, got)
	}
	for _, r := range []messages.Result{messages.Unknown, messages.Success, messages.Failure} {
		got, err := ToResult(FromResult(r))
		require.NoError(t, err)
		assert.Equal(t, r, got)
	}
	_, err := ToProbeType(ProbeType_PROBE_TYPE_UNSPECIFIED)
	assert.ErrorContains(t, err, "probe type 0")
	_, err = ToProbeType(ProbeType(42))
	assert.ErrorContains(t, err, "probe type 42")
	_, err = ToResult(Result(-3))
	assert.ErrorContains(t, err, "result -3")
	assert.Equal(t, ProbeType_PROBE_TYPE_UNSPECIFIED, FromProbeType(messages.ProbeType(9)))
	assert.Equal(t, Result_RESULT_UNSPECIFIED, FromResult(messages.Result(9)))
}

func TestResultChangedRoundTrip(t *testing.T) {
	in := messages.ResultChanged{PodUID: types.UID("u1"), Container: "c", ContainerID: "proc://1", Type: messages.Startup, Result: messages.Unknown}
	out, err := ToResultChanged(FromResultChanged(in))
	require.NoError(t, err)
	assert.Equal(t, in, out)
}

func TestValidateNamesTheBrokenField(t *testing.T) {
	good := func() *Changes {
		p, err := FromPod(runningPod())
		require.NoError(t, err)
		return &Changes{Node: "n1", Incarnation: 7, Seq: 1, Snapshot: true,
			Results: []*ResultChanged{{PodUid: "u", Container: "c", Type: ProbeType_PROBE_TYPE_LIVENESS, Result: Result_RESULT_SUCCESS}},
			Pods:    []*PodChanged{p, RemovedPod("gone")}}
	}
	require.NoError(t, good().Validate())
	withUsage := good()
	withUsage.Usage = &Usage{TimestampUnixNano: 1, WindowNanos: 1, Pods: []*PodUsage{{Namespace: "d", Name: "p",
		Containers: []*ContainerUsage{{Name: "c", CpuNanocores: 1000, MemoryBytes: 1 << 20}}}}}
	require.NoError(t, withUsage.Validate())
	withCondition := good()
	withCondition.Conditions = []*NodeCondition{{Type: "ClusterQuorum", Status: "False", Reason: "QuorumLost"}}
	require.NoError(t, withCondition.Validate())
	cases := map[string]struct {
		mutate func(*Changes)
		want   string
	}{
		"no node":           {func(c *Changes) { c.Node = "" }, "node is empty"},
		"no incarnation":    {func(c *Changes) { c.Incarnation = 0 }, "incarnation is 0"},
		"no seq":            {func(c *Changes) { c.Seq = 0 }, "seq is 0"},
		"bad probe type":    {func(c *Changes) { c.Results[0].Type = 0 }, "results[0]: probe type 0"},
		"bad result":        {func(c *Changes) { c.Results[0].Result = 17 }, "results[0]: result 17"},
		"result no pod":     {func(c *Changes) { c.Results[0].PodUid = "" }, "results[0]: result change without pod_uid"},
		"pod without uid":   {func(c *Changes) { c.Pods[1].Uid = "" }, "pods[1]: uid is empty"},
		"pod without name":  {func(c *Changes) { c.Pods[0].Meta.Name = "" }, "pods[0]: meta.name is empty"},
		"bad pod label":     {func(c *Changes) { c.Pods[0].Meta.Labels = map[string]string{"a b": "c"} }, `pods[0]: meta.labels: Invalid value: "a b"`},
		"undecodable state": {func(c *Changes) { c.Pods[0].Status = []byte{0xff, 0xff, 0xff} }, "pods[0]: decode pod status"},
		"untyped condition": {func(c *Changes) { c.Conditions = []*NodeCondition{{Status: "True"}} }, `conditions[0]: type ""`},
		"a Ready condition": {func(c *Changes) { c.Conditions = []*NodeCondition{{Type: "Ready", Status: "True"}} }, `conditions[0]: type "Ready"`},
		"bad status":        {func(c *Changes) { c.Conditions = []*NodeCondition{{Type: "ClusterQuorum", Status: "yes"}} }, `conditions[0]: status "yes"`},
		"bad node object":   {func(c *Changes) { c.NodeObject = []byte{0xff, 0xff, 0xff} }, "node_object: decode node object"},
		"usage, no window":  {func(c *Changes) { c.Usage = &Usage{TimestampUnixNano: 1} }, "usage: timestamp 1, window 0"},
		"usage, no pod name": {func(c *Changes) {
			c.Usage = &Usage{TimestampUnixNano: 1, WindowNanos: 1, Pods: []*PodUsage{{Namespace: "default"}}}
		}, `usage: pods[0]: namespace "default", name "": both are required`},
		"usage, a pod twice": {func(c *Changes) {
			c.Usage = &Usage{TimestampUnixNano: 1, WindowNanos: 1, Pods: []*PodUsage{{Namespace: "d", Name: "p"}, {Namespace: "d", Name: "p"}}}
		}, "usage: pods[1]: d/p: listed twice"},
		"usage, a container twice": {func(c *Changes) {
			c.Usage = &Usage{TimestampUnixNano: 1, WindowNanos: 1, Pods: []*PodUsage{{Namespace: "d", Name: "p",
				Containers: []*ContainerUsage{{Name: "c"}, {Name: "c"}}}}}
		}, `usage: pods[0].containers[1]: "c" listed twice`},
		"usage, a nameless container": {func(c *Changes) {
			c.Usage = &Usage{TimestampUnixNano: 1, WindowNanos: 1, Pods: []*PodUsage{{Namespace: "d", Name: "p", Containers: []*ContainerUsage{{}}}}}
		}, "usage: pods[0].containers[0]: name is empty"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := good()
			tc.mutate(c)
			assert.ErrorContains(t, c.Validate(), tc.want)
		})
	}
	assert.ErrorContains(t, (&Hello{Incarnation: 1}).Validate(), "hello: node is empty")
	assert.ErrorContains(t, (&Heartbeat{Node: "n"}).Validate(), "heartbeat: incarnation is 0")
	_, err := FromPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}})
	assert.ErrorContains(t, err, "has no UID")
}

// A node's own Node object travels without its conditions, managed fields and resource version,
// and comes back equal otherwise; a Changes carrying it validates.
func TestNodeObjectRoundTrip(t *testing.T) {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{v1.LabelHostname: "host-1"}, ResourceVersion: "9",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}, CreationTimestamp: metav1.NewTime(time.Unix(1700000000, 0))},
		Status: v1.NodeStatus{
			Capacity:        v1.ResourceList{v1.ResourceCPU: resource.MustParse("16"), v1.ResourceMemory: resource.MustParse("16374232Ki")},
			Allocatable:     v1.ResourceList{v1.ResourceCPU: resource.MustParse("16"), v1.ResourceMemory: resource.MustParse("16374232Ki")},
			Conditions:      []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
			Addresses:       []v1.NodeAddress{{Type: v1.NodeHostName, Address: "host-1"}},
			DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: 10255}},
			NodeInfo:        v1.NodeSystemInfo{BootID: "b", KernelVersion: "6.1.0", KubeletVersion: "v1.37.2+probeactor.dev"},
		},
	}
	b, err := FromNodeObject(n)
	require.NoError(t, err)
	require.NotEmpty(t, n.Status.Conditions, "the caller's node is not modified")
	got, err := DecodeNodeObject(b)
	require.NoError(t, err)
	want := n.DeepCopy()
	want.Status.Conditions, want.ManagedFields, want.ResourceVersion = nil, nil, ""
	assert.True(t, equality.Semantic.DeepEqual(want, got), "got %+v", got)
	assert.NoError(t, (&Changes{Node: "n1", Incarnation: 1, Seq: 1, Snapshot: true, NodeObject: b}).Validate())
}

func TestAllowListsNameRegisteredTypes(t *testing.T) {
	assert.Equal(t, []string{"probeactor.fleet.v1.Hello", "probeactor.fleet.v1.Changes", "probeactor.fleet.v1.Heartbeat"}, ToAggregator())
	assert.Equal(t, []string{"probeactor.fleet.v1.Welcome", "probeactor.fleet.v1.Ack"}, ToNode())
}

func TestNodeNameReadsFieldOneOnly(t *testing.T) {
	for _, m := range []interface {
		proto.Message
		GetNode() string
	}{
		&Hello{Node: "n1", Incarnation: 5, Address: "127.0.0.1:1"},
		&Heartbeat{Node: "n1", Incarnation: 5},
		&Changes{Node: "n1", Incarnation: 5, Seq: 9, Results: []*ResultChanged{{PodUid: "u", Container: "n2"}}},
	} {
		b, err := proto.Marshal(m)
		require.NoError(t, err)
		name := string(m.ProtoReflect().Descriptor().FullName())
		node, ok, err := NodeName(name, b)
		require.NoError(t, err, name)
		assert.True(t, ok)
		assert.Equal(t, "n1", node, name)
	}
	_, ok, err := NodeName("probeactor.fleet.v1.Ack", []byte{0xff})
	assert.False(t, ok)
	assert.NoError(t, err)
	_, ok, err = NodeName("probeactor.fleet.v1.Hello", []byte{0x0a, 0x05, 'n'})
	assert.True(t, ok)
	assert.Error(t, err, "a truncated field")
}
