package aggregator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/wire/fleetv1"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	applied   = fleetv1.AckStatus_ACK_STATUS_APPLIED
	duplicate = fleetv1.AckStatus_ACK_STATUS_DUPLICATE
	resync    = fleetv1.AckStatus_ACK_STATUS_RESYNC
	stale     = fleetv1.AckStatus_ACK_STATUS_STALE
	invalid   = fleetv1.AckStatus_ACK_STATUS_INVALID
)

// batch builds Changes: each result is "container=result" on pod "p1", readiness.
func batch(node string, inc, seq uint64, snapshot bool, results ...string) *fleetv1.Changes {
	c := &fleetv1.Changes{Node: node, Incarnation: inc, Seq: seq, Snapshot: snapshot}
	for _, r := range results {
		var container, res string
		for i := range r {
			if r[i] == '=' {
				container, res = r[:i], r[i+1:]
			}
		}
		w := fleetv1.Result_RESULT_SUCCESS
		if res == "F" {
			w = fleetv1.Result_RESULT_FAILURE
		}
		c.Results = append(c.Results, &fleetv1.ResultChanged{PodUid: "p1", Container: container, ContainerId: "proc://" + container,
			Type: fleetv1.ProbeType_PROBE_TYPE_READINESS, Result: w})
	}
	return c
}

// view renders a node's results as container → S/F.
func view(b *Book, node string) map[string]string {
	out := map[string]string{}
	for _, r := range b.Results() {
		if r.Node == node {
			out[r.Container] = r.Result[:1]
		}
	}
	return out
}

func TestApplyDecidesByIncarnationAndSeq(t *testing.T) {
	type step struct {
		name string
		in   *fleetv1.Changes
		want fleetv1.AckStatus
		view map[string]string // n1's results after the step
	}
	steps := []step{
		{"a delta before any snapshot", batch("n1", 10, 1, false, "a=S"), resync, map[string]string{}},
		{"the first snapshot", batch("n1", 10, 2, true, "a=S", "b=F"), applied, map[string]string{"a": "S", "b": "F"}},
		{"the next delta", batch("n1", 10, 3, false, "a=F"), applied, map[string]string{"a": "F", "b": "F"}},
		{"a replay of that delta", batch("n1", 10, 3, false, "a=F"), duplicate, map[string]string{"a": "F", "b": "F"}},
		{"a late older delta never moves a key back", batch("n1", 10, 2, false, "a=S"), duplicate, map[string]string{"a": "F", "b": "F"}},
		{"a late older snapshot neither", batch("n1", 10, 1, true, "a=S"), duplicate, map[string]string{"a": "F", "b": "F"}},
		{"a gap: seq 5 after 3", batch("n1", 10, 5, false, "b=S"), resync, map[string]string{"a": "F", "b": "F"}},
		{"after a gap even the right next seq waits for a snapshot", batch("n1", 10, 4, false, "b=S"), resync, map[string]string{"a": "F", "b": "F"}},
		{"a snapshot repairs it and replaces everything", batch("n1", 10, 6, true, "c=S"), applied, map[string]string{"c": "S"}},
		{"deltas continue from the snapshot", batch("n1", 10, 7, false, "c=F"), applied, map[string]string{"c": "F"}},
		{"a restarted node's delta needs a snapshot first", batch("n1", 11, 1, false, "d=S"), resync, map[string]string{"c": "F"}},
		{"the old incarnation is stale from now on", batch("n1", 10, 8, false, "c=S"), stale, map[string]string{"c": "F"}},
		{"the restarted node's snapshot", batch("n1", 11, 2, true, "d=S"), applied, map[string]string{"d": "S"}},
		{"a broken batch", &fleetv1.Changes{Node: "n1", Incarnation: 11, Seq: 3, Results: []*fleetv1.ResultChanged{{PodUid: "p1", Container: "x"}}}, invalid, map[string]string{"d": "S"}},
		{"and the session goes on after it", batch("n1", 11, 3, false, "d=F"), applied, map[string]string{"d": "F"}},
	}
	b := NewBook(99, 40*time.Second)
	for i, s := range steps {
		ack := b.Apply(s.in, t0.Add(time.Duration(i)*time.Second))
		require.Equal(t, s.want, ack.GetStatus(), "step %d: %s", i, s.name)
		assert.Equal(t, s.in.GetSeq(), ack.GetSeq(), "step %d: the ack names the batch", i)
		assert.Equal(t, uint64(99), ack.GetAggregatorIncarnation())
		assert.Equal(t, s.view, view(b, "n1"), "step %d: %s", i, s.name)
	}
	assert.Equal(t, 1, b.Stats().Keys)
	assert.Equal(t, uint64(6), b.Stats().Batches[applied])
}

