// Command benchplot draws the architecture study's plots from one `make bench` run's output (Go
// benchmark format): CPU per probe and bytes per worker against the number of workers for both
// designs (BenchmarkProbeLoop), and CPU per probe of real HTTP probes with the bare net/http floor
// (BenchmarkProbeLoopHTTP). With -scaling it draws, from a run of BenchmarkProbeLoop at several
// GOMAXPROCS (-test.cpu 2,4,8,16; make bench-scaling), probes/s, CPU per probe and lateness p99
// against procs, one line per design and number of workers.
//
//	go run ./tests/bench/benchplot -in docs/bench/bench.txt -out docs/bench
//	go run ./tests/bench/benchplot -scaling -in docs/bench/scaling.txt -out docs/bench
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

func main() {
	in := flag.String("in", "docs/bench/bench.txt", "benchmark output of one make bench run")
	out := flag.String("out", "docs/bench", "directory the PNG files are written to")
	scaling := flag.Bool("scaling", false, "draw the scaling charts (ProbeLoop against GOMAXPROCS) instead")
	flag.Parse()
	draw := run
	if *scaling {
		draw = runScaling
	}
	if err := draw(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "benchplot:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	return drawAll(in, out, len(charts), func(i int) (string, func([]result, string) error) {
		return charts[i].file, charts[i].draw
	})
}

// runScaling draws the scaling charts from a ProbeLoop run at several GOMAXPROCS.
func runScaling(in, out string) error {
	return drawAll(in, out, len(scalingCharts), func(i int) (string, func([]result, string) error) {
		return scalingCharts[i].file, scalingCharts[i].draw
	})
}

// drawAll parses the benchmark output in and draws n charts into out; chart(i) names the i-th
// chart's file and its draw function.
func drawAll(in, out string, n int, chart func(i int) (string, func([]result, string) error)) error {
	f, err := os.Open(in)
	if err != nil {
		return fmt.Errorf("read benchmark output: %w", err)
	}
	defer f.Close()
	rs, err := parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	for i := range n {
		file, draw := chart(i)
		if err := draw(rs, filepath.Join(out, file)); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	return nil
}

// result is one benchmark line: BenchmarkName/impl=I/workers=N-P with its metrics by unit.
type result struct {
	bench   string // e.g. ProbeLoop
	impl    string
	workers int
	procs   int // GOMAXPROCS (the name's -P suffix); 0 without one
	metrics map[string]float64
}

var nameRE = regexp.MustCompile(`^Benchmark([A-Za-z]+)/impl=([a-z]+)(?:/workers=(\d+))?(?:-(\d+))?$`)

// parse reads Go benchmark output and keeps the lines of benchmarks named by impl (and workers).
func parse(r io.Reader) ([]result, error) {
	var rs []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 {
			continue
		}
		m := nameRE.FindStringSubmatch(fields[0])
		if m == nil {
			continue
		}
		res := result{bench: m[1], impl: m[2], metrics: map[string]float64{}}
		if m[3] != "" {
			res.workers, _ = strconv.Atoi(m[3])
		}
		if m[4] != "" {
			res.procs, _ = strconv.Atoi(m[4])
		}
		// fields[1] is the iteration count; then value/unit pairs.
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: metric %q: %w", fields[0], fields[i+1], err)
			}
			res.metrics[fields[i+1]] = v
		}
		rs = append(rs, res)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("no benchmark results")
	}
	return rs, nil
}

// chart is one plot: metric of bench against workers, one line per implementation.
type chart struct {
	file, title, bench, metric, yLabel string
	scale                              float64 // the metric is divided by it
	logX                               bool
	impls                              []string
	labels                             map[string]string
}

var labels = map[string]string{"actor": "actor core", "kubelet": "kubelet-style", "bare": "bare net/http (floor)"}

var charts = []chart{
	{file: "probeloop-cpu.png", title: "CPU per probe (instant prober, 1 s period)", bench: "ProbeLoop",
		metric: "cpu-ns/probe", yLabel: "µs of process CPU per probe", scale: 1000, logX: true,
		impls: []string{"actor", "kubelet"}, labels: labels},
	{file: "probeloop-mem.png", title: "Memory per worker", bench: "ProbeLoop", metric: "B/worker",
		yLabel: "bytes per worker (heap + stacks)", scale: 1, logX: true, impls: []string{"actor", "kubelet"}, labels: labels},
	{file: "http-cpu.png", title: "CPU per probe, real HTTP probes (target in another process)", bench: "ProbeLoopHTTP",
		metric: "cpu-ns/probe", yLabel: "µs of process CPU per probe", scale: 1000,
		impls: []string{"actor", "kubelet", "bare"}, labels: labels},
}

