package uplink

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// recorder is a subscriber that keeps every delivery and its ack.
type recorder struct {
	batches []Batch
	acks    []func()
}

func (r *recorder) deliver(b Batch, ack func()) {
	r.batches = append(r.batches, b)
	r.acks = append(r.acks, ack)
}

func (r *recorder) ackLast() { r.acks[len(r.acks)-1]() }

func res(pod, container string, r messages.Result) messages.ResultChanged {
	return messages.ResultChanged{PodUID: types.UID(pod), Container: container, ContainerID: messages.ContainerID("proc://" + container), Type: messages.Readiness, Result: r}
}

func TestCoalescerSnapshotFirstThenOneBatchAtATime(t *testing.T) {
	c := NewCoalescer()
	c.SetResult(res("p", "a", messages.Success))
	c.SetPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "p"}})
	var r recorder
	cancel := c.Subscribe(1, r.deliver)
	require.Len(t, r.batches, 1)
	assert.True(t, r.batches[0].Snapshot)
	assert.Len(t, r.batches[0].Results, 1)
	assert.Len(t, r.batches[0].Pods, 1)

	// Unacknowledged: a thousand flips of ten keys coalesce to ten pending keys.
	for i := range 1000 {
		c.SetResult(res("p", fmt.Sprint("k", i%10), messages.Result(i%2)))
	}
	require.Len(t, r.batches, 1, "nothing is delivered before the ack")
	assert.Equal(t, 10, c.Pending(), "memory bounded by the keys, not by the changes")

	r.ackLast()
	require.Len(t, r.batches, 2)
	b := r.batches[1]
	assert.False(t, b.Snapshot)
	require.Len(t, b.Results, 10, "each key once, with its latest value")
	assert.Equal(t, "k0", b.Results[0].Container, "in the order keys first changed")
	assert.Equal(t, messages.Result(999%2), b.Results[9].Result)
	r.acks[0]() // a second ack of an old batch changes nothing
	r.ackLast()
	assert.Len(t, r.batches, 2, "nothing left to send")

	c.SetResult(res("p", "k9", messages.Result(999%2)))
	assert.Len(t, r.batches, 2, "an unchanged value is no change")
	cancel()
	c.SetResult(res("p", "a", messages.Failure))
	assert.Len(t, r.batches, 2, "no delivery after cancel")
}

func TestCoalescerBoundsDeltaBatches(t *testing.T) {
	c := NewCoalescer()
	c.MaxBatch = 4
	var r recorder
	c.Subscribe(1, r.deliver)
	for i := range 10 {
		c.SetResult(res("p", fmt.Sprint("k", i), messages.Success))
	}
	var sizes []int
	for len(r.batches) < 4 {
		r.ackLast()
		sizes = append(sizes, len(r.batches[len(r.batches)-1].Results))
	}
	assert.Equal(t, []int{4, 4, 2}, sizes)
}

func TestCoalescerRemovePodDropsItsResults(t *testing.T) {
	c := NewCoalescer()
	var r recorder
	c.Subscribe(1, r.deliver)
	c.SetPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "p"}})
	c.SetResult(res("p", "a", messages.Success))
	c.SetResult(res("q", "b", messages.Success))
	c.RemovePod("p")
	r.ackLast()
	b := r.batches[len(r.batches)-1]
	require.Len(t, b.Pods, 1)
	assert.Nil(t, b.Pods[0].Pod, "a removal")
	assert.Equal(t, types.UID("p"), b.Pods[0].UID)
	require.Len(t, b.Results, 1, "p's pending result is not sent after its removal")
	assert.Equal(t, "b", b.Results[0].Container)
	results, pods := c.Len()
	assert.Equal(t, 1, results)
	assert.Equal(t, 0, pods)
}

func TestCoalescerResubscribeStartsWithASnapshot(t *testing.T) {
	c := NewCoalescer()
	var first, second recorder
	c.Subscribe(1, first.deliver)
	c.SetResult(res("p", "a", messages.Success))
	c.SetResult(res("p", "b", messages.Failure))
	assert.Len(t, first.batches, 1, "waiting for the snapshot's ack")
	c.Subscribe(1, second.deliver)
	require.Len(t, second.batches, 1)
	assert.True(t, second.batches[0].Snapshot)
	assert.Len(t, second.batches[0].Results, 2, "the snapshot holds what the old subscription never delivered")
	first.ackLast()
	assert.Len(t, first.batches, 1, "the old subscription is over")
	assert.Zero(t, c.Pending())
}

