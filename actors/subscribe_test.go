package actors

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/messages"
)

// funcLog collects what a SubscribeFunc callback saw.
type funcLog struct {
	mu      sync.Mutex
	batches [][]string // "<id> <type> <result>" per change
}

func (l *funcLog) fn(b messages.ResultChanges) {
	var cs []string
	for _, c := range b.Changes {
		cs = append(cs, fmt.Sprintf("%s %s %s", c.ContainerID, c.Type, c.Result))
	}
	l.mu.Lock()
	l.batches = append(l.batches, cs)
	l.mu.Unlock()
}

func (l *funcLog) get() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][]string(nil), l.batches...)
}

// setResult stores a result in the cache directly, as a worker does.
func (h *harness) setResult(id messages.ContainerID, pt messages.ProbeType, r messages.Result) {
	h.sys.Root.Send(h.tree.env.cache, &protocol.SetResult{PodUID: "p", Container: "c", ContainerID: id, Type: pt, Result: r})
}

func TestSubscribeFuncDeliversInOrderAndAcks(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		var l funcLog
		require.NoError(t, h.tree.SubscribeFunc(t.Context(), l.fn, OfTypes(messages.Liveness)))
		// Registered before SubscribeFunc returned: nothing is lost.
		h.setResult("test://a", messages.Readiness, messages.Failure) // filtered out
		h.setResult("test://a", messages.Liveness, messages.Failure)
		h.sync()
		h.setResult("test://a", messages.Liveness, messages.Success) // needs the first batch's ack
		h.sync()
		assert.Equal(t, [][]string{{"test://a Liveness Failure"}, {"test://a Liveness Success"}}, l.get())
	})
}

// A slow callback only makes changes coalesce: it sees each key's latest value, never blocks the
// tree, and no batch is queued beyond the one it is handling.
func TestSubscribeFuncSlowCallbackCoalesces(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		var l funcLog
		release := make(chan struct{})
		entered := make(chan struct{}, 1)
		slow := func(b messages.ResultChanges) {
			l.fn(b)
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
		}
		require.NoError(t, h.tree.SubscribeFunc(t.Context(), slow))
		h.setResult("test://a", messages.Liveness, messages.Failure)
		<-entered // the callback holds the first batch
		for i := range 10 {
			h.setResult("test://a", messages.Liveness, messages.Result(i%2))
			h.setResult("test://b", messages.Readiness, messages.Result(i%2))
		}
		h.settledResult("test://b", messages.Readiness, messages.Failure) // the tree went on meanwhile
		assert.Equal(t, 2, h.cacheStats().Pending[funcSubscriberKey(h)], "one pending change per key")
		close(release)
		h.sync()
		assert.Equal(t, [][]string{
			{"test://a Liveness Failure"},
			{"test://a Liveness Failure", "test://b Readiness Failure"}, // the latest of each, first-change order
		}, l.get())
	})
}

// funcSubscriberKey finds the one SubscribeFunc subscriber in the cache's stats.
func funcSubscriberKey(h *harness) string {
	for k := range h.cacheStats().Pending {
		if strings.Contains(k, "probeactor-subscriber") {
			return k
		}
	}
	h.t.Fatal("no SubscribeFunc subscriber in the cache")
	return ""
}

func TestSubscribeFuncEndsWithContext(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		var l funcLog
		ctx, cancel := context.WithCancel(t.Context())
		require.NoError(t, h.tree.SubscribeFunc(ctx, l.fn))
		h.setResult("test://a", messages.Liveness, messages.Failure)
		h.sync()
		require.Len(t, l.get(), 1)
		cancel()
		h.sync() // the goroutine has unsubscribed and ended (synctest would report it blocked otherwise)
		assert.NotContains(t, fmt.Sprint(h.cacheStats().Pending), "probeactor-subscriber", "unsubscribed")
		h.setResult("test://a", messages.Liveness, messages.Success)
		h.settledResult("test://a", messages.Liveness, messages.Success)
		assert.Len(t, l.get(), 1, "nothing delivered after ctx ended")
		// The harness fails on any dead letter, and goleak on a leftover goroutine.
	})
}