func TestNodesAreIndependent(t *testing.T) {
	b := NewBook(1, time.Minute)
	require.Equal(t, applied, b.Apply(batch("n1", 5, 1, true, "a=S"), t0).GetStatus())
	require.Equal(t, applied, b.Apply(batch("n2", 5, 1, true, "a=F"), t0).GetStatus())
	require.Equal(t, applied, b.Apply(batch("n2", 5, 2, false, "a=S"), t0).GetStatus())
	assert.Equal(t, map[string]string{"a": "S"}, view(b, "n1"))
	assert.Equal(t, map[string]string{"a": "S"}, view(b, "n2"))
	assert.Equal(t, 2, b.Stats().Keys)
}

func TestHeartbeatTellsAnIdleNodeToResync(t *testing.T) {
	b := NewBook(1, time.Minute)
	hb := &fleetv1.Heartbeat{Node: "n1", Incarnation: 5}
	assert.Equal(t, resync, b.Heartbeat(hb, t0).GetStatus(), "an aggregator that never heard of n1 (e.g. restarted)")
	b.Hello(&fleetv1.Hello{Node: "n1", Incarnation: 5, Address: "127.0.0.1:4000"}, t0)
	assert.Equal(t, resync, b.Heartbeat(hb, t0).GetStatus(), "hello alone is no baseline")
	b.Apply(batch("n1", 5, 3, true, "a=S"), t0)
	ack := b.Heartbeat(hb, t0)
	assert.Equal(t, applied, ack.GetStatus())
	assert.Equal(t, uint64(3), ack.GetSeq(), "the last seq held")
	assert.Equal(t, stale, b.Heartbeat(&fleetv1.Heartbeat{Node: "n1", Incarnation: 4}, t0).GetStatus())
	assert.Equal(t, invalid, b.Heartbeat(&fleetv1.Heartbeat{Node: "n1"}, t0).GetStatus())
	require.Len(t, b.Nodes(), 1)
	assert.Equal(t, []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}}, b.Nodes()[0].Status.Addresses)
}

func readyPodChange(t *testing.T, uid, name string) *fleetv1.PodChanged {
	t.Helper()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("u-" + uid)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "c", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}}
	p, err := fleetv1.FromPod(pod)
	require.NoError(t, err)
	return p
}

func TestGracePeriodTurnsANodeUnknownAndItsPodsNotReady(t *testing.T) {
	b := NewBook(1, 40*time.Second)
	c := batch("n1", 5, 1, true, "c=S")
	c.Pods = []*fleetv1.PodChanged{readyPodChange(t, "1", "web")}
	c.Results[0].PodUid = "u-1"
	require.Equal(t, applied, b.Apply(c, t0).GetStatus())
	require.Equal(t, applied, b.Apply(batch("n2", 5, 1, true), t0).GetStatus())

	b.Tick(t0.Add(40 * time.Second))
	nodes := b.Nodes()
	require.Len(t, nodes, 2)
	assert.Equal(t, v1.ConditionTrue, nodes[0].Status.Conditions[0].Status, "exactly the grace period: still Ready")

	b.Heartbeat(&fleetv1.Heartbeat{Node: "n2", Incarnation: 5}, t0.Add(30*time.Second))
	later := t0.Add(41 * time.Second)
	b.Tick(later)
	nodes = b.Nodes()
	n1 := nodes[0].Status.Conditions[0]
	assert.Equal(t, v1.ConditionUnknown, n1.Status)
	assert.Equal(t, "NodeStatusUnknown", n1.Reason)
	assert.Equal(t, "Kubelet stopped posting node status.", n1.Message)
	assert.True(t, n1.LastHeartbeatTime.Time.Equal(t0), "last heartbeat = last contact")
	assert.True(t, n1.LastTransitionTime.Time.Equal(later))
	assert.Equal(t, v1.ConditionTrue, nodes[1].Status.Conditions[0].Status, "n2 heard from 11 s ago")

	pods, err := b.Pods()
	require.NoError(t, err)
	require.Len(t, pods, 1)
	assert.Equal(t, "n1", pods[0].Spec.NodeName)
	assert.Equal(t, v1.ConditionFalse, pods[0].Status.Conditions[0].Status, "MarkPodsNotReady")
	assert.True(t, pods[0].Status.ContainerStatuses[0].Ready, "container statuses are the node's last word")
	reasons := map[string]int{}
	for _, e := range b.Events() {
		reasons[e.Reason+"/"+e.InvolvedObject.Kind]++
	}
	assert.Equal(t, map[string]int{"RegisteredNode/Node": 2, "NodeNotReady/Node": 1, "NodeNotReady/Pod": 1}, reasons)

	// Contact again: Ready, the pod's Ready condition is the node's again.
	b.Heartbeat(&fleetv1.Heartbeat{Node: "n1", Incarnation: 5}, later.Add(time.Second))
	assert.Equal(t, v1.ConditionTrue, b.Nodes()[0].Status.Conditions[0].Status)
	pods, _ = b.Pods()
	assert.Equal(t, v1.ConditionTrue, pods[0].Status.Conditions[0].Status)
	assert.Equal(t, "NodeReady", b.Events()[len(b.Events())-1].Reason)
}

