package actors

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

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

// stall makes the tree actor at target block in its handler until release is closed (through
// stallMiddleware).
type stall struct {
	target  *actor.PID
	release chan struct{}
}

func stallMiddleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		if m, ok := env.Message.(stall); ok && c.Self().Equal(m.target) {
			<-m.release
			return
		}
		next(c, env)
	}
}

// Check answers nil while every actor of the tree's own handles its mailbox, and names the one
// that does not: each in turn is stuck in a handler, and Check fails naming it until it is freed.
// A tree that stopped, or never started, fails too.
func TestCheckNamesTheActorThatDoesNotAnswer(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t, withMiddleware(stallMiddleware))
		require.NoError(t, h.tree.Check(context.Background()))
		for _, name := range []string{nameRoot, nameCache, nameManager, nameStatus, nameSync} {
			pid := h.tree.env.root
			if name != nameRoot {
				pid = childPID(h.tree.env.root, name)
			}
			release := make(chan struct{})
			h.sys.Root.Send(pid, stall{pid, release})
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := h.tree.Check(ctx)
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded, name)
			assert.ErrorContains(t, err, name+" did not answer", name)
			close(release)
			require.NoError(t, h.tree.Check(context.Background()), "%s answers once it is free", name)
		}

		allowDeadLetters(h.sys) // the Touch to the stopped root is one
		require.NoError(t, h.tree.Stop(context.Background()))
		err := h.tree.Check(context.Background())
		require.ErrorIs(t, err, actor.ErrDeadLetter)
		assert.ErrorContains(t, err, "root did not answer")
	})
	require.EqualError(t, (&Tree{}).Check(context.Background()), "probe tree: not started")
}
