package statuspage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cmd/node/internal/proc"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// scripted answers every call with the same outcome and error.
type scripted struct {
	out probes.Outcome
	err error
}

func (s scripted) Probe(context.Context, *v1.Probe, probes.Target) (probes.Outcome, error) {
	return s.out, s.err
}

func testPod(uid types.UID) (*v1.Pod, v1.PodStatus) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: uid}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "side", StartupProbe: &v1.Probe{}}},
		Containers: []v1.Container{{Name: "app",
			LivenessProbe: &v1.Probe{}, ReadinessProbe: &v1.Probe{}, StartupProbe: &v1.Probe{}}},
	}}
	st := v1.PodStatus{
		InitContainerStatuses: []v1.ContainerStatus{{Name: "side", ContainerID: "proc://" + string(uid) + "-side"}},
		ContainerStatuses:     []v1.ContainerStatus{{Name: "app", ContainerID: "proc://" + string(uid) + "-app"}},
	}
	return pod, st
}

func TestAttemptOf(t *testing.T) {
	boom := errors.New("dial tcp: too many open files")
	for _, tc := range []struct {
		name string
		out  probes.Outcome
		err  error
		want Attempt
	}{
		{"success drops its output", probes.Outcome{Result: probes.Success, Output: "ok body"}, nil, Attempt{At: t0, Outcome: Success}},
		{"warning", probes.Outcome{Result: probes.Warning, Output: "redirect"}, nil, Attempt{At: t0, Outcome: Warning, Message: "redirect"}},
		{"failure", probes.Outcome{Result: probes.Failure, Output: "HTTP probe failed with statuscode: 500"}, nil, Attempt{At: t0, Outcome: Failure, Message: "HTTP probe failed with statuscode: 500"}},
		{"unknown", probes.Outcome{Result: probes.Unknown}, nil, Attempt{At: t0, Outcome: Unknown}},
		{"an error wins over the outcome", probes.Outcome{Result: probes.Failure, Output: "x"}, boom, Attempt{At: t0, Outcome: Error, Message: boom.Error()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, attemptOf(tc.out, tc.err, t0))
		})
	}
}

func TestRecordingProberAttributesByProbeIdentity(t *testing.T) {
	r := NewRecorder(func() time.Time { return t0 })
	pod, st := testPod("u1")
	r.Observe(pod, st)
	app, side := &pod.Spec.Containers[0], &pod.Spec.InitContainers[0]
	fail := probes.Outcome{Result: probes.Failure, Output: "connection refused"}
	p := r.Prober(scripted{out: fail})

	for _, tc := range []struct {
		name string
		spec *v1.Probe
		c    *v1.Container
		id   string
		want *Key // nil: not attributed
	}{
		{"liveness", app.LivenessProbe, app, "proc://u1-app", &Key{"u1", "app", messages.Liveness}},
		{"readiness", app.ReadinessProbe, app, "proc://u1-app", &Key{"u1", "app", messages.Readiness}},
		{"startup", app.StartupProbe, app, "proc://u1-app", &Key{"u1", "app", messages.Startup}},
		{"a sidecar's startup", side.StartupProbe, side, "proc://u1-side", &Key{"u1", "side", messages.Startup}},
		{"an equal probe that is not the container's", &v1.Probe{}, app, "proc://u1-app", nil},
		{"no container", app.LivenessProbe, nil, "proc://u1-app", nil},
		{"an unknown container ID", app.LivenessProbe, app, "proc://other", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := r.Stats()
			out, err := p.Probe(context.Background(), tc.spec, probes.Target{Container: tc.c, ContainerID: tc.id})
			require.NoError(t, err)
			assert.Equal(t, fail, out, "the wrapper changes nothing the tree sees")
			if tc.want == nil {
				assert.Equal(t, before.Unattributed+1, r.Stats().Unattributed)
				assert.Equal(t, before.Probes, r.Stats().Probes)
				return
			}
			h, ok := r.Probe(*tc.want)
			require.True(t, ok)
			assert.Equal(t, Attempt{At: t0, Outcome: Failure, Message: "connection refused"}, h.Last())
		})
	}
}

func TestRecordingProberPassesErrorsAndSkipsAbandonedAttempts(t *testing.T) {
	r := NewRecorder(func() time.Time { return t0 })
	pod, st := testPod("u1")
	r.Observe(pod, st)
	app := &pod.Spec.Containers[0]
	target := probes.Target{Container: app, ContainerID: "proc://u1-app"}
	boom := errors.New("boom")

	out, err := r.Prober(scripted{out: probes.Outcome{Result: probes.Unknown}, err: boom}).Probe(context.Background(), app.LivenessProbe, target)
	assert.Equal(t, boom, err)
	assert.Equal(t, probes.Unknown, out.Result)
	h, _ := r.Probe(Key{"u1", "app", messages.Liveness})
	assert.Equal(t, Error, h.Last().Outcome)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = r.Prober(scripted{err: context.Canceled}).Probe(ctx, app.LivenessProbe, target)
	assert.ErrorIs(t, err, context.Canceled)
	h, _ = r.Probe(Key{"u1", "app", messages.Liveness})
	assert.Len(t, h.Recent, 1, "an attempt the tree abandoned (its ctx ended) is not recorded")
}

