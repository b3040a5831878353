package results

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/messages"
)

func set(id string, t messages.ProbeType, r messages.Result) protocol.SetResult {
	return protocol.SetResult{PodUID: "uid", Container: "c", ContainerID: messages.ContainerID(id), Type: t, Result: r}
}

func TestCacheOperations(t *testing.T) {
	c := New[string]()
	_, ok := c.Get("test://foo", messages.Readiness)
	assert.False(t, ok)
	changed, _ := c.Set(set("test://foo", messages.Readiness, messages.Success))
	assert.True(t, changed)
	r, ok := c.Get("test://foo", messages.Readiness)
	assert.True(t, ok)
	assert.Equal(t, messages.Success, r)
	_, ok = c.Get("test://foo", messages.Liveness)
	assert.False(t, ok, "probe types are separate")
	c.Remove("test://foo", messages.Readiness)
	_, ok = c.Get("test://foo", messages.Readiness)
	assert.False(t, ok)
}

// kubelet's TestUpdates, with one subscriber that acks every batch.
func TestUpdates(t *testing.T) {
	c := New[string]()
	c.Subscribe("s")
	expect := func(s protocol.SetResult, want bool) {
		t.Helper()
		changed, sends := c.Set(s)
		assert.Equal(t, want, changed)
		if !want {
			assert.Empty(t, sends)
			return
		}
		require.Len(t, sends, 1)
		assert.Equal(t, []messages.ResultChanged{messages.ResultChanged(s)}, sends[0].Batch.Changes)
		_, more := c.Ack(sends[0].Batch.Seq)
		assert.False(t, more)
	}
	expect(set("test://foo", messages.Readiness, messages.Success), true)
	expect(set("test://bar", messages.Readiness, messages.Failure), true)
	expect(set("test://foo", messages.Readiness, messages.Success), false)
	expect(set("test://bar", messages.Readiness, messages.Failure), false)
	expect(set("test://foo", messages.Readiness, messages.Failure), true)
	expect(set("test://bar", messages.Readiness, messages.Success), true)
}

func TestRemoveSendsNothing(t *testing.T) {
	c := New[string]()
	c.Subscribe("s")
	_, sends := c.Set(set("test://a", messages.Liveness, messages.Success))
	require.Len(t, sends, 1)
	c.Remove("test://a", messages.Liveness)
	_, more := c.Ack(sends[0].Batch.Seq)
	assert.False(t, more)
	// Set after Remove is a change again.
	changed, _ := c.Set(set("test://a", messages.Liveness, messages.Success))
	assert.True(t, changed)
}

func TestFilterAndCoalesce(t *testing.T) {
	c := New[string]()
	c.Subscribe("live", messages.Liveness)
	c.Subscribe("all")
	_, sends := c.Set(set("test://a", messages.Readiness, messages.Failure))
	require.Len(t, sends, 1)
	assert.Equal(t, "all", sends[0].To)
	first := sends[0].Batch.Seq
	// "all" is slow: everything else coalesces.
	for i := 0; i < 100; i++ {
		r := messages.Result(i % 2)
		_, sends = c.Set(set("test://a", messages.Readiness, r))
		assert.Empty(t, sends)
		_, sends = c.Set(set("test://b", messages.Liveness, r))
		if i == 0 {
			require.Len(t, sends, 1)
			assert.Equal(t, "live", sends[0].To)
		}
	}
	assert.Equal(t, 2, c.Pending("all"), "bounded by the number of keys")
	next, ok := c.Ack(first)
	require.True(t, ok)
	assert.Equal(t, []messages.ResultChanged{
		messages.ResultChanged(set("test://a", messages.Readiness, messages.Failure)),
		messages.ResultChanged(set("test://b", messages.Liveness, messages.Failure)),
	}, next.Batch.Changes, "latest value per key, in first-change order")
	_, ok = c.Ack(first)
	assert.False(t, ok, "stale ack ignored")
}

func TestRemoveDropsPending(t *testing.T) {
	c := New[string]()
	c.Subscribe("s")
	_, sends := c.Set(set("test://a", messages.Liveness, messages.Success))
	c.Set(set("test://b", messages.Liveness, messages.Failure))
	c.Set(set("test://c", messages.Liveness, messages.Failure))
	c.Remove("test://b", messages.Liveness)
	assert.Equal(t, 1, c.Pending("s"))
	next, ok := c.Ack(sends[0].Batch.Seq)
	require.True(t, ok)
	require.Len(t, next.Batch.Changes, 1)
	assert.Equal(t, messages.ContainerID("test://c"), next.Batch.Changes[0].ContainerID)
}

func TestUnsubscribe(t *testing.T) {
	c := New[string]()
	c.Subscribe("s")
	c.Unsubscribe("s")
	_, sends := c.Set(set("test://a", messages.Liveness, messages.Success))
	assert.Empty(t, sends)
	assert.Zero(t, c.Subscribers())
}

