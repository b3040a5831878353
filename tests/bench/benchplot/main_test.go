package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
)

const sample = `goos: linux
BenchmarkProbeLoop/impl=kubelet/workers=1000-2   	       1	5001372886 ns/op	      6498 B/worker	     15023 cpu-ns/probe
BenchmarkProbeLoop/impl=kubelet/workers=10000-2  	       1	5001372886 ns/op	      6400 B/worker	      8000 cpu-ns/probe
BenchmarkProbeLoop/impl=actor/workers=10000-2    	       1	5000783359 ns/op	      2300 B/worker	      7000 cpu-ns/probe
BenchmarkProbeLoop/impl=actor/workers=1000-2     	       1	5000783359 ns/op	      4000 B/worker	     14000 cpu-ns/probe
BenchmarkChurn/impl=actor-2                      	       1	  98070705 ns/op	         0 leaked-goroutines	     98071 ns/pod
BenchmarkProbeLoopHTTP/impl=bare/workers=500-2   	       1	5001105224 ns/op	     11079 B/worker	    140000 cpu-ns/probe
BenchmarkProbeLoopHTTP/impl=actor/workers=500-2  	       1	5001105224 ns/op	     11079 B/worker	    150000 cpu-ns/probe
BenchmarkProbeLoopHTTP/impl=kubelet/workers=500-2	       1	5001105224 ns/op	     11079 B/worker	    160000 cpu-ns/probe
PASS
`

func TestParse(t *testing.T) {
	rs, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	require.Len(t, rs, 8)
	assert.Equal(t, result{bench: "Churn", impl: "actor", procs: 2, metrics: map[string]float64{"ns/op": 98070705,
		"leaked-goroutines": 0, "ns/pod": 98071}}, rs[4])
	s, err := charts[0].series(rs)
	require.NoError(t, err)
	assert.Equal(t, []float64{1000, 10000}, []float64{s["actor"][0].X, s["actor"][1].X}, "sorted by workers")
	assert.InDelta(t, 14.0, s["actor"][0].Y, 1e-9, "µs")

	_, err = parse(strings.NewReader("PASS\n"))
	assert.ErrorContains(t, err, "no benchmark results")
	_, err = parse(strings.NewReader("BenchmarkProbeLoop/impl=actor/workers=1-2 1 x ns/op\n"))
	assert.ErrorContains(t, err, `metric "ns/op"`)
}

func TestRunWritesEveryChart(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bench.txt")
	require.NoError(t, os.WriteFile(in, []byte(sample), 0o644))
	require.NoError(t, run(in, dir))
	for _, c := range charts {
		st, err := os.Stat(filepath.Join(dir, c.file))
		require.NoError(t, err, c.file)
		assert.Positive(t, st.Size())
	}
	// A run without the HTTP benchmark cannot draw its chart, and says which results are missing.
	require.NoError(t, os.WriteFile(in, []byte(strings.Split(sample, "BenchmarkProbeLoopHTTP")[0]), 0o644))
	assert.ErrorContains(t, run(in, dir), "no ProbeLoopHTTP cpu-ns/probe results for impl=actor")
}

const scalingSample = `BenchmarkProbeLoop/impl=kubelet/workers=100000-2   1 1 ns/op 100000 probes/s 6000 cpu-ns/probe 1.2 lateness-p99-ms
BenchmarkProbeLoop/impl=actor/workers=100000-2     1 1 ns/op 100000 probes/s 3000 cpu-ns/probe 2.5 lateness-p99-ms
BenchmarkProbeLoop/impl=kubelet/workers=100000-16  1 1 ns/op 100000 probes/s 8000 cpu-ns/probe 2.2 lateness-p99-ms
BenchmarkProbeLoop/impl=actor/workers=100000-16    1 1 ns/op 100000 probes/s 3500 cpu-ns/probe 2.0 lateness-p99-ms
BenchmarkProbeLoop/impl=actor/workers=1000000-16   1 1 ns/op 990000 probes/s 3000 cpu-ns/probe 15 lateness-p99-ms
`

// The scaling charts plot each design and size against GOMAXPROCS (the names' -P suffix), and a run
// at one GOMAXPROCS only is refused with what to do.
func TestScalingCharts(t *testing.T) {
	rs, err := parse(strings.NewReader(scalingSample))
	require.NoError(t, err)
	s, keys, err := scalingCharts[1].series(rs)
	require.NoError(t, err)
	assert.Equal(t, []string{"actor core 100000", "actor core 1000000", "kubelet-style 100000"}, keys)
	assert.Equal(t, []float64{2, 16}, []float64{s["actor core 100000"][0].X, s["actor core 100000"][1].X})
	assert.InDelta(t, 3.5, s["actor core 100000"][1].Y, 1e-9, "µs")
	x := procsAxis(s)
	assert.Equal(t, plot.ConstantTicks{{Value: 2, Label: "2"}, {Value: 16, Label: "16"}}, x.ticks, "ticks at the procs measured")
	assert.Equal(t, []float64{2, 16}, []float64{x.min, x.max})

	dir := t.TempDir()
	in := filepath.Join(dir, "scaling.txt")
	require.NoError(t, os.WriteFile(in, []byte(scalingSample), 0o644))
	require.NoError(t, runScaling(in, dir))
	for _, c := range scalingCharts {
		st, err := os.Stat(filepath.Join(dir, c.file))
		require.NoError(t, err, c.file)
		assert.Positive(t, st.Size())
	}
	require.NoError(t, os.WriteFile(in, []byte(strings.Split(scalingSample, "BenchmarkProbeLoop/impl=kubelet/workers=100000-16")[0]), 0o644))
	assert.ErrorContains(t, runScaling(in, dir), "two or more GOMAXPROCS")
}
