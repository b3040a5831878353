package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Sample is one observation of node, every field a float64 so a series is a column; NaN means
// "not available" (a metric node does not expose, a read that failed).
type Sample struct {
	At time.Duration // since the start of the run

	RSS            float64 // node's own resident set (bytes), /proc/<pid>/status VmRSS
	RSSAnon        float64 // of which anonymous (RssAnon: heap, stacks, the runtime's own memory)
	RSSFile        float64 // of which the executable's pages (RssFile)
	Threads        float64 // node's OS threads (/proc/<pid>/status Threads)
	CPU            float64 // node's own CPU use since the previous sample, in cores (utime + stime)
	FDs            float64 // node's own open descriptors, /proc/<pid>/fd: the least of a sample's reads
	FDsPeak        float64 // the most of them
	HeapLive       float64 // HeapAlloc right after a forced GC (HeapAfterGC): what node keeps
	HeapSpans      float64 // HeapInuse then: the spans that hold it (fragmentation is Spans − Live)
	HeapFree       float64 // HeapIdle − HeapReleased then: free heap pages still mapped
	HeapAlloc      float64 // go_memstats_heap_alloc_bytes: live + not yet collected (swings with GC)
	HeapRetained   float64 // go_memstats_heap_idle_bytes − heap_released: free heap not yet returned to the OS
	Stacks         float64 // go_memstats_stack_inuse_bytes
	Goroutines     float64 // go_goroutines: the least of a sample's reads
	GoroutinesPeak float64 // the most of them (probes in flight)

	SchedulerEntries float64 // probeactor_scheduler_entries
	MailboxMessages  float64 // Σ probeactor_mailbox_messages over every actor label
	MailboxMax       float64 // the largest probeactor_mailbox_messages series

	Children   float64 // processes below node (shims, containers, exec probes, the guard)
	ChildRSS   float64 // their resident sets, summed (bytes)
	Pods       float64 // pods node reports (/pods)
	ReadyPods  float64 // of which Ready
	Load1      float64 // the machine's 1-minute load average
	SampleTook float64 // seconds the sample took (a slow /metrics or /pods is a symptom too)
}

// Series names a Sample column for the summary, the CSV and the plot.
type Series struct {
	Name  string
	Unit  string // "B" values print in MiB
	Field func(*Sample) *float64
}

// Value is the series' value in smp.
func (s Series) Value(smp Sample) float64 { return *s.Field(&smp) }

// NaNSample is a sample in which nothing was read: every series NaN.
func NaNSample() Sample {
	var smp Sample
	for _, s := range AllSeries {
		*s.Field(&smp) = math.NaN()
	}
	return smp
}

// AllSeries are the columns, in CSV order.
var AllSeries = []Series{
	{"rss", "B", func(s *Sample) *float64 { return &s.RSS }},
	{"rss-anon", "B", func(s *Sample) *float64 { return &s.RSSAnon }},
	{"rss-file", "B", func(s *Sample) *float64 { return &s.RSSFile }},
	{"heap-live", "B", func(s *Sample) *float64 { return &s.HeapLive }},
	{"heap-spans", "B", func(s *Sample) *float64 { return &s.HeapSpans }},
	{"heap-free", "B", func(s *Sample) *float64 { return &s.HeapFree }},
	{"heap-alloc", "B", func(s *Sample) *float64 { return &s.HeapAlloc }},
	{"heap-retained", "B", func(s *Sample) *float64 { return &s.HeapRetained }},
	{"stacks", "B", func(s *Sample) *float64 { return &s.Stacks }},
	{"goroutines", "", func(s *Sample) *float64 { return &s.Goroutines }},
	{"goroutines-peak", "", func(s *Sample) *float64 { return &s.GoroutinesPeak }},
	{"fds", "", func(s *Sample) *float64 { return &s.FDs }},
	{"fds-peak", "", func(s *Sample) *float64 { return &s.FDsPeak }},
	{"scheduler-entries", "", func(s *Sample) *float64 { return &s.SchedulerEntries }},
	{"mailbox-messages", "", func(s *Sample) *float64 { return &s.MailboxMessages }},
	{"mailbox-max", "", func(s *Sample) *float64 { return &s.MailboxMax }},
	{"cpu", "", func(s *Sample) *float64 { return &s.CPU }},
	{"threads", "", func(s *Sample) *float64 { return &s.Threads }},
	{"children", "", func(s *Sample) *float64 { return &s.Children }},
	{"children-rss", "B", func(s *Sample) *float64 { return &s.ChildRSS }},
	{"pods", "", func(s *Sample) *float64 { return &s.Pods }},
	{"ready-pods", "", func(s *Sample) *float64 { return &s.ReadyPods }},
	{"load1", "", func(s *Sample) *float64 { return &s.Load1 }},
	{"sample-seconds", "", func(s *Sample) *float64 { return &s.SampleTook }},
}

