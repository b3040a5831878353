package aggregator

import (
	"math"
	"strconv"
	"strings"
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

// usageOf is a sampling window of window ending at end: the host's CPU (nanocores) and 1 GiB, and
// for each "namespace/name=millicores" a pod with one container "c" using those and 10 MiB ("ns/name="
// alone: a pod without any container measured).
func usageOf(end time.Time, window time.Duration, nodeNanocores uint64, pods ...string) *fleetv1.Usage {
	u := &fleetv1.Usage{TimestampUnixNano: end.UnixNano(), WindowNanos: int64(window), NodeCpuNanocores: nodeNanocores, NodeMemoryBytes: 1 << 30}
	for _, p := range pods {
		ref, milli, _ := strings.Cut(p, "=")
		ns, name, _ := strings.Cut(ref, "/")
		pu := &fleetv1.PodUsage{Namespace: ns, Name: name}
		if m, err := strconv.ParseUint(milli, 10, 64); err == nil {
			pu.Containers = []*fleetv1.ContainerUsage{{Name: "c", CpuNanocores: m * 1e6, MemoryBytes: 10 << 20}}
		}
		u.Pods = append(u.Pods, pu)
	}
	return u
}

// served renders what the book serves at now: each node's metrics as "name=cpu", each pod's as
// "namespace/name=cpu" (its containers' CPU, as kubectl sums them).
func served(b *Book, now time.Time) []string {
	out := []string{}
	for _, m := range b.NodeMetrics(now) {
		out = append(out, m.Name+"="+m.Usage.Cpu().String())
	}
	for _, m := range b.PodMetrics(now) {
		var cpu resource.Quantity
		for _, c := range m.Containers {
			cpu.Add(*c.Usage.Cpu())
		}
		out = append(out, m.Namespace+"/"+m.Name+"="+cpu.String())
	}
	return out
}

// A node's usage follows its batches as the rest of its view does: a snapshot replaces it (one
// without clears it), a delta with one replaces it, a delta without keeps it, and what the Book
// drops (duplicate, gap, stale incarnation) changes nothing. It is served only while the node is
// Ready and fresh: for max(3 windows, grace) after it arrived. A restarted node (a new
// incarnation, from its Hello on) has none until it sends one: its containers restarted with it.
// Only pods the node reports are served, and only those with a container measured.
func TestNodeUsageIsServedAsMetrics(t *testing.T) {
	const grace = 10 * time.Second
	withPods := func(c *fleetv1.Changes, u *fleetv1.Usage) *fleetv1.Changes {
		c.Pods = []*fleetv1.PodChanged{readyPodChange(t, "1", "web"), readyPodChange(t, "2", "api")}
		c.Usage = u
		return c
	}
	withUsage := func(c *fleetv1.Changes, u *fleetv1.Usage) *fleetv1.Changes { c.Usage = u; return c }
	u1 := usageOf(t0, 10*time.Second, 250e6, "default/web=100", "default/api=", "default/ghost=5", "other/web=7")
	u2 := usageOf(t0.Add(10*time.Second), 10*time.Second, 500e6, "default/web=200", "default/api=3")
	u3 := usageOf(t0.Add(20*time.Second), 10*time.Second, 750e6, "default/web=300")
	short := usageOf(t0.Add(20*time.Second), time.Second, 1e6, "default/web=1")
	type step struct {
		name string
		at   time.Duration // after t0
		do   func(b *Book, now time.Time) fleetv1.AckStatus
		want []string // served at the step's time
	}
	apply := func(c *fleetv1.Changes) func(*Book, time.Time) fleetv1.AckStatus {
		return func(b *Book, now time.Time) fleetv1.AckStatus { return b.Apply(c, now).GetStatus() }
	}
	heartbeat := func(inc uint64) func(*Book, time.Time) fleetv1.AckStatus {
		return func(b *Book, now time.Time) fleetv1.AckStatus {
			return b.Heartbeat(&fleetv1.Heartbeat{Node: "n1", Incarnation: inc}, now).GetStatus()
		}
	}
	tick := func(b *Book, now time.Time) fleetv1.AckStatus { b.Tick(now); return applied }
	steps := []step{
		{"a snapshot with usage; a pod the node does not report or without a container measured is left out", 0,
			apply(withPods(batch("n1", 5, 1, true), u1)), []string{"n1=250m", "default/web=100m"}},
		{"a delta without usage keeps it", 1, apply(batch("n1", 5, 2, false, "c=S")), []string{"n1=250m", "default/web=100m"}},
		{"a delta with usage replaces it", 2, apply(withUsage(batch("n1", 5, 3, false), u2)), []string{"n1=500m", "default/api=3m", "default/web=200m"}},
		{"a duplicate changes nothing", 3, func(b *Book, now time.Time) fleetv1.AckStatus {
			return b.Apply(withUsage(batch("n1", 5, 3, false), u3), now).GetStatus()
		}, []string{"n1=500m", "default/api=3m", "default/web=200m"}},
		{"a gap neither", 4, apply(withUsage(batch("n1", 5, 5, false), u3)), []string{"n1=500m", "default/api=3m", "default/web=200m"}},
		{"a snapshot without usage clears it", 5, apply(withPods(batch("n1", 5, 6, true), nil)), []string{}},
		{"a snapshot with usage", 6, apply(withPods(batch("n1", 5, 7, true), u3)), []string{"n1=750m", "default/web=300m"}},
		{"in contact: served for 3 windows (30 s > grace) after it arrived", 36, heartbeat(5), []string{"n1=750m", "default/web=300m"}},
		{"then stale, though in contact", 37, heartbeat(5), []string{}},
		{"a fresh one", 40, apply(withUsage(batch("n1", 5, 8, false), u3)), []string{"n1=750m", "default/web=300m"}},
		{"out of contact past the grace period: Unknown, no metrics though 3 windows have not passed", 51, tick, []string{}},
		{"back in contact within 3 windows: served again", 52, heartbeat(5), []string{"n1=750m", "default/web=300m"}},
		{"a short window: served for the grace period", 53, apply(withUsage(batch("n1", 5, 9, false), short)), []string{"n1=1m", "default/web=1m"}},
		{"exactly the grace period", 63, heartbeat(5), []string{"n1=1m", "default/web=1m"}},
		{"past it", 64, heartbeat(5), []string{}},
		{"again", 65, apply(withUsage(batch("n1", 5, 10, false), u2)), []string{"n1=500m", "default/api=3m", "default/web=200m"}},
		{"the node restarted: its Hello drops the old process's usage before its snapshot", 66, func(b *Book, now time.Time) fleetv1.AckStatus {
			b.Hello(&fleetv1.Hello{Node: "n1", Incarnation: 6}, now)
			return applied
		}, []string{}},
		{"the old incarnation's late delta is stale", 67, apply(withUsage(batch("n1", 5, 11, false), u3)), []string{}},
		{"the new incarnation's snapshot without usage (no window yet)", 68, apply(withPods(batch("n1", 6, 1, true), nil)), []string{}},
		{"its first window", 78, apply(withUsage(batch("n1", 6, 2, false), u1)), []string{"n1=250m", "default/web=100m"}},
	}
	b := NewBook(1, grace)
	wantAck := map[string]fleetv1.AckStatus{"a duplicate changes nothing": duplicate, "a gap neither": resync, "the old incarnation's late delta is stale": stale}
	for _, s := range steps {
		now := t0.Add(s.at * time.Second)
		want, ok := wantAck[s.name]
		if !ok {
			want = applied
		}
		require.Equal(t, want, s.do(b, now), s.name)
		assert.Equal(t, s.want, served(b, now), s.name)
	}
}

// NodeMetrics and PodMetrics in metrics-server's shapes: the node's labels from its own Node object,
// creationTimestamp the time asked, the window's end and length, CPU in nanocores (DecimalSI),
// memory in bytes (BinarySI); pods sorted by namespace, name and node (two nodes may run pods of
// one name), containers by name; a value beyond int64 loses digits instead of wrapping negative.
func TestMetricsShapes(t *testing.T) {
	b := NewBook(1, time.Minute)
	own := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1.LabelHostname: "host-1"}}}
	obj, err := fleetv1.FromNodeObject(own)
	require.NoError(t, err)
	end := t0.Add(-time.Second)
	for i, name := range []string{"n2", "n1"} {
		c := batch(name, 1, 1, true)
		c.Pods = []*fleetv1.PodChanged{readyPodChange(t, "1", "web")}
		c.Usage = &fleetv1.Usage{TimestampUnixNano: end.UnixNano(), WindowNanos: int64(10*time.Second + 52*time.Millisecond),
			NodeCpuNanocores: 123456789 * uint64(i+1), NodeMemoryBytes: 2113904 * 1024,
			Pods: []*fleetv1.PodUsage{{Namespace: "default", Name: "web", Containers: []*fleetv1.ContainerUsage{
				{Name: "sidecar", CpuNanocores: 1, MemoryBytes: 104857601}, {Name: "app", CpuNanocores: 250e6, MemoryBytes: 100 << 20}}}}}
		if name == "n1" {
			c.NodeObject = obj
			c.Usage.NodeCpuNanocores = math.MaxUint64
		}
		require.Equal(t, applied, b.Apply(c, t0).GetStatus())
	}
	nodes := b.NodeMetrics(t0)
	require.Len(t, nodes, 2)
	assert.Equal(t, []string{"n1", "n2"}, []string{nodes[0].Name, nodes[1].Name})
	n1, n2 := nodes[0], nodes[1]
	assert.Equal(t, own.Labels, n1.Labels)
	assert.Empty(t, n2.Labels, "no Node object: no labels")
	assert.Empty(t, n2.Kind, "a list's items carry no kind")
	assert.True(t, n2.CreationTimestamp.Time.Equal(t0))
	assert.True(t, n2.Timestamp.Time.Equal(end))
	assert.Equal(t, 10*time.Second+52*time.Millisecond, n2.Window.Duration)
	assert.Equal(t, "123456789n", ptr(n2.Usage[v1.ResourceCPU]).String())
	assert.Equal(t, resource.DecimalSI, n2.Usage.Cpu().Format)
	assert.Equal(t, "2113904Ki", ptr(n2.Usage[v1.ResourceMemory]).String())
	assert.Equal(t, resource.BinarySI, n2.Usage.Memory().Format)
	assert.Positive(t, n1.Usage.Cpu().Sign(), "beyond int64: %s", n1.Usage.Cpu())
	assert.InDelta(t, float64(math.MaxUint64)/1e9, n1.Usage.Cpu().AsApproximateFloat64(), 1e6)

	pods := b.PodMetrics(t0)
	require.Len(t, pods, 2, "web on n1 and on n2")
	for _, p := range pods {
		assert.Equal(t, "default", p.Namespace)
		assert.Equal(t, "web", p.Name)
		assert.Empty(t, p.Labels)
		assert.True(t, p.Timestamp.Time.Equal(end))
		require.Len(t, p.Containers, 2)
		assert.Equal(t, "app", p.Containers[0].Name)
		assert.Equal(t, "250m", p.Containers[0].Usage.Cpu().String())
		assert.Equal(t, "100Mi", p.Containers[0].Usage.Memory().String())
		assert.Equal(t, "sidecar", p.Containers[1].Name)
		assert.Equal(t, "1n", p.Containers[1].Usage.Cpu().String())
		assert.Equal(t, "104857601", p.Containers[1].Usage.Memory().String())
	}
	pods[0].Containers[0].Name = "mutated"
	assert.Equal(t, "app", b.PodMetrics(t0)[0].Containers[0].Name, "a caller's change is its own")
}

func ptr[T any](v T) *T { return &v }
