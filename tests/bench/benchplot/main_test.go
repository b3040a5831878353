package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.Equal(t, result{bench: "Churn", impl: "actor", metrics: map[string]float64{"ns/op": 98070705,
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
