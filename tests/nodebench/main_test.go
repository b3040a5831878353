package main

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/probeactor/probeactor/internal/procfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTreeCPUSplitsTheProcessItsChildrenAndWhatIsBelowThem(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	all := []procfs.ProcStat{
		{PID: 1, PPID: 0, State: 'S', CPU: time.Hour},  // init: not in the tree
		{PID: 10, PPID: 1, State: 'S', CPU: ms(5000)},  // node
		{PID: 11, PPID: 10, State: 'S', CPU: ms(100)},  // a shim
		{PID: 12, PPID: 10, State: 'R', CPU: ms(200)},  // a shim
		{PID: 13, PPID: 10, State: 'Z', CPU: ms(1000)}, // a zombie child: left out
		{PID: 21, PPID: 11, State: 'S', CPU: ms(10)},   // a container
		{PID: 22, PPID: 12, State: 'S', CPU: ms(20)},   // a container
		{PID: 31, PPID: 22, State: 'S', CPU: ms(30)},   // its child
		{PID: 32, PPID: 31, State: 'Z', CPU: ms(40)},   // a zombie below: left out
		{PID: 40, PPID: 1, State: 'S', CPU: ms(7000)},  // another tree
		{PID: 41, PPID: 40, State: 'S', CPU: ms(7000)}, // below it
	}
	got, err := treeCPU(all, 10)
	require.NoError(t, err)
	assert.Equal(t, cpuSplit{self: ms(5000), children: ms(300), below: ms(60), nChildren: 2, nBelow: 3}, got)
	_, err = treeCPU(all, 4711)
	assert.Error(t, err, "a process that is gone")
}

func TestARunIsValidOnlyAtTheDueRateWithoutFailuresOrRestarts(t *testing.T) {
	ok := Run{Prober: "node", Round: 1, Window: 30 * time.Second, Probes: 30_000, CPU: 6 * time.Second}
	assert.Empty(t, ok.Invalid(500))
	assert.InDelta(t, 200, ok.PerProbe(), 1e-9)
	assert.InDelta(t, 1000, ok.Rate(), 1e-9)
	for name, r := range map[string]Run{
		"slow":      {Prober: "node", Window: 30 * time.Second, Probes: 29_000},
		"fast":      {Prober: "node", Window: 30 * time.Second, Probes: 31_000},
		"failed":    {Prober: "bare", Window: 30 * time.Second, Probes: 30_000, Failed: 301},
		"restarted": {Prober: "node", Window: 30 * time.Second, Probes: 30_000, Restarts: 1},
	} {
		assert.NotEmpty(t, r.Invalid(500), name)
	}
	assert.Empty(t, Run{Prober: "bare", Window: 30 * time.Second, Probes: 30_800}.Invalid(500), "within 3 %")
	assert.Empty(t, Run{Prober: "bare", Window: 30 * time.Second, Probes: 30_000, Failed: 300}.Invalid(500), "1 % failed")
	assert.True(t, math.IsNaN(Run{}.PerProbe()))
}

func TestSummaryTakesMediansAndPairsEachRound(t *testing.T) {
	w := 30 * time.Second
	run := func(p string, round int, us int64) Run {
		return Run{Prober: p, Round: round, Window: w, Probes: 30_000, CPU: time.Duration(us*30_000) * time.Microsecond}
	}
	s := Summarise(500, w, []Run{run("bare", 1, 200), run("node", 1, 220), run("bare", 2, 100), run("node", 2, 300), run("bare", 3, 250), run("node", 3, 250)})
	assert.True(t, s.Valid(), s.Invalid)
	assert.Equal(t, 3, s.Rounds)
	assert.InDelta(t, 250, s.Node, 1e-9)
	assert.InDelta(t, 200, s.Bare, 1e-9)
	assert.InDelta(t, 1.25, s.Ratio, 1e-9)
	assert.InDeltaSlice(t, []float64{1.1, 3, 1}, s.PairRatios, 1e-9)
	assert.Contains(t, s.String(), "ratio=1.25 (pairs 1.10 3.00 1.00)")
	assert.True(t, strings.HasSuffix(s.String(), " valid"), s.String())
	assert.NotContains(t, s.String(), "baseline")

	withBase := Summarise(500, w, []Run{run("bare", 1, 200), run("node", 1, 220), run("baseline", 1, 240), run("bare", 2, 100), run("node", 2, 110), run("baseline", 2, 150)})
	assert.True(t, withBase.Valid(), withBase.Invalid)
	assert.InDelta(t, 195, withBase.Baseline, 1e-9)
	assert.InDeltaSlice(t, []float64{1.2, 1.5}, withBase.BaselinePairs, 1e-9)
	assert.Contains(t, withBase.String(), "baseline=195.0 µs/probe baseline-ratio=1.30 (pairs 1.20 1.50)")

	bad := Summarise(500, w, []Run{run("bare", 1, 200), {Prober: "node", Round: 1, Window: w, Probes: 10_000}})
	assert.False(t, bad.Valid())
	assert.Contains(t, bad.String(), "INVALID (round 1: node probed 333/s")
	assert.False(t, Summarise(500, w, []Run{run("bare", 1, 200)}).Valid(), "no node run")

	assert.InDelta(t, 2.5, Median([]float64{4, 1, 3, 2}), 1e-9)
	assert.True(t, math.IsNaN(Median(nil)))
}

