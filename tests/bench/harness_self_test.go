package bench

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(targetEnv) != "" {
		serveTarget() // the HTTP probe target of BenchmarkProbeLoopHTTP, in its own process
		return
	}
	goleak.VerifyTestMain(m)
}

// The harness's own arithmetic; cheap, so `make test` runs it.

func TestHistogramQuantile(t *testing.T) {
	h := new(histogram)
	assert.Zero(t, h.quantile(0.99))
	for i := 1; i <= 100; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	assert.Equal(t, 99*time.Millisecond+bucketWidth, h.quantile(0.99))
	assert.Equal(t, 50*time.Millisecond+bucketWidth, h.quantile(0.5))
	h.add(time.Hour) // overflow bucket
	h.add(-time.Second)
	assert.Equal(t, 100*time.Millisecond+bucketWidth, h.quantile(0.99))
	h.reset()
	assert.Zero(t, h.quantile(0.5))
}

func TestWorkerIDRoundTrip(t *testing.T) {
	assert.Equal(t, 4711, workerIndex(string(workerID(4711))))
	assert.Equal(t, -1, workerIndex("docker://abc"))
}

func TestInOrder(t *testing.T) {
	g := newLatencyGrid(1000)
	assert.Zero(t, g.inOrder(), "nobody has probed")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for i := range 1000 { // in creation order, 100 µs apart: each next one within 1 ms
		g.first[i].Store(base + int64(i)*int64(100*time.Microsecond))
	}
	assert.InDelta(t, 1.0, g.inOrder(), 1e-9)
	for i := range 1000 { // 7 ms apart modulo the period: never within 1 ms of the one before
		g.first[i].Store(base + int64(i)*int64(7*time.Millisecond))
	}
	assert.Zero(t, g.inOrder())
	g.first[1].Store(g.first[0].Load() + int64(loopPeriod) + int64(500*time.Microsecond)) // a period later counts
	assert.InDelta(t, 1.0/999, g.inOrder(), 1e-9)
}

// goStarts counts goroutines as they start (the runtime metric exists in this Go: a missing one
// would read 0 and fail here, not silently report 0 per probe).
func TestGoStartsCounts(t *testing.T) {
	before := goStarts()
	done := make(chan struct{})
	for range 10 {
		go func() { done <- struct{}{} }()
	}
	for range 10 {
		<-done
	}
	assert.GreaterOrEqual(t, goStarts()-before, uint64(10))
}

// goRuns estimates goroutine schedulings from the runtime's sampled histogram: a ping-pong of
// 16,000 round trips schedules each of its two goroutines once per trip, ~32,000 in all; the
// estimate must land near that (the sampling is every 8th scheduling of each goroutine, so it is
// close, not exact, and the rest of the test binary adds a few).
func TestGoRunsCounts(t *testing.T) {
	const trips = 16000
	ping, pong := make(chan struct{}), make(chan struct{})
	go func() {
		for range ping {
			pong <- struct{}{}
		}
	}()
	before := goRuns()
	for range trips {
		ping <- struct{}{}
		<-pong
	}
	runs := goRuns() - before
	close(ping)
	assert.GreaterOrEqual(t, runs, uint64(trips), "at least one scheduling per trip")
	assert.LessOrEqual(t, runs, uint64(3*trips), "about two per trip")
	t.Logf("%d round trips: %d schedulings estimated", trips, runs)
}
