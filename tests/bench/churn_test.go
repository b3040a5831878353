package bench

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
	"github.com/probeactor/probeactor/tests/conformance"
)

const churnPods = 1000

func BenchmarkChurn(b *testing.B) {
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) { benchChurn(b, im) })
	}
}

func benchChurn(b *testing.B, im impl) {
	goroutinesBefore := runtime.NumGoroutine()
	d, err := im.start(conformance.Env{
		Prober:  (&noopProber{observe: func(probes.Target, time.Time) probes.Result { return probes.Success }}).Probe,
		Runtime: newRuntime(),
	})
	if err != nil {
		b.Fatal(err)
	}
	// Every round uses fresh pod UIDs and container IDs, so a worker of the previous round that is
	// still exiting never collides with a new one (kubelet's AddPod would skip the pod).
	round := 0
	churn := func() {
		b.StopTimer()
		fixtures := pods(churnPods, round*churnPods, fmt.Sprintf("r%d-", round), true, true, time.Now())
		lastID := workerID(round*churnPods + churnPods - 1)
		round++
		b.StartTimer()
		for _, f := range fixtures {
			if err := d.AddPod(f.pod); err != nil {
				b.Fatal(err)
			}
			d.SetPodStatus(f.pod, f.status)
		}
		// Sync point: the last pod's readiness worker has probed (Success replaced the initial Failure).
		if !waitFor(10*time.Second, func() bool { r, ok := d.Result(lastID, messages.Readiness); return ok && r == messages.Success }) {
			b.Fatalf("round %d: the last pod never became ready", round)
		}
		for _, f := range fixtures {
			d.RemovePod(f.pod)
		}
		// Sync point: every worker of the last pod is gone (its results were removed on exit).
		if !waitFor(10*time.Second, func() bool {
			_, okL := d.Result(lastID, messages.Liveness)
			_, okR := d.Result(lastID, messages.Readiness)
			return !okL && !okR
		}) {
			b.Fatalf("round %d: the last pod's workers never stopped", round)
		}
	}
	churn() // warm-up round, not measured: the first round pays for cold caches and map growth
	b.ResetTimer()
	for range b.N {
		churn()
	}
	b.StopTimer()
	d.Stop()
	leaked := 0
	waitFor(2*time.Second, func() bool {
		leaked = runtime.NumGoroutine() - goroutinesBefore
		return leaked <= 0
	})
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*churnPods), "ns/pod")
	b.ReportMetric(float64(max(leaked, 0)), "leaked-goroutines")
	if leaked > 0 {
		b.Logf("%d goroutines still running after Stop", leaked)
	}
}
