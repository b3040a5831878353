package actors

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// TestManyWorkers starts scaleWorkers workers (100,000 without -race: 10,000 pods × 10 containers
// with a readiness probe), waits until they are at rest, reports memory per worker, checks that
// no goroutine is left per worker, and stops the tree cleanly (goleak in TestMain).
func TestManyWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("scale test")
	}
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

	start := time.Now()
	for _, pod := range all {
		h.tree.AddPod(pod)
	}
	require.Eventually(t, func() bool { return h.workerCount() == scaleWorkers }, 2*time.Minute, 10*time.Millisecond)
	// At rest: every worker published Success and statusManager has seen it (so no more readiness
	// triggers), every attempt finished: no goroutine per worker and exactly one scheduler entry each.
	require.Eventually(t, func() bool {
		if h.cacheStats().Successes != scaleWorkers {
			return false
		}
		h.sync()
		return runtime.NumGoroutine() < baseG+20 && h.tree.env.sched.Len() == scaleWorkers
	}, 2*time.Minute, 10*time.Millisecond)
	started := time.Since(start)

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	podsBytes := int64(withPods.HeapInuse) - int64(before.HeapInuse)
	workersBytes := int64(after.HeapInuse) - int64(withPods.HeapInuse)
	t.Logf("%d workers started in %v; pods+statuses (runtime, statusManager, probeManager copies): %.1f MiB; "+
		"then AddPod+workers+results: %.1f MiB = %d B per worker; goroutines %d (baseline %d); scheduler entries %d",
		scaleWorkers, started.Round(time.Millisecond), float64(podsBytes)/(1<<20), float64(workersBytes)/(1<<20),
		workersBytes/scaleWorkers, runtime.NumGoroutine(), baseG, h.tree.env.sched.Len())

	stop := time.Now()
	require.NoError(t, h.tree.Stop())
	t.Logf("stopped in %v", time.Since(stop).Round(time.Millisecond))
}

func (h *harness) cacheStats() *cacheStatsResponse {
	res, err := h.sys.Root.RequestFuture(h.tree.env.cache, &cacheStats{}, 5*time.Second).Result()
	require.NoError(h.t, err)
	return res.(*cacheStatsResponse)
}
