package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"testing/synctest"

	"github.com/probeactor/probeactor/actors/internal/exec"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// Far more workers than pool goroutines, each with an attempt that blocks until cancelled: within
// exec.BacklogWait every attempt is in flight (attempts beyond the spare goroutines wait in the backlog
// at most that long), the workers still answer, and the tree stops (each stopping worker waits for
// its attempt).
func TestBlockedAttemptsDoNotStarveWorkers(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		const pods = 50
		var keys []messages.ProbeKey
		for i := range pods {
			name := fmt.Sprintf("c%d", i)
			h.prober.set(name, func(ctx context.Context) (probes.Outcome, error) {
				<-ctx.Done()
				return probes.Outcome{Result: probes.Unknown}, ctx.Err()
			})
			pod := testPod(fmt.Sprintf("slow-%d", i), v1.Container{Name: name, ReadinessProbe: execProbe(1, 1)})
			h.run(pod)
			keys = append(keys, messages.ProbeKey{PodUID: pod.UID, Container: name, Type: messages.Readiness})
		}
		synctest.Wait()
		for _, k := range keys {
			require.True(t, h.inspect(k).Busy)
		}
		time.Sleep(exec.BacklogWait) // virtual time: the backlog's rescue
		synctest.Wait()
		assert.Equal(t, pods, countAll(h.prober, pods), "one attempt per worker, all in flight at once")
	})
}

func countAll(p *scriptProber, n int) int {
	total := 0
	for i := range n {
		total += p.count(fmt.Sprintf("c%d", i))
	}
	return total
}