// The subscription ends with Tree.Stop, which returns after its goroutine, also while a batch is
// being handled.
func TestSubscribeFuncEndsWithStop(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		release := make(chan struct{})
		entered := make(chan struct{})
		var ended sync.WaitGroup
		ended.Add(1)
		require.NoError(t, h.tree.SubscribeFunc(context.Background(), func(messages.ResultChanges) {
			close(entered)
			<-release
			ended.Done()
		}))
		h.setResult("test://a", messages.Liveness, messages.Failure)
		<-entered
		stopped := make(chan error, 1)
		go func() { stopped <- h.tree.Stop(context.Background()) }()
		h.sync()
		select {
		case <-stopped:
			t.Fatal("Stop returned while the callback runs")
		default:
		}
		close(release)
		require.NoError(t, <-stopped)
		ended.Wait()
		err := h.tree.SubscribeFunc(context.Background(), func(messages.ResultChanges) {})
		require.ErrorIs(t, err, ErrStopped)
	})
}

func TestSubscribeFuncRefusesBadInput(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		require.ErrorContains(t, h.tree.SubscribeFunc(context.Background(), nil), "fn is nil")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorIs(t, h.tree.SubscribeFunc(ctx, func(messages.ResultChanges) {}), context.Canceled)
	})
}

// WithSnapshot: the current value of every key first, then changes in order; for both forms.
func TestSubscribeSnapshot(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		h.setResult("test://b", messages.Readiness, messages.Success)
		h.setResult("test://a", messages.Readiness, messages.Failure)
		h.setResult("test://a", messages.Liveness, messages.Success)
		h.sync()
		var l funcLog
		require.NoError(t, h.tree.SubscribeFunc(t.Context(), l.fn, WithSnapshot(), OfTypes(messages.Readiness)))
		h.setResult("test://a", messages.Readiness, messages.Success)
		h.sync()
		assert.Equal(t, [][]string{
			{"test://a Readiness Failure", "test://b Readiness Success"}, // the snapshot (liveness filtered)
			{"test://a Readiness Success"},
		}, l.get())

		var plain funcLog
		require.NoError(t, h.tree.SubscribeFunc(t.Context(), plain.fn))
		h.sync()
		assert.Empty(t, plain.get(), "without WithSnapshot, only changes")
	})
}

func TestSubscribeSnapshotActor(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		h.setResult("test://a", messages.Liveness, messages.Failure)
		h.sync()
		got := make(chan *messages.ResultChanges, 1)
		sub := h.sys.Root.Spawn(actorFunc(func(b *messages.ResultChanges) { got <- b }))
		h.stopAtEnd(sub)
		h.tree.Subscribe(sub, WithSnapshot())
		b := <-got
		require.Len(t, b.Changes, 1)
		assert.Equal(t, messages.ResultChanged{PodUID: "p", Container: "c", ContainerID: "test://a",
			Type: messages.Liveness, Result: messages.Failure}, b.Changes[0])
	})
}

// actorFunc is a subscriber actor that acknowledges each batch after handing it to f.
func actorFunc(f func(*messages.ResultChanges)) *actor.Props {
	return actor.PropsFromFunc(func(ctx actor.Context) {
		if b, ok := ctx.Message().(*messages.ResultChanges); ok {
			f(b)
			ctx.Respond(&messages.AckResults{Seq: b.Seq})
		}
	})
}

// A message no actor of the tree understands is counted per actor and type (and logged once).
func TestUnhandledMessagesAreCounted(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		var logged logtest.Buffer
		h := newHarness(t, WithRegistry(reg), WithLogger(hclog.New(&hclog.LoggerOptions{Output: &logged, Level: hclog.Warn})))
		type bogus struct{}
		for range 3 {
			h.sys.Root.Send(h.tree.env.cache, &bogus{})
		}
		h.sys.Root.Send(h.tree.env.root, "a string")
		h.sync()
		assert.Equal(t, 3.0, testutil.ToFloat64(h.tree.env.metrics.unhandled.WithLabelValues(nameCache, "*actors.bogus")))
		assert.Equal(t, 1.0, testutil.ToFloat64(h.tree.env.metrics.unhandled.WithLabelValues(nameRoot, "string")))
		n, err := testutil.GatherAndCount(reg, "probeactor_unhandled_messages_total")
		require.NoError(t, err)
		assert.Equal(t, 2, n, "one series per actor and type; lifecycle messages are not counted")
		assert.Equal(t, 2, strings.Count(logged.String(), "unhandled message"), "logged once per actor and type:\n%s", logged.String())
	})
}
