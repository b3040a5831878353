package actors

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/messages"
)

// A query whose ctx ends returns at once and leaves nothing behind: no goroutine keeps waiting for
// the default query timeout (10 s) after the caller gave up.
func TestQueryEndsWithItsContext(t *testing.T) {
	sys := newSystem(t)
	received := make(chan struct{})
	silent := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*protocol.GetResult); ok {
			close(received) // and never answer
		}
	}))
	t.Cleanup(func() { require.NoError(t, sys.Root.PoisonFuture(silent).Wait()) })
	tree := &Tree{env: &env{sys: sys, root: silent}}
	baseline := goleak.IgnoreCurrent()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := tree.Result(ctx, "test://c", messages.Liveness)
		done <- err
	}()
	<-received
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	goleak.VerifyNone(t, baseline)

	_, _, err := tree.Result(ctx, "test://c", messages.Liveness)
	require.ErrorIs(t, err, context.Canceled, "an ended ctx is refused before anything is sent")
}

// A query to a stopped tree fails at once with a dead-letter error instead of waiting for a timeout.
func TestQueryAfterStop(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		allowDeadLetters(h.sys) // the query itself is one
		require.NoError(t, h.tree.Stop(context.Background()))
		_, _, err := h.tree.PodStatus(context.Background(), "uid")
		require.ErrorIs(t, err, actor.ErrDeadLetter)
	})
}

// PodStatuses answers for several pods in one query exactly what PodStatus answers for each; a pod
// without a status is absent.
func TestPodStatusesMatchesPodStatus(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		a := testPod("qa", v1.Container{Name: "c", ReadinessProbe: execProbe(1, 1)})
		b := testPod("qb", v1.Container{Name: "c"})
		h.run(a)
		h.run(b)
		synctest.Wait()
		got, err := h.tree.PodStatuses(context.Background(), a.UID, b.UID, "unknown")
		require.NoError(t, err)
		require.Len(t, got, 2)
		for _, uid := range []types.UID{a.UID, b.UID} {
			one, ok, err := h.tree.PodStatus(context.Background(), uid)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, one, got[uid], "pod %s", uid)
		}
		assert.NotContains(t, got, types.UID("unknown"))
	})
}
