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

func TestPhasePeak(t *testing.T) {
	g := newLatencyGrid(1000)
	assert.Zero(t, g.phasePeak(), "nobody has probed")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for i := range 1000 { // one worker a millisecond: an even schedule
		g.first[i].Store(base + int64(i)*int64(time.Millisecond))
	}
	assert.InDelta(t, 1.0, g.phasePeak(), 1e-9)
	for i := range 500 { // half of them in the same 10 ms, a period later
		g.first[i].Store(base + int64(loopPeriod) + int64(i%10)*int64(time.Millisecond))
	}
	// the first 10 ms now hold those 500 (its own 10 among them); the mean is still 10 a bin
	assert.InDelta(t, 50.0, g.phasePeak(), 1e-9)
}
