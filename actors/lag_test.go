package actors

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// A subscriber that is stuck while 10,000 results flip five times: no worker or producer blocks, the
// cache holds at most one pending change per key for it, and once it resumes it ends with the exact
// final state.
func TestSlowSubscriber(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		const keys = 10000
		h := newHarness(t)
		release := make(chan struct{})
		var mu sync.Mutex
		seen := map[messages.ContainerID]messages.Result{}
		batches := 0
		sub := h.sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
			b, ok := ctx.Message().(*messages.ResultChanges)
			if !ok {
				return
			}
			<-release // stuck until the test lets go
			mu.Lock()
			batches++
			for _, c := range b.Changes {
				seen[c.ContainerID] = c.Result
			}
			mu.Unlock()
			ctx.Respond(&messages.AckResults{Seq: b.Seq})
		}))
		h.stopAtEnd(sub)
		h.tree.Subscribe(sub, OfTypes(messages.Readiness))

		// A real worker keeps running meanwhile.
		pod := testPod("lag", v1.Container{Name: "c", ReadinessProbe: execProbe(1, 1)})
		key := messages.ProbeKey{PodUID: pod.UID, Container: "c", Type: messages.Readiness}
		h.run(pod)
		h.idle(key)

		start := time.Now()
		for round := 0; round < 5; round++ {
			for i := 0; i < keys; i++ {
				h.sys.Root.Send(h.tree.env.cache, &protocol.SetResult{PodUID: "p", Container: "x",
					ContainerID: messages.ContainerID(fmt.Sprintf("test://%d", i)), Type: messages.Readiness,
					Result: messages.Result(round % 2)})
			}
		}
		t.Logf("50,000 Sets sent in %v", time.Since(start))

		h.prober.result("c", probes.Failure)
		for i := 0; i < 3; i++ {
			h.tick(key, time.Second) // the worker is not blocked by the stuck subscriber
		}
		id := h.rt.ContainerID(pod.UID, "c")
		h.settledResult(id, messages.Readiness, messages.Failure)

		res, err := h.sys.Root.RequestFuture(h.tree.env.cache, &cacheStats{}, 5*time.Second).Result()
		require.NoError(t, err)
		st := res.(*cacheStatsResponse)
		assert.LessOrEqual(t, st.Pending[sub.String()], st.Entries, "bounded by the number of keys")
		assert.LessOrEqual(t, st.Pending[sub.String()], keys+1)

		close(release)
		synctest.Wait()
		mu.Lock()
		require.Len(t, seen, keys+1)
		require.Equal(t, messages.Failure, seen[id])
		for i := 0; i < keys; i++ {
			require.Equal(t, messages.Success, seen[messages.ContainerID(fmt.Sprintf("test://%d", i))], "key %d: round 4", i)
		}
		t.Logf("%d batches delivered for %d changes", batches, 5*keys)
		assert.Less(t, batches, 100, "changes were coalesced")
		mu.Unlock()
	})
}