// Warmup is when the baseline sample is taken: 2 minutes, or a fifth of a shorter run (the issue's
// "2 minutes or a fifth of the run" — both are 2 minutes for the default 10-minute run).
func Warmup(d time.Duration) time.Duration { return min(2*time.Minute, d/5) }

// Baseline returns the index of the first sample at or after the warm-up, or -1.
func Baseline(samples []Sample, warmup time.Duration) int {
	for i, s := range samples {
		if s.At >= warmup {
			return i
		}
	}
	return -1
}

// Growth is the last sample's value against the baseline's, in percent; ok is false when either is
// not available, the baseline is the last sample, or the baseline is zero.
func Growth(samples []Sample, warmup time.Duration, v func(Sample) float64) (pct float64, ok bool) {
	b := Baseline(samples, warmup)
	if b < 0 || b == len(samples)-1 {
		return 0, false
	}
	base, last := v(samples[b]), v(samples[len(samples)-1])
	if math.IsNaN(base) || math.IsNaN(last) || base == 0 {
		return 0, false
	}
	return (last - base) / base * 100, true
}

// Trend is the least-squares slope of the samples after the warm-up, as a percentage of the
// baseline's value per 10 minutes; ok is false with fewer than three such samples or a zero or
// unknown baseline (unknown samples are skipped). Growth compares two samples, each as noisy as
// the probes in flight at its instant; the trend uses every sample, so a series that only
// fluctuates shows a trend near zero where its growth may not. It is reported beside the growth,
// never instead of it.
func Trend(samples []Sample, warmup time.Duration, v func(Sample) float64) (pct float64, ok bool) {
	b := Baseline(samples, warmup)
	if b < 0 {
		return 0, false
	}
	base := v(samples[b])
	if math.IsNaN(base) || base == 0 {
		return 0, false
	}
	var n, sx, sy, sxx, sxy float64
	for _, s := range samples[b:] {
		y := v(s)
		if math.IsNaN(y) {
			continue
		}
		x := s.At.Minutes()
		n++
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	den := n*sxx - sx*sx
	if n < 3 || den == 0 {
		return 0, false
	}
	slope := (n*sxy - sx*sy) / den // per minute
	return slope * 10 / base * 100, true
}

// growthText is a growth as the final line prints it: "1.2%", "-0.4%" or "n/a".
func growthText(pct float64, ok bool) string {
	if !ok {
		return "n/a"
	}
	if math.Abs(pct) < 0.05 {
		pct = 0 // no "-0.0%"
	}
	return fmt.Sprintf("%.1f%%", pct)
}

// Result is what the final line says.
type Result struct {
	Pods     int
	Duration time.Duration
	Samples  []Sample
	Lost     int
}

// growths are the four series the final line reports, in its order.
var growths = []struct {
	key   string
	value func(Sample) float64
}{
	{"rss-growth", func(s Sample) float64 { return s.RSS }},
	{"heap-growth", func(s Sample) float64 { return s.HeapLive }},
	{"goroutine-growth", func(s Sample) float64 { return s.Goroutines }},
	{"fd-growth", func(s Sample) float64 { return s.FDs }},
}

// Line is the one line a soak run ends with:
// soak: pods=N duration=D rss-growth=X% heap-growth=X% goroutine-growth=X% fd-growth=X% lost=N
func (r Result) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak: pods=%d duration=%s", r.Pods, r.Duration)
	w := Warmup(r.Duration)
	for _, g := range growths {
		pct, ok := Growth(r.Samples, w, g.value)
		fmt.Fprintf(&b, " %s=%s", g.key, growthText(pct, ok))
	}
	fmt.Fprintf(&b, " lost=%d", r.Lost)
	return b.String()
}