func TestPodRemovalDropsItsResults(t *testing.T) {
	b := NewBook(1, time.Minute)
	c := batch("n1", 5, 1, true, "c=S")
	c.Results[0].PodUid = "u-1"
	c.Pods = []*fleetv1.PodChanged{readyPodChange(t, "1", "web"), readyPodChange(t, "2", "api")}
	require.Equal(t, applied, b.Apply(c, t0).GetStatus())
	assert.Equal(t, 2, b.Stats().Pods)
	assert.Equal(t, 1, b.Stats().Keys)

	d := &fleetv1.Changes{Node: "n1", Incarnation: 5, Seq: 2, Pods: []*fleetv1.PodChanged{fleetv1.RemovedPod("u-1")}}
	require.Equal(t, applied, b.Apply(d, t0).GetStatus())
	pods, err := b.Pods()
	require.NoError(t, err)
	require.Len(t, pods, 1)
	assert.Equal(t, "api", pods[0].Name)
	assert.Empty(t, b.Results())
	assert.Equal(t, 1, b.Stats().Pods)
	assert.Equal(t, 0, b.Stats().Keys)
}

func TestRestartedNodeIsRebootedAndKeepsItsAge(t *testing.T) {
	b := NewBook(1, time.Minute)
	b.Hello(&fleetv1.Hello{Node: "n1", Incarnation: 5}, t0)
	b.Hello(&fleetv1.Hello{Node: "n1", Incarnation: 4}, t0.Add(time.Second)) // stale: ignored
	b.Hello(&fleetv1.Hello{Node: "n1", Incarnation: 6}, t0.Add(2*time.Second))
	n := b.Nodes()[0]
	assert.True(t, n.CreationTimestamp.Time.Equal(t0))
	assert.Equal(t, "6", n.Status.NodeInfo.BootID)
	assert.Equal(t, "Rebooted", b.Events()[len(b.Events())-1].Reason)
	assert.Len(t, b.Events(), 2)
}

func TestEventsAreBounded(t *testing.T) {
	b := NewBook(1, time.Second)
	for i := range maxEvents + 10 {
		b.Hello(&fleetv1.Hello{Node: "n", Incarnation: uint64(i + 1)}, t0)
	}
	assert.Len(t, b.Events(), maxEvents)
}

