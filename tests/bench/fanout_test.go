package bench

import (
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
	"github.com/probeactor/probeactor/tests/conformance"
	v1 "k8s.io/api/core/v1"
)

const (
	fanoutWorkers   = 10000
	subscriberDelay = 100 * time.Microsecond // per change: the slow subscriber
	fanoutWindow    = 10 * time.Second       // measured: flip, then every worker keeps probing
	fanoutDrain     = 60 * time.Second       // then at most this long for the subscriber to catch up
)

// fanoutProbe is the shared state of the fan-out benchmark: the prober side (flip, per-worker probe
// times) and the subscriber side (what it saw, when).
type fanoutProbe struct {
	failing    atomic.Bool
	flipAt     []atomic.Int64 // unix ns the worker's first failing probe returned
	lastAt     []atomic.Int64 // unix ns of the worker's previous probe
	stalled    atomic.Int64   // Σ ns a worker's probe came later than 1.5 periods after its previous one (after the flip)
	seenAt     []atomic.Int64 // unix ns the subscriber first saw Failure
	lastSeen   []atomic.Int64 // last result the subscriber saw, as messages.Result+10 (0 = none)
	okSeen     atomic.Int64   // workers whose Success the subscriber has seen
	failedSeen atomic.Int64   // workers whose Failure the subscriber has seen after the flip
	subBusy    atomic.Int64   // ns the subscriber spent per change in total (its slowness, as achieved)
	subCalls   atomic.Int64
	sendWait   atomic.Int64 // ns workers spent inside a blocking send (kubelet only)
}

func (f *fanoutProbe) observe(t probes.Target, now time.Time) probes.Result {
	i := workerIndex(t.ContainerID)
	if i < 0 || i >= len(f.flipAt) {
		return probes.Success
	}
	ns := now.UnixNano()
	prev := f.lastAt[i].Swap(ns)
	if !f.failing.Load() {
		return probes.Success
	}
	if prev != 0 && f.flipAt[i].Load() != 0 {
		if gap := time.Duration(ns - prev); gap > loopPeriod*3/2 {
			f.stalled.Add(int64(gap - loopPeriod))
		}
	}
	// The result is set right after this returns (failureThreshold 1): close enough to "set".
	f.flipAt[i].CompareAndSwap(0, time.Now().UnixNano())
	return probes.Failure
}

func (f *fanoutProbe) onChange(c conformance.Change) {
	start := time.Now()
	time.Sleep(subscriberDelay)
	f.subBusy.Add(int64(time.Since(start)))
	f.subCalls.Add(1)
	if c.Type != messages.Readiness {
		return
	}
	i := workerIndex(string(c.ContainerID))
	if i < 0 || i >= len(f.seenAt) {
		return
	}
	prev := f.lastSeen[i].Swap(int64(c.Result) + 10)
	switch c.Result {
	case messages.Success:
		if prev != int64(messages.Success)+10 {
			f.okSeen.Add(1)
		}
	case messages.Failure:
		if f.failing.Load() && f.seenAt[i].CompareAndSwap(0, time.Now().UnixNano()) {
			f.failedSeen.Add(1)
		}
	default:
	}
}

func BenchmarkFanout(b *testing.B) {
	for _, im := range impls {
		b.Run(fmt.Sprintf("impl=%s/workers=%d", im.name, fanoutWorkers), func(b *testing.B) {
			benchFanout(b, im, fanoutWorkers)
		})
	}
}

func benchFanout(b *testing.B, im impl, n int) {
	f := &fanoutProbe{
		flipAt: make([]atomic.Int64, n), lastAt: make([]atomic.Int64, n),
		seenAt: make([]atomic.Int64, n), lastSeen: make([]atomic.Int64, n),
	}
	d, err := im.start(conformance.Env{
		Prober:   (&noopProber{observe: f.observe}).Probe,
		Runtime:  newRuntime(),
		OnChange: f.onChange,
		OnBlocked: func(w time.Duration) {
			f.sendWait.Add(int64(w))
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Stop()
	fixtures := pods(n, 0, "f", false, true, time.Now())
	for _, p := range fixtures {
		if err := d.AddPod(p.pod); err != nil {
			b.Fatal(err)
		}
		d.SetPodStatus(p.pod, p.status)
	}
	if !waitFor(30*time.Second, func() bool { return f.okSeen.Load() == int64(n) }) {
		b.Fatalf("subscriber saw %d of %d workers ready", f.okSeen.Load(), n)
	}
	f.sendWait.Store(0)

	b.ResetTimer()
	f.failing.Store(true)
	statusLat := watchStatus(d, fixtures, f, fanoutWindow)
	b.StopTimer()
	// The window is over: give a slow subscriber time to catch up before judging what it lost.
	waitFor(fanoutDrain, func() bool { return f.failedSeen.Load() == int64(n) })

	var lat []time.Duration
	lost := 0
	for i := 0; i < n; i++ {
		if f.lastSeen[i].Load() != int64(messages.Failure)+10 {
			lost++
		}
		if s, fl := f.seenAt[i].Load(), f.flipAt[i].Load(); s != 0 && fl != 0 {
			lat = append(lat, time.Duration(s-fl))
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p99 := time.Duration(0)
	if len(lat) > 0 {
		p99 = lat[(len(lat)*99+99)/100-1]
	}
	b.ReportMetric(float64(p99.Microseconds()), "update-p99-us")
	b.ReportMetric(float64(time.Duration(f.stalled.Load()).Milliseconds()), "blocked-ms")
	b.ReportMetric(float64(time.Duration(f.sendWait.Load()).Milliseconds()), "send-blocked-ms")
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(float64(statusLat.Microseconds())/1000, "status-p99-ms")
	if calls := f.subCalls.Load(); calls > 0 {
		b.ReportMetric(float64(time.Duration(f.subBusy.Load()/calls).Microseconds()), "subscriber-us/change")
	}
}

// statusSample is how many pods watchStatus follows (every n/statusSample-th one).
const statusSample = 200

// watchStatus polls the probe-adjusted status of a sample of pods for window and returns the p99 of
// "failing probe returned → the pod's Ready condition is False" over the sample (window if a sampled
// pod never got there). In the kubelet design the status manager is fed by the same (slow) consumer;
// in the actor design statusManager is a subscriber of its own.
func watchStatus(d conformance.Driver, fixtures []podFixture, f *fanoutProbe, window time.Duration) time.Duration {
	step := max(len(fixtures)/statusSample, 1)
	seen := make(map[int]time.Duration)
	deadline := time.Now().Add(window)
	for time.Now().Before(deadline) {
		for i := 0; i < len(fixtures); i += step {
			if _, ok := seen[i]; ok {
				continue
			}
			fl := f.flipAt[i].Load()
			if fl == 0 {
				continue
			}
			st, ok := d.PodStatus(fixtures[i].pod.UID)
			if ok && podNotReady(st) {
				seen[i] = time.Duration(time.Now().UnixNano() - fl)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	var lat []time.Duration
	for i := 0; i < len(fixtures); i += step {
		if l, ok := seen[i]; ok {
			lat = append(lat, l)
		} else {
			lat = append(lat, window)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[(len(lat)*99+99)/100-1]
}

func podNotReady(st v1.PodStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionFalse
		}
	}
	return false
}