// PodEvent, subscribed to the runtime, keeps what Observe and Forget would: a status's container
// IDs attribute attempts, a removed pod leaves nothing behind, a started pod changes nothing.
func TestRecorderFollowsPodEvents(t *testing.T) {
	r := NewRecorder(func() time.Time { return t0 })
	pod, st := testPod("u1")
	app := &pod.Spec.Containers[0]
	probe := func() {
		_, err := r.Prober(scripted{out: probes.Outcome{Result: probes.Success}}).Probe(context.Background(),
			app.ReadinessProbe, probes.Target{Container: app, ContainerID: "proc://u1-app"})
		require.NoError(t, err)
	}
	key := Key{"u1", "app", messages.Readiness}

	r.PodEvent(proc.PodEvent{Kind: proc.PodStarted, Pod: pod})
	probe()
	assert.Equal(t, Stats{Unattributed: 1}, r.Stats(), "started: no container ID known yet")

	r.PodEvent(proc.PodEvent{Kind: proc.PodStatusChanged, Pod: pod, Status: st})
	probe()
	h, ok := r.Probe(key)
	require.True(t, ok, "a status's container IDs attribute the attempts that follow")
	assert.Equal(t, []Attempt{{At: t0, Outcome: Success}}, h.Recent)

	r.PodEvent(proc.PodEvent{Kind: 0, Pod: pod}) // an unknown kind changes nothing
	_, ok = r.Probe(key)
	assert.True(t, ok)

	r.PodEvent(proc.PodEvent{Kind: proc.PodRemoved, Pod: pod})
	_, ok = r.Probe(key)
	assert.False(t, ok, "removed: the pod's attempts are forgotten")
	assert.Equal(t, Stats{Unattributed: 1}, r.Stats(), "nothing of the removed pod is kept")
}

// TestRecorderIsSafeForConcurrentUse runs attempts, status reports, removals and page reads at
// once (go test -race is the assertion), then checks nothing of the removed pods is left.
func TestRecorderIsSafeForConcurrentUse(t *testing.T) {
	r := NewRecorder(time.Now)
	p := r.Prober(scripted{out: probes.Outcome{Result: probes.Success}})
	const pods, rounds = 8, 200
	var wg sync.WaitGroup
	for i := range pods {
		uid := types.UID(fmt.Sprint("u", i))
		pod, st := testPod(uid)
		r.Observe(pod, st)
		app := &pod.Spec.Containers[0]
		wg.Add(3)
		go func() { // attempts
			defer wg.Done()
			for range rounds {
				for _, typ := range messages.ProbeTypes {
					_, _ = p.Probe(context.Background(), typ.Spec(app), probes.Target{Container: app, ContainerID: "proc://" + string(uid) + "-app"})
				}
			}
		}()
		go func() { // status reports
			defer wg.Done()
			for range rounds {
				r.Observe(pod, st)
			}
		}()
		go func() { // the page
			defer wg.Done()
			for range rounds {
				h, _ := r.Probe(Key{uid, "app", messages.Readiness})
				assert.LessOrEqual(t, len(h.Recent), Depth)
				_ = r.Stats()
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, pods*3, r.Stats().Probes)
	r.Retain(map[types.UID]struct{}{"u0": {}})
	r.Forget("u0")
	st := r.Stats()
	assert.Equal(t, Stats{Unattributed: st.Unattributed}, st, "nothing left of removed pods")
}

// BenchmarkProber is what recording costs a probe attempt: the same scripted prober called bare
// and through Recorder.Prober (compare the two in one run; the scripted prober costs nothing, so
// the difference is all the recorder's).
func BenchmarkProber(b *testing.B) {
	pod, st := testPod("u1")
	app := &pod.Spec.Containers[0]
	target := probes.Target{Container: app, ContainerID: "proc://u1-app"}
	inner := scripted{out: probes.Outcome{Result: probes.Failure, Output: "HTTP probe failed with statuscode: 500"}}
	for _, bc := range []struct {
		name string
		p    func(r *Recorder) Prober
	}{
		{"bare", func(*Recorder) Prober { return inner }},
		{"recorded", func(r *Recorder) Prober { return r.Prober(inner) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := NewRecorder(time.Now)
			r.Observe(pod, st)
			p := bc.p(r)
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = p.Probe(ctx, app.LivenessProbe, target)
				}
			})
		})
	}
}
