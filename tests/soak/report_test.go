package main

import (
	"bytes"
	"image/png"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWarmupIsTwoMinutesOrAFifth(t *testing.T) {
	assert.Equal(t, 2*time.Minute, Warmup(10*time.Minute))
	assert.Equal(t, 2*time.Minute, Warmup(time.Hour))
	assert.Equal(t, 36*time.Second, Warmup(3*time.Minute))
}

// samples builds one sample every 10 s with the given RSS values (other series constant).
func samples(rss ...float64) []Sample {
	var out []Sample
	for i, v := range rss {
		out = append(out, Sample{At: time.Duration(i) * 10 * time.Second, RSS: v, HeapLive: 100, Goroutines: 50, FDs: 20,
			SchedulerEntries: math.NaN(), MailboxMessages: math.NaN(), MailboxMax: math.NaN()})
	}
	return out
}

// statCase is a row of the Growth and Trend tables: RSS samples, the warm-up, the expected value.
type statCase struct {
	name   string
	s      []Sample
	warmup time.Duration
	want   float64
	ok     bool
}

func rss(s Sample) float64 { return s.RSS }

func TestGrowthIsLastAgainstTheFirstSampleAfterWarmup(t *testing.T) {
	cases := []statCase{
		{"growth", samples(50, 80, 100, 101, 104), 20 * time.Second, 4, true},
		{"shrink", samples(50, 80, 100, 99, 90), 20 * time.Second, -10, true},
		{"baseline between samples", samples(50, 80, 100, 101, 110), 15 * time.Second, 10, true},
		{"warm-up never over", samples(50, 80), time.Minute, 0, false},
		{"the baseline is the last sample", samples(50, 80, 100), 20 * time.Second, 0, false},
		{"a zero baseline", samples(50, 0, 100), 10 * time.Second, 0, false},
		{"n/a last", samples(50, 80, 100, math.NaN()), 10 * time.Second, 0, false},
		{"no samples", nil, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Growth(tc.s, tc.warmup, rss)
			assert.Equal(t, tc.ok, ok)
			assert.InDelta(t, tc.want, got, 1e-9)
		})
	}
}

// fluctuating: a warm-up sample, a baseline of 100, then 110 and 90 in turn for 10 minutes, ending on 110.
func fluctuating() []Sample {
	v := []float64{0, 100}
	for i := range 60 {
		v = append(v, []float64{110, 90}[i%2])
	}
	return samples(append(v, 110)...)
}

func TestTrendIsTheSlopeAfterWarmupPerTenMinutes(t *testing.T) {
	if g, _ := Growth(fluctuating(), 10*time.Second, rss); math.Abs(g-10) > 1e-9 {
		t.Fatalf("the fluctuating fixture's growth is %.1f %%, want 10 %%", g)
	}
	cases := []statCase{
		// one sample per 10 s: +1 per sample after a baseline of 100 is +6 a minute, +60 % per 10 minutes
		{"a steady climb", samples(50, 100, 101, 102, 103), 10 * time.Second, 60, true},
		{"flat", samples(50, 100, 100, 100, 100), 10 * time.Second, 0, true},
		{"fluctuating around a level for 10 minutes: last-vs-baseline says +10 %, the trend about zero", fluctuating(), 10 * time.Second, 0, true},
		{"the warm-up excluded", samples(10, 20, 100, 100, 100), 20 * time.Second, 0, true},
		{"unknown samples skipped", samples(50, 100, math.NaN(), 102, 103), 10 * time.Second, 60, true},
		{"too few samples", samples(50, 100, 101), 10 * time.Second, 0, false},
		{"a zero baseline", samples(50, 0, 1, 2), 10 * time.Second, 0, false},
		{"no baseline", samples(50, 80), time.Minute, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Trend(tc.s, tc.warmup, rss)
			assert.Equal(t, tc.ok, ok)
			assert.InDelta(t, tc.want, got, 2, "got %.2f", got)
		})
	}
}

