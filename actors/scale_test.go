package actors

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/actors/internal/exec"
)

// TestManyWorkers starts scaleWorkers workers (100,000 without -race: 10,000 pods × 10 containers
// with a readiness probe), waits until they are at rest, reports memory per worker, checks that
// no goroutine is left per worker, and stops the tree cleanly (goleak in TestMain).
func TestManyWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("scale test")
	}
	inBubble(t, func(t *testing.T) {
		const perPod = 10
		pods := scaleWorkers / perPod
		h := newHarness(t)
		runtime.GC()
		var before, withPods runtime.MemStats
		runtime.ReadMemStats(&before)
		baseG := runtime.NumGoroutine()

		all := make([]*v1.Pod, pods)
		for i := range all {
			cs := make([]v1.Container, perPod)
			for j := range cs {
				cs[j] = v1.Container{Name: fmt.Sprintf("c%d", j), ReadinessProbe: execProbe(10, 3)}
			}
			all[i] = testPod(fmt.Sprintf("scale-%d", i), cs...)
			h.rt.RunPod(all[i])
		}
		h.sync()
		runtime.GC()
		runtime.ReadMemStats(&withPods)

		for _, pod := range all {
			require.NoError(t, h.tree.AddPod(pod))
		}
		// At rest: every worker published Success and statusManager has seen it (so no more readiness
		// triggers), every attempt finished: no goroutine per worker and exactly one scheduler entry each.
		synctest.Wait()
		require.Equal(t, scaleWorkers, h.workerCount())
		time.Sleep(2 * exec.AttemptIdleTimeout) // the attempt pool's idle goroutines retire (virtual time)
		synctest.Wait()
		require.Equal(t, scaleWorkers, h.cacheStats().Successes)
		require.Less(t, runtime.NumGoroutine(), baseG+20)
		require.Equal(t, scaleWorkers, h.tree.env.cfg.exec.Pending())

		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		podsBytes := int64(withPods.HeapInuse) - int64(before.HeapInuse)
		workersBytes := int64(after.HeapInuse) - int64(withPods.HeapInuse)
		t.Logf("%d workers; pods+statuses (the fake runtime's and the tree's copies): %.1f MiB; "+
			"then AddPod+workers+results: %.1f MiB = %d B per worker; goroutines %d (baseline %d); scheduler entries %d",
			scaleWorkers, float64(podsBytes)/(1<<20), float64(workersBytes)/(1<<20),
			workersBytes/scaleWorkers, runtime.NumGoroutine(), baseG, h.tree.env.cfg.exec.Pending())

		require.NoError(t, h.tree.Stop(context.Background()))
	})
}

func (h *harness) cacheStats() *cacheStatsResponse {
	res, err := h.sys.Root.RequestFuture(h.tree.env.cache, &cacheStats{}, 5*time.Second).Result()
	require.NoError(h.t, err)
	return res.(*cacheStatsResponse)
}
