package kubeletstyle

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The behaviour is covered by tests/conformance; these tests pin what only the baseline has.

func TestResultsManagerDedupAndBackPressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		quit := make(chan struct{})
		m := newResultsManager(quit, nil)
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
		m.Set("a", messages.Success, pod)
		m.Set("a", messages.Success, pod) // unchanged: no update
		require.Len(t, m.updates, 1)
		m.Remove("a") // no update
		_, ok := m.Get("a")
		assert.False(t, ok)
		for i := 1; i < updatesBuffer; i++ {
			m.Set(messages.ContainerID(rune('a'+i)), messages.Failure, pod)
		}
		require.Len(t, m.updates, updatesBuffer)
		done := make(chan struct{})
		go func() { m.Set("last", messages.Failure, pod); close(done) }()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("the 21st Set did not block")
		default:
		}
		close(quit) // Stop releases a worker blocked on a full channel
		<-done
	})
}

type fakeProber struct{}

func (fakeProber) Probe(context.Context, *v1.Probe, probes.Target) (probes.Outcome, error) {
	return probes.Outcome{Result: probes.Success}, nil
}

type fakeRuntime struct{}

func (fakeRuntime) KillContainer(context.Context, messages.KillContainer) error { return nil }

func TestStartRequiresProberAndRuntime(t *testing.T) {
	_, err := Start(Options{Runtime: fakeRuntime{}})
	assert.ErrorContains(t, err, "Prober")
	_, err = Start(Options{Prober: fakeProber{}})
	assert.ErrorContains(t, err, "Runtime")
}

func TestStopEndsEveryWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, err := Start(Options{Prober: fakeProber{}, Runtime: fakeRuntime{}, Rand: func() float64 { return 0 }})
		require.NoError(t, err)
		now := time.Now()
		for i := 0; i < 50; i++ {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(fmt.Sprint("u", i))},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", ReadinessProbe: &v1.Probe{PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}}}}}
			k.AddPod(pod)
			k.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{
				Name: "c", ContainerID: "test://" + string(pod.UID),
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}}}})
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Equal(t, 50, k.WorkerCount())
		k.Stop()
		assert.Equal(t, 0, k.WorkerCount())
	})
}
