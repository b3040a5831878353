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