func TestCoalescerIdleOnceEverythingIsAcknowledged(t *testing.T) {
	c := NewCoalescer()
	c.SetResult(res("p", "a", messages.Success))
	assert.True(t, c.Idle(), "no subscription: nothing can be delivered")
	var r recorder
	cancel := c.Subscribe(1, r.deliver)
	assert.False(t, c.Idle(), "the snapshot awaits its ack")
	r.ackLast()
	assert.True(t, c.Idle())
	c.SetResult(res("p", "a", messages.Failure))
	assert.False(t, c.Idle(), "a delta is out")
	c.SetResult(res("p", "b", messages.Failure))
	r.ackLast()
	assert.False(t, c.Idle(), "the next delta is out")
	r.ackLast()
	assert.True(t, c.Idle())
	cancel()
	c.SetResult(res("p", "a", messages.Success))
	assert.True(t, c.Idle(), "cancelled: nothing can be delivered")
}

func TestCoalescerWindowDeliversWithoutWaitingThenCoalesces(t *testing.T) {
	c := NewCoalescer()
	var r recorder
	c.Subscribe(3, r.deliver)
	c.SetResult(res("p", "a", messages.Success))
	c.SetResult(res("p", "b", messages.Success))
	require.Len(t, r.batches, 3, "the snapshot and two deltas are out unacknowledged")
	assert.Equal(t, "a", r.batches[1].Results[0].Container)
	assert.Equal(t, "b", r.batches[2].Results[0].Container)

	for i := range 100 {
		c.SetResult(res("p", fmt.Sprint("k", i%5), messages.Result(i%2)))
	}
	require.Len(t, r.batches, 3, "the window is full")
	assert.Equal(t, 5, c.Pending(), "coalesced per key")
	assert.False(t, c.Idle())

	r.acks[1]() // acks may come in any order: each frees one slot
	require.Len(t, r.batches, 4)
	assert.Len(t, r.batches[3].Results, 5)
	r.acks[1]() // twice: once
	c.SetResult(res("p", "a", messages.Failure))
	assert.Len(t, r.batches, 4, "still full: snapshot, b and the coalesced batch are out")
	r.acks[0]()
	require.Len(t, r.batches, 5)
	for _, i := range []int{2, 3, 4} {
		r.acks[i]()
	}
	assert.True(t, c.Idle())
}

// TestCoalescerKeepsOrderAcrossGoroutines: with a window, batches made by different goroutines
// must reach deliver in the order they were made, or a key's older value could overtake its newer
// one (and get the higher seq). The subscriber acks inside deliver, so a slot frees while another
// goroutine is delivering.
func TestCoalescerKeepsOrderAcrossGoroutines(t *testing.T) {
	const goroutines, changes = 8, 2000
	for round := range 5 { // the interleavings that would break it are rare: try several
		t.Run(fmt.Sprint("round ", round), func(t *testing.T) { keepsOrder(t, goroutines, changes) })
	}
}

func keepsOrder(t *testing.T, goroutines, changes int) {
	c := NewCoalescer()
	c.MaxBatch = 3
	var mu sync.Mutex
	last := map[string]int{}
	var broken []string
	c.Subscribe(4, func(b Batch, ack func()) {
		runtime.Gosched() // widen the gap between making a batch and recording it
		mu.Lock()
		for _, r := range b.Results {
			n, _ := strconv.Atoi(strings.TrimPrefix(string(r.ContainerID), "proc://"))
			if n <= last[r.Container] && !b.Snapshot {
				broken = append(broken, fmt.Sprintf("%s: %d after %d", r.Container, n, last[r.Container]))
			}
			last[r.Container] = n
		}
		mu.Unlock()
		ack()
	})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := 1; i <= changes; i++ {
				c.SetResult(messages.ResultChanged{PodUID: "p", Container: fmt.Sprint("g", g), Type: messages.Readiness,
					ContainerID: messages.ContainerID(fmt.Sprint("proc://", i)), Result: messages.Result(i % 2)})
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, broken, "a key went backwards")
	for g := range goroutines {
		assert.Equal(t, changes, last[fmt.Sprint("g", g)], "every key's last value was delivered")
	}
	assert.True(t, c.Idle())
}

// The node's own conditions travel like any key: the snapshot has them all, a delta only the ones
// that changed, and an unchanged one is no change.
func TestCoalescerCarriesNodeConditions(t *testing.T) {
	c := NewCoalescer()
	held := Condition{Type: "ClusterQuorum", Status: "True", Reason: "QuorumHeld"}
	c.SetCondition(held)
	var r recorder
	defer c.Subscribe(1, r.deliver)()
	require.Len(t, r.batches, 1)
	assert.Equal(t, []Condition{held}, r.batches[0].Conditions, "the snapshot carries every condition")
	r.ackLast()

	c.SetCondition(held)
	assert.Len(t, r.batches, 1, "an unchanged condition is no change")
	lost := Condition{Type: "ClusterQuorum", Status: "False", Reason: "QuorumLost", Message: "in contact with 1 of 3"}
	c.SetCondition(lost)
	require.Len(t, r.batches, 2)
	assert.Equal(t, []Condition{lost}, r.batches[1].Conditions)
	assert.Empty(t, r.batches[1].Results)
	assert.Empty(t, r.batches[1].Pods)
}