// A node's own conditions (a cluster member's ClusterQuorum) follow Ready on /nodes; a snapshot
// replaces them, and a node out of contact has them Unknown.
func TestNodeConditionsFollowReady(t *testing.T) {
	b := NewBook(1, 10*time.Second)
	quorum := func(status, reason string) []*fleetv1.NodeCondition {
		return []*fleetv1.NodeCondition{{Type: "ClusterQuorum", Status: status, Reason: reason, TransitionUnixNano: t0.UnixNano()}}
	}
	snap := batch("n1", 1, 1, true)
	snap.Conditions = quorum("True", "QuorumHeld")
	require.Equal(t, applied, b.Apply(snap, t0).GetStatus())
	conds := b.Nodes()[0].Status.Conditions
	require.Len(t, conds, 2)
	assert.Equal(t, v1.NodeReady, conds[0].Type)
	assert.Equal(t, v1.NodeCondition{Type: "ClusterQuorum", Status: v1.ConditionTrue, Reason: "QuorumHeld",
		LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0)}, conds[1])

	delta := batch("n1", 1, 2, false)
	delta.Conditions = quorum("False", "QuorumLost")
	require.Equal(t, applied, b.Apply(delta, t0.Add(time.Second)).GetStatus())
	conds = b.Nodes()[0].Status.Conditions
	require.Len(t, conds, 2)
	assert.Equal(t, v1.ConditionFalse, conds[1].Status)
	assert.Equal(t, "QuorumLost", conds[1].Reason)

	b.Tick(t0.Add(time.Minute))
	conds = b.Nodes()[0].Status.Conditions
	assert.Equal(t, v1.ConditionUnknown, conds[1].Status, "out of contact: what it said is no longer known")

	require.Equal(t, applied, b.Apply(batch("n1", 2, 1, true), t0.Add(2*time.Minute)).GetStatus())
	assert.Len(t, b.Nodes()[0].Status.Conditions, 1, "a snapshot without conditions clears them (a restarted node outside a cluster)")
}

// What a node says of itself (its own Node object) joins the aggregator's view of it: labels,
// capacity, allocatable, daemon endpoint, system info and its Hostname after the InternalIP the
// aggregator sees; name, conditions and boot ID stay the aggregator's. A delta without one keeps
// it; a snapshot without one (a node of an older version) drops it.
func TestNodesCarryWhatTheNodeSaysOfItself(t *testing.T) {
	b := NewBook(1, 10*time.Second)
	b.Hello(&fleetv1.Hello{Node: "n1", Incarnation: 3, Address: "10.0.0.7:7000"}, t0)
	own := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "not-the-session's", Labels: map[string]string{v1.LabelHostname: "host-1", v1.LabelOSStable: "linux"}},
		Status: v1.NodeStatus{
			Capacity:        v1.ResourceList{v1.ResourceCPU: resource.MustParse("16"), v1.ResourceMemory: resource.MustParse("16374232Ki")},
			Allocatable:     v1.ResourceList{v1.ResourceCPU: resource.MustParse("16"), v1.ResourceMemory: resource.MustParse("16374232Ki")},
			Conditions:      []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}},
			Addresses:       []v1.NodeAddress{{Type: v1.NodeHostName, Address: "host-1"}},
			DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: 10255}},
			NodeInfo:        v1.NodeSystemInfo{BootID: "real-boot", KernelVersion: "6.1.0", OSImage: "Debian GNU/Linux 12 (bookworm)", KubeletVersion: "v1.37.2+probeactor.dev"},
		},
	}
	obj, err := fleetv1.FromNodeObject(own)
	require.NoError(t, err)
	snap := batch("n1", 3, 1, true)
	snap.NodeObject = obj
	require.Equal(t, applied, b.Apply(snap, t0).GetStatus())

	check := func(why string) {
		t.Helper()
		n := b.Nodes()[0]
		assert.Equal(t, "n1", n.Name, why)
		assert.Equal(t, own.Labels, n.Labels, why)
		assert.Equal(t, own.Status.Capacity, n.Status.Capacity, why)
		assert.Equal(t, own.Status.Allocatable, n.Status.Allocatable, why)
		assert.Equal(t, own.Status.DaemonEndpoints, n.Status.DaemonEndpoints, why)
		assert.Equal(t, []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.7"}, {Type: v1.NodeHostName, Address: "host-1"}},
			n.Status.Addresses, why)
		want := own.Status.NodeInfo
		want.BootID = "3"
		assert.Equal(t, want, n.Status.NodeInfo, why)
		require.Len(t, n.Status.Conditions, 1, why)
		assert.Equal(t, v1.ConditionTrue, n.Status.Conditions[0].Status, why+": Ready is the aggregator's")
	}
	check("from the snapshot")
	b.Nodes()[0].Labels["mutated"] = "x"
	require.Equal(t, applied, b.Apply(batch("n1", 3, 2, false, "c=S"), t0.Add(time.Second)).GetStatus())
	check("a delta without one keeps it, and a caller's change to a listed node is its own")

	require.Equal(t, applied, b.Apply(batch("n1", 4, 1, true), t0.Add(2*time.Second)).GetStatus())
	n := b.Nodes()[0]
	assert.Empty(t, n.Labels, "a snapshot without one drops it")
	assert.Empty(t, n.Status.Capacity)
	assert.Equal(t, "4", n.Status.NodeInfo.BootID)
}