// GrowthLimit is the target for every growth of a 10-minute run.
const GrowthLimit = 5.0

// Missed lists the targets the result misses: a growth of GrowthLimit % or more (or one that could
// not be computed) and any lost pod.
func (r Result) Missed() []string {
	var out []string
	w := Warmup(r.Duration)
	for _, g := range growths {
		pct, ok := Growth(r.Samples, w, g.value)
		switch {
		case !ok:
			out = append(out, g.key+" could not be computed")
		case pct >= GrowthLimit:
			out = append(out, fmt.Sprintf("%s %.1f%% ≥ %.0f%%", g.key, pct, GrowthLimit))
		}
	}
	if r.Lost > 0 {
		out = append(out, fmt.Sprintf("lost %d", r.Lost))
	}
	return out
}

// WriteTable prints, for every series, the baseline and last values, the minimum and maximum
// after the warm-up, the growth and the trend ("n/a" for what node does not expose).
func (r Result) WriteTable(w io.Writer) {
	b := Baseline(r.Samples, Warmup(r.Duration))
	fmt.Fprintf(w, "%-18s %12s %12s %12s %12s %8s %10s\n", "series", "baseline", "last", "min", "max", "growth", "trend/10m")
	for _, s := range AllSeries {
		if b < 0 {
			break
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, smp := range r.Samples[b:] {
			if v := s.Value(smp); !math.IsNaN(v) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		pct, ok := Growth(r.Samples, Warmup(r.Duration), s.Value)
		trend, tok := Trend(r.Samples, Warmup(r.Duration), s.Value)
		fmt.Fprintf(w, "%-18s %12s %12s %12s %12s %8s %10s\n", s.Name,
			format(s, s.Value(r.Samples[b])), format(s, s.Value(r.Samples[len(r.Samples)-1])),
			format(s, lo), format(s, hi), growthText(pct, ok), growthText(trend, tok))
	}
}

func format(s Series, v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "n/a"
	case s.Unit == "B":
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// WriteCSV writes every sample, one row each, seconds first.
func WriteCSV(w io.Writer, samples []Sample) error {
	cols := []string{"seconds"}
	for _, s := range AllSeries {
		cols = append(cols, s.Name)
	}
	if _, err := fmt.Fprintln(w, strings.Join(cols, ",")); err != nil {
		return err
	}
	for _, smp := range samples {
		row := []string{fmt.Sprintf("%.1f", smp.At.Seconds())}
		for _, s := range AllSeries {
			v := s.Value(smp)
			if math.IsNaN(v) {
				row = append(row, "")
			} else {
				row = append(row, fmt.Sprintf("%g", v))
			}
		}
		if _, err := fmt.Fprintln(w, strings.Join(row, ",")); err != nil {
			return err
		}
	}
	return nil
}

// ReadCSV reads what WriteCSV wrote (soak -replot): columns are found by name, a column it does
// not know is an error, a missing one stays NaN, an empty cell is NaN.
func ReadCSV(r io.Reader) ([]Sample, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || len(rows[0]) == 0 || rows[0][0] != "seconds" {
		return nil, fmt.Errorf("not a soak samples.csv: the first column is not \"seconds\"")
	}
	byName := map[string]Series{}
	for _, s := range AllSeries {
		byName[s.Name] = s
	}
	cols := make([]Series, len(rows[0]))
	for i, name := range rows[0][1:] {
		s, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("column %d: unknown series %q", i+2, name)
		}
		cols[i+1] = s
	}
	out := make([]Sample, 0, len(rows)-1)
	for n, row := range rows[1:] {
		smp := NaNSample()
		for i, cell := range row {
			v := math.NaN()
			if cell != "" {
				if v, err = strconv.ParseFloat(cell, 64); err != nil {
					return nil, fmt.Errorf("row %d, column %q: %w", n+2, rows[0][i], err)
				}
			}
			if i == 0 {
				smp.At = time.Duration(v * float64(time.Second))
				continue
			}
			*cols[i].Field(&smp) = v
		}
		out = append(out, smp)
	}
	return out, nil
}