// The node's own Node object: a snapshot carries the current one (none before SetNode), a delta
// only a changed one, and a resubscription's snapshot the latest.
func TestCoalescerCarriesTheNodeObject(t *testing.T) {
	c := NewCoalescer()
	var r recorder
	cancel := c.Subscribe(1, r.deliver)
	require.Len(t, r.batches, 1)
	assert.Nil(t, r.batches[0].Node, "no node object yet")
	r.ackLast()

	node := func(cpu string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
			Status: v1.NodeStatus{Capacity: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}
	}
	c.SetNode(node("4"))
	require.Len(t, r.batches, 2)
	assert.Equal(t, node("4"), r.batches[1].Node)
	r.ackLast()
	c.SetNode(node("4000m")) // the same quantity, written otherwise
	assert.Len(t, r.batches, 2, "an unchanged node object is no change")
	c.SetNode(node("8"))
	require.Len(t, r.batches, 3)
	assert.Equal(t, node("8"), r.batches[2].Node)
	assert.Empty(t, r.batches[2].Results)
	cancel()

	var again recorder
	defer c.Subscribe(1, again.deliver)()
	require.Len(t, again.batches, 1)
	assert.Equal(t, node("8"), again.batches[0].Node, "the snapshot carries the latest")
}

// The node's usage: a snapshot carries the latest (none before SetUsage); each SetUsage is a
// change, the latest winning while the window is full; a resubscription's snapshot carries the
// latest; a usage the wire refuses is not kept.
func TestCoalescerCarriesTheUsage(t *testing.T) {
	c := NewCoalescer()
	var r recorder
	cancel := c.Subscribe(1, r.deliver)
	require.Len(t, r.batches, 1)
	assert.Nil(t, r.batches[0].Usage, "no usage yet")
	r.ackLast()

	usage := func(at int64, cpu uint64) *fleetv1.Usage {
		return &fleetv1.Usage{TimestampUnixNano: at, WindowNanos: 10e9, NodeCpuNanocores: cpu, NodeMemoryBytes: 1 << 30,
			Pods: []*fleetv1.PodUsage{{Namespace: "default", Name: "web", Containers: []*fleetv1.ContainerUsage{{Name: "app", CpuNanocores: cpu / 2}}}}}
	}
	require.NoError(t, c.SetUsage(usage(10e9, 2e9)))
	require.Len(t, r.batches, 2)
	assert.Equal(t, int64(10e9), r.batches[1].Usage.GetTimestampUnixNano())
	assert.Empty(t, r.batches[1].Results)
	assert.Empty(t, r.batches[1].Pods)
	r.ackLast()
	require.NoError(t, c.SetUsage(usage(20e9, 2e9)))
	require.Len(t, r.batches, 3, "the same rates again are another window: a change")
	assert.Equal(t, int64(20e9), r.batches[2].Usage.GetTimestampUnixNano())

	// Unacknowledged: the windows taken meanwhile coalesce to the latest.
	require.NoError(t, c.SetUsage(usage(30e9, 1e9)))
	require.NoError(t, c.SetUsage(usage(40e9, 3e9)))
	assert.Len(t, r.batches, 3, "nothing is delivered before the ack")
	assert.Equal(t, 1, c.Pending())
	assert.False(t, c.Idle())
	require.NoError(t, c.SetUsage(nil), "nil is ignored")
	r.ackLast()
	require.Len(t, r.batches, 4)
	assert.Equal(t, int64(40e9), r.batches[3].Usage.GetTimestampUnixNano(), "the latest wins")
	assert.Equal(t, uint64(3e9), r.batches[3].Usage.GetNodeCpuNanocores())
	r.ackLast()
	assert.True(t, c.Idle())

	bad := usage(50e9, 1e9)
	bad.Pods[0].Namespace = ""
	assert.ErrorContains(t, c.SetUsage(bad), "namespace")
	assert.Len(t, r.batches, 4, "a refused usage is no change")
	cancel()

	var again recorder
	defer c.Subscribe(1, again.deliver)()
	require.Len(t, again.batches, 1)
	assert.Equal(t, int64(40e9), again.batches[0].Usage.GetTimestampUnixNano(), "the snapshot carries the latest, not the refused one")
}

// A batch's usage goes on the wire as Changes.usage, unset without one.
func TestChangesCarryTheUsage(t *testing.T) {
	u := &uplinkActor{cfg: Config{Node: "n1", Incarnation: 3}}
	usage := &fleetv1.Usage{TimestampUnixNano: 10e9, WindowNanos: 10e9, NodeCpuNanocores: 2e9, NodeMemoryBytes: 1 << 30}
	c := u.changes(7, Batch{Usage: usage})
	assert.Same(t, usage, c.GetUsage())
	assert.NoError(t, c.Validate())
	assert.Nil(t, u.changes(8, Batch{}).GetUsage())
}