// A subscriber that never acks while 10,000 keys flip many times holds at most one entry per key,
// and the batch after its ack carries each key's final value.
func TestSlowSubscriberBoundedAndFinal(t *testing.T) {
	const keys = 10000
	c := New[string]()
	c.Subscribe("slow")
	var first uint64
	for round := 0; round < 5; round++ {
		for i := 0; i < keys; i++ {
			_, sends := c.Set(set(fmt.Sprintf("test://%d", i), messages.Readiness, messages.Result(round%2)))
			if len(sends) > 0 {
				require.Zero(t, first)
				first = sends[0].Batch.Seq
			}
		}
		// The queue itself, not only the map: a change of a key already queued must not grow it.
		assert.LessOrEqual(t, c.Pending("slow"), keys)
		assert.Len(t, c.subs["slow"].order, c.Pending("slow"))
	}
	next, ok := c.Ack(first)
	require.True(t, ok)
	require.Len(t, next.Batch.Changes, keys)
	for _, ch := range next.Batch.Changes {
		assert.Equal(t, messages.Success, ch.Result) // round 4 → Success
	}
	_, ok = c.Ack(next.Batch.Seq)
	assert.False(t, ok)
}

// Removing keys queued for a stuck subscriber is O(1) each and leaves the queue bounded: pods come
// and go (container IDs churn) while the subscriber is stuck, and the batch after its ack holds
// exactly the live keys, in first-change order.
func TestRemoveWhileStuckStaysBounded(t *testing.T) {
	c := New[string]()
	c.Subscribe("slow")
	_, sends := c.Set(set("test://first", messages.Readiness, messages.Success))
	require.Len(t, sends, 1)
	const keys = 1000
	for round := 0; round < 20; round++ {
		for i := 0; i < keys; i++ {
			c.Set(set(fmt.Sprintf("test://%d/%d", round, i), messages.Readiness, messages.Success))
		}
		if round > 0 {
			for i := 0; i < keys; i++ {
				c.Remove(messages.ContainerID(fmt.Sprintf("test://%d/%d", round-1, i)), messages.Readiness)
			}
		}
		s := c.subs["slow"]
		assert.Equal(t, keys, c.Pending("slow"))
		assert.LessOrEqual(t, len(s.order), 2*len(s.pending)+compactSlack, "round %d", round)
	}
	next, ok := c.Ack(sends[0].Batch.Seq)
	require.True(t, ok)
	require.Len(t, next.Batch.Changes, keys)
	for i, ch := range next.Batch.Changes {
		assert.Equal(t, messages.ContainerID(fmt.Sprintf("test://19/%d", i)), ch.ContainerID)
	}
}

// BenchmarkRemoveWhileStuck removes 10,000 keys queued for a stuck subscriber (CleanupPods of
// 1,000 pods while an embedder's subscriber is busy). It was quadratic before removals tombstoned.
func BenchmarkRemoveWhileStuck(b *testing.B) {
	const keys = 10000
	ids := make([]messages.ContainerID, keys)
	for i := range ids {
		ids[i] = messages.ContainerID(fmt.Sprintf("test://%d", i))
	}
	for b.Loop() {
		c := New[string]()
		c.Subscribe("slow")
		for _, id := range ids {
			c.Set(protocol.SetResult{ContainerID: id, Type: messages.Readiness, Result: messages.Success})
		}
		for _, id := range ids {
			c.Remove(id, messages.Readiness)
		}
	}
}

func TestSubscribeSnapshot(t *testing.T) {
	tests := []struct {
		name  string
		types []messages.ProbeType
		want  []string // "<id>/<type>=<result>" in batch order
	}{
		{"all types, sorted by pod, container, type", nil,
			[]string{"test://a/Liveness=Success", "test://a/Readiness=Failure", "test://b/Readiness=Success"}},
		{"filtered", []messages.ProbeType{messages.Readiness},
			[]string{"test://a/Readiness=Failure", "test://b/Readiness=Success"}},
		{"nothing cached of the type", []messages.ProbeType{messages.Startup}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New[string]()
			c.Set(protocol.SetResult{PodUID: "uid", Container: "c2", ContainerID: "test://b", Type: messages.Readiness, Result: messages.Success})
			c.Set(protocol.SetResult{PodUID: "uid", Container: "c1", ContainerID: "test://a", Type: messages.Readiness, Result: messages.Failure})
			c.Set(protocol.SetResult{PodUID: "uid", Container: "c1", ContainerID: "test://a", Type: messages.Liveness, Result: messages.Success})
			send, ok := c.SubscribeSnapshot("s", tt.types...)
			if tt.want == nil {
				assert.False(t, ok, "an empty snapshot sends nothing")
				return
			}
			require.True(t, ok)
			var got []string
			for _, ch := range send.Batch.Changes {
				got = append(got, fmt.Sprintf("%s/%s=%s", ch.ContainerID, ch.Type, ch.Result))
				assert.Equal(t, types.UID("uid"), ch.PodUID, "the snapshot names the pod")
			}
			assert.Equal(t, tt.want, got)
			// Changes follow the snapshot, after its ack.
			_, sends := c.Set(protocol.SetResult{PodUID: "uid", Container: "c2", ContainerID: "test://b", Type: messages.Readiness, Result: messages.Failure})
			assert.Empty(t, sends, "the snapshot batch is still out")
			next, more := c.Ack(send.Batch.Seq)
			require.True(t, more)
			assert.Equal(t, messages.Failure, next.Batch.Changes[0].Result)
		})
	}
}

func TestSubscribeSnapshotWhileBatchOut(t *testing.T) {
	c := New[string]()
	c.Subscribe("s")
	_, sends := c.Set(set("test://a", messages.Readiness, messages.Success))
	require.Len(t, sends, 1)
	_, ok := c.SubscribeSnapshot("s")
	assert.False(t, ok, "one batch out at a time: the snapshot is queued")
	next, more := c.Ack(sends[0].Batch.Seq)
	require.True(t, more)
	assert.Len(t, next.Batch.Changes, 1, "the snapshot coalesced with the pending change per key")
}
