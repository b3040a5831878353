package runner

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/internal/logtest"
)

// fakeOps records starts and stops; a stop blocks until released (unless autoStop).
type fakeOps struct {
	mu       sync.Mutex
	log      []string
	failNext error
	autoStop bool
	stopping map[types.UID]chan struct{}
	stopped  chan types.UID
}

func newFakeOps() *fakeOps {
	return &fakeOps{stopping: map[types.UID]chan struct{}{}, stopped: make(chan types.UID, 16)}
}

func (f *fakeOps) StartPod(p *v1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failNext; err != nil {
		f.failNext = nil
		return err
	}
	f.log = append(f.log, "start "+p.Name)
	return nil
}

func (f *fakeOps) StopPod(p *v1.Pod) {
	f.mu.Lock()
	f.log = append(f.log, "stop "+p.Name)
	if f.autoStop {
		f.mu.Unlock()
		return
	}
	release := make(chan struct{})
	f.stopping[p.UID] = release
	f.mu.Unlock()
	<-release
	f.stopped <- p.UID
}

func (f *fakeOps) failNextStart(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext = err
}

// release lets the pod's stop finish once it has begun.
func (f *fakeOps) release(t *testing.T, uid types.UID) {
	t.Helper()
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.stopping[uid] != nil
	}, 10*time.Second, time.Millisecond)
	f.mu.Lock()
	close(f.stopping[uid])
	delete(f.stopping, uid)
	f.mu.Unlock()
}

func (f *fakeOps) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func testPod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
}

// TestClusterRunnerStartsStopsAndRestartsAfterTheStop: the sharder's PodRunner (moved from
// cmd/node's clusterRunner; close is what its Close was).
func TestClusterRunnerStartsStopsAndRestartsAfterTheStop(t *testing.T) {
	ops := newFakeOps()
	var reportsMu sync.Mutex
	var reports [][]string
	r := newPods(ops, hclog.NewNullLogger(), func(uids []string) {
		reportsMu.Lock()
		defer reportsMu.Unlock()
		reports = append(reports, uids)
	})
	a, b := testPod("a"), testPod("b")

	require.NoError(t, r.Start(a))
	require.NoError(t, r.Start(a), "a second start of a running pod does nothing")
	ops.failNextStart(errors.New("disk full"))
	require.Error(t, r.Start(b), "a failed start is reported (the sharder retries)")
	assert.Equal(t, []string{"start a"}, ops.calls())

	// Stop does not wait; the share comes back while the pod stops: it starts after the stop.
	require.NoError(t, r.Stop(a.UID, time.Second))
	require.NoError(t, r.Stop(a.UID, time.Second), "a second stop while stopping does nothing")
	require.NoError(t, r.Start(a))
	ops.release(t, a.UID)
	assert.Equal(t, a.UID, <-ops.stopped)
	require.Eventually(t, func() bool { return len(ops.calls()) == 3 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []string{"start a", "stop a", "start a"}, ops.calls())

	// Lost again before the stop finished: no start after it.
	require.NoError(t, r.Stop(a.UID, time.Second))
	require.NoError(t, r.Start(a))
	require.NoError(t, r.Stop(a.UID, time.Second), "the share went away again")
	ops.release(t, a.UID)
	<-ops.stopped

	require.NoError(t, r.Stop(b.UID, time.Second), "stopping a pod never started does nothing")
	require.NoError(t, r.Start(b))
	require.NoError(t, r.Stop(b.UID, time.Second))
	done := make(chan struct{})
	go func() { <-r.close(); close(done) }() // ends when b's stop finished
	ops.release(t, b.UID)
	<-done
	r.stops.Wait()
	assert.ErrorIs(t, r.Start(a), errRunnerClosed, "no start after Close")
	assert.Equal(t, []string{"start a", "stop a", "start a", "stop a", "start b", "stop b"}, ops.calls())
	reportsMu.Lock()
	defer reportsMu.Unlock()
	assert.Equal(t, [][]string{{"uid-a"}, nil, {"uid-a"}, nil, {"uid-b"}, nil}, reports,
		"the membership hears every stop as it begins (before the sharder acknowledges the view) and as it ends")
}

// TestAStartAgainThatFailsIsLogged: when the start after a stop fails, the pod stays stopped
// here and the failure is logged (the sharder was told the pod runs: it retries on its next
// change, as for any failed start).
func TestAStartAgainThatFailsIsLogged(t *testing.T) {
	ops := newFakeOps()
	log, logs := logtest.Capture(t)
	r := newPods(ops, log, nil)
	a := testPod("a")
	require.NoError(t, r.Start(a))
	require.NoError(t, r.Stop(a.UID, time.Second))
	require.NoError(t, r.Start(a))
	ops.failNextStart(errors.New("disk full"))
	ops.release(t, a.UID)
	<-ops.stopped
	require.Eventually(t, func() bool { return r.inProgress() == 0 }, 10*time.Second, time.Millisecond, "the stop finished (and the start again failed)")
	<-r.close()
	r.stops.Wait()
	assert.Equal(t, []string{"start a", "stop a"}, ops.calls())
	assert.Contains(t, logs.String(), "could not start a pod again after its stop; it stays stopped here")
	assert.Contains(t, logs.String(), "disk full")
}

// TestCloseStopsWhatTheSharderDidNotRelease: a pod still running at close (its release failed)
// is stopped by the runner itself, and close's channel waits for that stop too.
func TestCloseStopsWhatTheSharderDidNotRelease(t *testing.T) {
	ops := newFakeOps()
	log, logs := logtest.Capture(t)
	r := newPods(ops, log, nil)
	a := testPod("a")
	require.NoError(t, r.Start(a))
	drained := r.close()
	assert.Contains(t, logs.String(), "stopping pods the sharder did not release: pods=1")
	select {
	case <-drained:
		t.Fatal("drained while a still stops")
	default:
	}
	ops.release(t, a.UID)
	<-ops.stopped
	<-drained
	r.stops.Wait()
	assert.Equal(t, []string{"start a", "stop a"}, ops.calls())
}
