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

func TestGrowthIsLastAgainstTheFirstSampleAfterWarmup(t *testing.T) {
	rss := func(s Sample) float64 { return s.RSS }
	cases := []struct {
		name   string
		s      []Sample
		warmup time.Duration
		want   float64
		ok     bool
	}{
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
	assert.True(t, strings.HasPrefix(lines[0], "seconds,rss,heap-live,heap-alloc,heap-retained,stacks,goroutines,goroutines-peak,fds,fds-peak,scheduler-entries,"), lines[0])
	assert.True(t, strings.HasPrefix(lines[2], "10.0,2.097152e+06,100,0,0,0,50,0,20,0,,,,"), lines[2])
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
