package actors

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/actors/fakeruntime"
	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/messages"
)

// The tree can live under an embedder's own actor; stopping that actor stops the tree with it.
func TestStartUnderParentActor(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		sys := newSystem(t)
		clk := clock.NewFake(t0)
		rt := fakeruntime.New(clk)
		trees := make(chan *Tree, 1)
		parent := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
			if _, ok := ctx.Message().(*actor.Started); ok {
				tree, err := Start(ctx, WithRuntime(rt), WithClock(clk), WithRand(func() float64 { return 0 }),
					WithLogger(testLogger(t)))
				require.NoError(t, err)
				trees <- tree
			}
		}))
		tree := <-trees
		assert.Equal(t, parent.Id, tree.env.root.Id[:len(parent.Id)], "the root is the parent's child")
		pod := testPod("emb", v1.Container{Name: "c", ReadinessProbe: execProbe(1, 1)})
		rt.RunPod(pod)
		require.NoError(t, tree.AddPod(pod))
		synctest.Wait()
		r, ok, err := tree.Result(context.Background(), rt.ContainerID(pod.UID, "c"), messages.Readiness)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, messages.Success, r)
		require.NoError(t, sys.Root.PoisonFuture(parent).Wait())
		assert.Zero(t, tree.env.cfg.exec.Pending())
	})
}

func TestUnsubscribe(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		got := make(chan *messages.ResultChanges, 10)
		sub := h.sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
			if b, ok := ctx.Message().(*messages.ResultChanges); ok {
				got <- b
				ctx.Respond(&messages.AckResults{Seq: b.Seq})
			}
		}))
		h.stopAtEnd(sub)
		h.tree.Subscribe(sub, OfTypes(messages.Liveness))
		h.sync() // the subscription (root → cache) is in place before the direct Sets below
		set := func(id messages.ContainerID, pt messages.ProbeType) {
			h.sys.Root.Send(h.tree.env.cache, &protocol.SetResult{PodUID: "p", Container: "c", ContainerID: id, Type: pt, Result: messages.Failure})
		}
		set("test://a", messages.Readiness) // filtered out
		set("test://b", messages.Liveness)
		var b *messages.ResultChanges
		select {
		case b = <-got:
		case <-time.After(5 * time.Second):
			t.Fatal("no batch")
		}
		require.Len(t, b.Changes, 1)
		assert.Equal(t, messages.ContainerID("test://b"), b.Changes[0].ContainerID)
		h.tree.Unsubscribe(sub)
		h.sync()
		set("test://c", messages.Liveness)
		h.settledResult("test://c", messages.Liveness, messages.Failure)
		assert.Len(t, h.cacheStats().Pending, 2, "only the tree's own subscribers (statusManager, syncLoop) are left")
		select {
		case b := <-got:
			t.Fatalf("unexpected batch after unsubscribe: %+v", b)
		default:
		}
	})
}

// A subscriber that stops is unsubscribed automatically (the cache watches it), without a dead
// letter (the harness fails on any).
func TestStoppedSubscriberIsUnsubscribed(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		sub := h.sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
			if b, ok := ctx.Message().(*messages.ResultChanges); ok {
				ctx.Respond(&messages.AckResults{Seq: b.Seq})
			}
		}))
		h.tree.Subscribe(sub)
		h.sync()
		require.Contains(t, h.cacheStats().Pending, sub.String())
		require.NoError(t, h.sys.Root.StopFuture(sub).Wait())
		synctest.Wait()
		require.NotContains(t, h.cacheStats().Pending, sub.String())
		h.sys.Root.Send(h.tree.env.cache, &protocol.SetResult{PodUID: "p", Container: "c", ContainerID: "test://x",
			Type: messages.Liveness, Result: messages.Failure})
		h.settledResult("test://x", messages.Liveness, messages.Failure) // nothing is sent to the gone subscriber
	})
}

// The Tree's methods are the only way in (the root's PID is private, so nothing bypasses its
// ordering): a status, then the pod, then the pod's stop and removal.
func TestCommandsInOrder(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		pod := testPod("msg", v1.Container{Name: "c", LivenessProbe: execProbe(1, 1), ReadinessProbe: execProbe(1, 1)})
		st := v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "c", ContainerID: "test://1",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}}}}
		h.tree.SetPodStatus(pod, st)
		require.NoError(t, h.tree.AddPod(pod))
		h.settledResult("test://1", messages.Readiness, messages.Success)
		h.settledResult("test://1", messages.Liveness, messages.Success)
		require.Equal(t, 2, h.workerCount())
		assert.True(t, h.status(pod.UID).ContainerStatuses[0].Ready)

		h.tree.StopLivenessAndStartup(pod)
		synctest.Wait()
		assert.Equal(t, 1, h.workerCount())
		h.tree.RemovePod(pod)
		synctest.Wait()
		assert.Zero(t, h.workerCount())
		_, ok := h.result("test://1", messages.Readiness)
		assert.False(t, ok, "the stopped worker removed its result")
	})
}