func TestManifestIsTheWorkload(t *testing.T) {
	docs := strings.Split(string(Manifest(3, 8080, 9090)), "---\n")[1:]
	require.Len(t, docs, 3)
	for i, d := range docs {
		var pod v1.Pod
		require.NoError(t, yaml.UnmarshalStrict([]byte(d), &pod), d)
		require.Len(t, pod.Spec.Containers, 1)
		c := pod.Spec.Containers[0]
		r, l := c.ReadinessProbe, c.LivenessProbe
		require.NotNil(t, r.HTTPGet)
		require.NotNil(t, l.TCPSocket)
		assert.Equal(t, fmt.Sprintf("pod-%03d", i), pod.Name)
		assert.Equal(t, fmt.Sprintf("%s%d", ReadyPrefix, i), r.HTTPGet.Path)
		assert.Equal(t, "127.0.0.1", r.HTTPGet.Host)
		assert.Equal(t, 8080, r.HTTPGet.Port.IntValue())
		assert.Equal(t, "127.0.0.1", l.TCPSocket.Host)
		assert.Equal(t, 9090, l.TCPSocket.Port.IntValue())
		for _, p := range []*v1.Probe{r, l} {
			assert.Equal(t, int32(1), p.PeriodSeconds)
			assert.Equal(t, int32(1), p.TimeoutSeconds)
		}
	}
}

func TestProbeTotalsSumsEveryResult(t *testing.T) {
	exp := []byte(`# HELP prober_probe_total Cumulative number of a liveness, readiness or startup probe for a container by result.
# TYPE prober_probe_total counter
prober_probe_total{container="app",namespace="default",pod="pod-000",pod_uid="u0",probe_type="Liveness",result="successful"} 120
prober_probe_total{container="app",namespace="default",pod="pod-000",pod_uid="u0",probe_type="Readiness",result="failed"} 2
prober_probe_total{container="app",namespace="default",pod="pod-001",pod_uid="u1",probe_type="Readiness",result="unknown"} 1
prober_probe_duration_seconds_count{container="app"} 99
`)
	all, bad, err := ProbeTotals(exp)
	require.NoError(t, err)
	assert.InDelta(t, 123, all, 1e-9)
	assert.InDelta(t, 3, bad, 1e-9)
	_, _, err = ProbeTotals([]byte(`prober_probe_total{result="successful"} x` + "\n"))
	assert.Error(t, err)
}

// TestBareClientProbesTheTargetAtItsPeriod runs the bare client against the target in this process
// for a little over two periods: each of its probes reaches the target, and none fails.
func TestBareClientProbesTheTargetAtItsPeriod(t *testing.T) {
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tg, stopTarget := serve(hl, tl)
	defer stopTarget()

	c := newBareClient(hl.Addr().String(), tl.Addr().String())
	stop := c.run(3)
	// Every probe starts within the first period, then once per period: 3 pods × 2 probes × 2.
	require.Eventually(t, func() bool { return tg.http.Load() >= 6 && tg.tcp.Load() >= 6 }, 10*time.Second, 10*time.Millisecond)
	stop()
	assert.Zero(t, c.failed.Load())
	// A connection the client reset may be accepted a moment after the client counted it.
	assert.Eventually(t, func() bool { return tg.http.Load()+tg.tcp.Load() == c.probed.Load() }, 5*time.Second, 10*time.Millisecond,
		"every probe the client made reached the target: %d + %d of %d", tg.http.Load(), tg.tcp.Load(), c.probed.Load())
}

func TestTargetCountsReadinessRequests(t *testing.T) {
	h := &target{}
	h.tcp.Store(9)
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	assert.Equal(t, "ok", get(ReadyPrefix+"3").Body.String())
	assert.Equal(t, "ok", get(ReadyPrefix+"4").Body.String())
	assert.Equal(t, http.StatusNotFound, get("/other").Code)
	assert.Equal(t, "http=2 tcp=9\n", get(CountPath).Body.String())
}

func TestOrderAlternatesWhoGoesFirst(t *testing.T) {
	assert.Equal(t, []string{"bare", "node"}, Order(1, false))
	assert.Equal(t, []string{"node", "bare"}, Order(2, false))
	assert.Equal(t, []string{"bare", "node"}, Order(3, false))
	assert.Equal(t, []string{"bare", "node", "baseline"}, Order(1, true))
	assert.Equal(t, []string{"baseline", "node", "bare"}, Order(2, true))
	assert.Equal(t, []string{"bare", "baseline", "node"}, Order(3, true))
	assert.Equal(t, []string{"node", "baseline", "bare"}, Order(4, true))
}
