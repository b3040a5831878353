package bench

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/probeactor/probeactor/actors/fakeruntime"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
	"github.com/probeactor/probeactor/tests/conformance"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// impl is one implementation under study.
type impl struct {
	name  string
	start func(conformance.Env) (conformance.Driver, error)
}

// impls lists the implementations; the actor core registers itself in actor_test.go.
var impls = []impl{{name: "kubelet", start: conformance.NewKubelet}}

// histogram is a lock-free fixed-bucket histogram: 10 µs buckets up to 10 s, then overflow.
type histogram struct {
	buckets [1_000_001]atomic.Int64
}

const bucketWidth = 10 * time.Microsecond

func (h *histogram) add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	i := int(d / bucketWidth)
	if i >= len(h.buckets) {
		i = len(h.buckets) - 1
	}
	h.buckets[i].Add(1)
}

// quantile returns the upper edge of the bucket holding quantile q (0 < q ≤ 1), 0 when empty.
func (h *histogram) quantile(q float64) time.Duration {
	var total int64
	for i := range h.buckets {
		total += h.buckets[i].Load()
	}
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(total)))
	var seen int64
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		if seen >= rank {
			return time.Duration(i+1) * bucketWidth
		}
	}
	return time.Duration(len(h.buckets)) * bucketWidth
}

func (h *histogram) reset() {
	for i := range h.buckets {
		h.buckets[i].Store(0)
	}
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(fmt.Sprintf("getrusage: %v", err))
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mallocs is the number of heap allocations so far.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// goStarts is the number of goroutines the process has started (runtime/metrics).
func goStarts() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// schedTracking is the runtime's sampling period of goroutine scheduling (gTrackingPeriod in Go's
// runtime/proc.go): /sched/latencies records every 8th time each goroutine is scheduled.
const schedTracking = 8

// goRuns estimates how many times goroutines have been scheduled to run after being runnable (woken
// from a channel, a timer or the network poller, or put back after a preemption): the sample count
// of the runtime's scheduling-latency histogram (runtime/metrics) times its sampling period. A
// wake-up of a parked goroutine is what a sparse schedule costs (ARCHITECTURE.md, "Where the CPU
// goes"), and this counts them without the CPU noise of a shared machine.
func goRuns() uint64 {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	var n uint64
	for _, c := range s[0].Value.Float64Histogram().Counts {
		n += c
	}
	return n * schedTracking
}

// memUse is heap alloc and goroutine stacks in use after a full GC.
type memUse struct{ heap, stack float64 }

func memInUse() memUse {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memUse{heap: float64(ms.HeapAlloc), stack: float64(ms.StackInuse)}
}

// Fixtures: worker i is pod "p<i>" with one container "c" whose container ID is "test://<i>".

func workerID(i int) messages.ContainerID { return messages.ContainerID("test://" + strconv.Itoa(i)) }

// workerIndex parses the container ID back; -1 if it is not a fixture ID.
func workerIndex(id string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "test://"))
	if err != nil {
		return -1
	}
	return n
}

func probeSpec(pt messages.ProbeType) *v1.Probe {
	return conformance.Probe(pt, func(p *v1.Probe) { p.FailureThreshold = 1 })
}

type podFixture struct {
	pod    *v1.Pod
	status v1.PodStatus
}

// pods builds n one-container pods named <prefix><base+i> whose container IDs are workerID(base+i).
func pods(n, base int, prefix string, liveness, readiness bool, startedAt time.Time) []podFixture {
	var l, r *v1.Probe
	if liveness {
		l = probeSpec(messages.Liveness)
	}
	if readiness {
		r = probeSpec(messages.Readiness)
	}
	return podsOf(n, base, prefix, l, r, startedAt)
}

// podsWith is pods with the given liveness probe.
func podsWith(n, base int, prefix string, liveness *v1.Probe) []podFixture {
	return podsOf(n, base, prefix, liveness, nil, time.Now())
}

func podsOf(n, base int, prefix string, liveness, readiness *v1.Probe, startedAt time.Time) []podFixture {
	out := make([]podFixture, n)
	for j := range out {
		i := base + j
		c := v1.Container{Name: "c", Image: "fake", LivenessProbe: liveness.DeepCopy(), ReadinessProbe: readiness.DeepCopy()}
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%d", prefix, i), Namespace: "bench", UID: types.UID(fmt.Sprintf("%s%d", prefix, i))},
			Spec:       v1.PodSpec{Containers: []v1.Container{c}, RestartPolicy: v1.RestartPolicyAlways},
		}
		out[j] = podFixture{pod: pod, status: v1.PodStatus{
			Phase: v1.PodRunning, PodIP: "10.0.0.1",
			ContainerStatuses: []v1.ContainerStatus{{
				Name: "c", ContainerID: string(workerID(i)), Image: "fake",
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}},
			}},
		}}
	}
	return out
}

// noopProber answers instantly; each call goes through observe first.
type noopProber struct {
	observe func(t probes.Target, now time.Time) probes.Result
}

func (p *noopProber) Probe(_ context.Context, _ *v1.Probe, t probes.Target) (probes.Outcome, error) {
	return probes.Outcome{Result: p.observe(t, time.Now())}, nil
}

// newRuntime is the shared fake runtime (no kills happen in these benchmarks; the harness pushes the
// pre-built statuses itself, so the runtime's own copies do not count as the implementation's memory).
func newRuntime() *fakeruntime.Runtime { return fakeruntime.New(clock.Real()) }

// waitFor polls cond every millisecond until it holds or timeout passes (benchmarks only).
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}