// TestTheFinalLine is the format exactly, growths with one decimal, n/a when unknown.
func TestTheFinalLine(t *testing.T) {
	s := samples(50, 80, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 102.5)
	s[len(s)-1].HeapLive = 99.96 // rounds to 0.0: printed without a sign
	s[len(s)-1].FDs = math.NaN()
	s[len(s)-1].Goroutines = 53
	r := Result{Pods: 300, Duration: 150 * time.Second, Samples: s, Lost: 2}
	assert.Equal(t, "soak: pods=300 duration=2m30s rss-growth=2.5% heap-growth=0.0% goroutine-growth=6.0% fd-growth=n/a lost=2", r.Line())
	assert.Equal(t, []string{"goroutine-growth 6.0% ≥ 5%", "fd-growth could not be computed", "lost 2"}, r.Missed())

	s[len(s)-1].FDs, s[len(s)-1].Goroutines = 20, 50
	r.Lost = 0
	assert.Empty(t, r.Missed())
	assert.Equal(t, "soak: pods=300 duration=2m30s rss-growth=2.5% heap-growth=0.0% goroutine-growth=0.0% fd-growth=0.0% lost=0", r.Line())
}

func TestTableAndCSV(t *testing.T) {
	r := Result{Pods: 3, Duration: time.Minute, Samples: samples(1<<20, 2<<20, 3<<20, 3<<20, 4<<20, 4<<20, 4<<20)}
	var b strings.Builder
	r.WriteTable(&b)
	assert.Contains(t, b.String(), "rss                     3.0 MiB      4.0 MiB      3.0 MiB      4.0 MiB    33.3%")
	assert.Contains(t, b.String(), "scheduler-entries           n/a          n/a          n/a          n/a      n/a")

	b.Reset()
	require.NoError(t, WriteCSV(&b, r.Samples[:2]))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 3)
	assert.True(t, strings.HasPrefix(lines[0], "seconds,rss,rss-anon,rss-file,heap-live,heap-spans,heap-free,heap-alloc,heap-retained,stacks,goroutines,goroutines-peak,fds,fds-peak,scheduler-entries,"), lines[0])
	assert.True(t, strings.HasPrefix(lines[2], "10.0,2.097152e+06,0,0,100,0,0,0,0,0,50,0,20,0,,,,"), lines[2])
}

// TestPlotIsAPNG draws the plot of a short run, a series missing entirely included.
func TestPlotIsAPNG(t *testing.T) {
	t.Parallel() // rasterizing takes seconds under -race
	var b bytes.Buffer
	require.NoError(t, WritePlot(&b, "soak: test", samples(1<<20, 2<<20, 3<<20, math.NaN(), 3<<20), 20*time.Second))
	img, err := png.Decode(&b)
	require.NoError(t, err)
	assert.Greater(t, img.Bounds().Dx(), 1000)
}

// TestCSVRoundTrip: ReadCSV gives back what WriteCSV wrote (soak -replot draws from it), unknown
// values as NaN; a file that is not a soak's samples.csv is an error that says why.
func TestCSVRoundTrip(t *testing.T) {
	in := samples(1<<20, 2<<20, 3.5*(1<<20))
	in[1].CPU, in[2].HeapSpans = 0.25, 7e6
	var b strings.Builder
	require.NoError(t, WriteCSV(&b, in))
	out, err := ReadCSV(strings.NewReader(b.String()))
	require.NoError(t, err)
	require.Len(t, out, len(in))
	for i := range in {
		assert.Equal(t, in[i].At, out[i].At)
		for _, s := range AllSeries {
			want, got := s.Value(in[i]), s.Value(out[i])
			if math.IsNaN(want) {
				assert.True(t, math.IsNaN(got), "sample %d %s: want NaN, got %v", i, s.Name, got)
			} else {
				assert.Equal(t, want, got, "sample %d %s", i, s.Name)
			}
		}
	}

	_, err = ReadCSV(strings.NewReader("minutes,rss\n1,2\n"))
	assert.ErrorContains(t, err, `first column is not "seconds"`)
	_, err = ReadCSV(strings.NewReader("seconds,rss,weight\n1,2,3\n"))
	assert.ErrorContains(t, err, `column 3: unknown series "weight"`)
	_, err = ReadCSV(strings.NewReader("seconds,rss\n1,lots\n"))
	assert.ErrorContains(t, err, `row 2, column "rss"`)
}