// series returns the chart's points per implementation, sorted by workers.
func (c chart) series(rs []result) (map[string]plotter.XYs, error) {
	out := map[string]plotter.XYs{}
	for _, r := range rs {
		v, ok := r.metrics[c.metric]
		if r.bench != c.bench || !ok || r.workers == 0 {
			continue
		}
		out[r.impl] = append(out[r.impl], plotter.XY{X: float64(r.workers), Y: v / c.scale})
	}
	for _, impl := range c.impls {
		pts := out[impl]
		if len(pts) == 0 {
			return nil, fmt.Errorf("no %s %s results for impl=%s", c.bench, c.metric, impl)
		}
		sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
	}
	return out, nil
}

func (c chart) draw(rs []result, path string) error {
	s, err := c.series(rs)
	if err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = "workers"
	p.Y.Label.Text = c.yLabel
	p.Y.Min = 0
	if c.logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	var lines []any
	for _, impl := range c.impls {
		lines = append(lines, c.labels[impl], s[impl])
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return err
	}
	p.Legend.Top = true
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

// scalingChart is one metric of BenchmarkProbeLoop against GOMAXPROCS.
type scalingChart struct {
	file, title, metric, yLabel string
	scale                       float64
}

var scalingCharts = []scalingChart{
	{file: "scaling-probes.png", title: "Probes per second against procs (period 1 s: due = workers/s)",
		metric: "probes/s", yLabel: "probes per second", scale: 1},
	{file: "scaling-cpu.png", title: "CPU per probe against procs", metric: "cpu-ns/probe",
		yLabel: "µs of process CPU per probe", scale: 1000},
	{file: "scaling-p99.png", title: "Lateness p99 against procs", metric: "lateness-p99-ms",
		yLabel: "ms late (p99)", scale: 1},
}

// series returns the chart's points per "<design> <workers>" line, sorted by procs; it needs at
// least two procs values for some line (a chart against procs of one point says nothing).
func (c scalingChart) series(rs []result) (map[string]plotter.XYs, []string, error) {
	out := map[string]plotter.XYs{}
	for _, r := range rs {
		v, ok := r.metrics[c.metric]
		if r.bench != "ProbeLoop" || !ok || r.workers == 0 || r.procs == 0 {
			continue
		}
		key := fmt.Sprintf("%s %d", labels[r.impl], r.workers)
		out[key] = append(out[key], plotter.XY{X: float64(r.procs), Y: v / c.scale})
	}
	keys := make([]string, 0, len(out))
	many := false
	for k, pts := range out {
		sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
		keys = append(keys, k)
		many = many || (len(pts) > 1 && pts[0].X != pts[len(pts)-1].X)
	}
	if !many {
		return nil, nil, fmt.Errorf("no ProbeLoop %s results at two or more GOMAXPROCS (run with -test.cpu 2,4,8,16)", c.metric)
	}
	sort.Strings(keys)
	return out, keys, nil
}

func (c scalingChart) draw(rs []result, path string) error {
	s, keys, err := c.series(rs)
	if err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = "GOMAXPROCS"
	p.Y.Label.Text = c.yLabel
	var lines []any
	for _, k := range keys {
		lines = append(lines, k, s[k])
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return err
	}
	// Procs double from point to point (2, 4, 8, 16): a log axis spaces them evenly, ticked at the
	// values measured, with room either side so that a design's single point at the edge shows.
	x := procsAxis(s)
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = x.ticks
	p.X.Min, p.X.Max = x.min/1.25, x.max*1.25
	p.Y.Min = 0
	p.Y.Max *= 1.4 // headroom above the lines for the legend
	p.Legend.Top = true
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

// procsAxisRange is a chart's procs axis: the values measured, as ticks, and their range.
type procsAxisRange struct {
	ticks    plot.ConstantTicks
	min, max float64
}

// procsAxis returns the procs axis of the series s (at least one point).
func procsAxis(s map[string]plotter.XYs) procsAxisRange {
	seen := map[float64]bool{}
	var r procsAxisRange
	for _, pts := range s {
		for _, pt := range pts {
			seen[pt.X] = true
		}
	}
	for v := range seen {
		r.ticks = append(r.ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	sort.Slice(r.ticks, func(i, j int) bool { return r.ticks[i].Value < r.ticks[j].Value })
	r.min, r.max = r.ticks[0].Value, r.ticks[len(r.ticks)-1].Value
	return r
}
