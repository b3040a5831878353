package workerset

import (
	"fmt"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/probeactor/probeactor/messages"
)

// BenchmarkAdd is probeManager's bookkeeping per worker while a tree is set up: 1,000,000 pods with
// one worker each, each pod's AddPod on an empty set (the set's map growth included, as in the tree).
func BenchmarkAdd(b *testing.B) {
	const n = 1_000_000
	ws := make([]*fakeWorker, n)
	pids := make([]*actor.PID, n)
	for i := range ws {
		ws[i] = &fakeWorker{key: key(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i), "app", messages.Liveness)}
		pids[i] = actor.NewPID("nonhost", fmt.Sprintf("probeactor1/probeManager/%08d-0000-4000-8000-000000000000.app.liveness", i))
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s := New[*fakeWorker]()
		b.StartTimer()
		for i, w := range ws {
			s.AddPod(w.key.PodUID, ws[i:i+1], func(*fakeWorker) *actor.PID { return pids[i] })
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/worker")
}
