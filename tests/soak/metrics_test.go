package main

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const exposition = `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 1234
go_memstats_heap_alloc_bytes 9e+06
go_memstats_heap_idle_bytes 8e+06
go_memstats_heap_released_bytes 5e+06
go_memstats_stack_inuse_bytes 2e+06
probeactor_scheduler_entries 600
probeactor_mailbox_messages{actor="probeManager"} 3
probeactor_mailbox_messages{actor="worker"} 17
probeactor_mailbox_messages{actor="odd } \"name\" {"} 1 1700000000000
prober_probe_total{container="app",namespace="default",pod="x",pod_uid="u",probe_type="Readiness",result="successful"} 42
`

func TestParseMetricsAndFromMetrics(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(exposition))
	require.NoError(t, err)
	assert.Equal(t, []float64{3, 17, 1}, m[MetricMailboxMessages])
	assert.Equal(t, []float64{42}, m["prober_probe_total"])

	var s Sample
	FromMetrics(m, &s)
	assert.Equal(t, 1234.0, s.Goroutines)
	assert.Equal(t, 9e6, s.HeapAlloc)
	assert.Equal(t, 3e6, s.HeapRetained)
	assert.Equal(t, 2e6, s.Stacks)
	assert.Equal(t, 600.0, s.SchedulerEntries)
	assert.Equal(t, 21.0, s.MailboxMessages)
	assert.Equal(t, 17.0, s.MailboxMax)
}

// TestActorMetricsAbsentAreNA: a node that does not expose the actor tree's gauges gives NaN (the
// soak prints n/a), never zero.
func TestActorMetricsAbsentAreNA(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader("go_goroutines 7\n"))
	require.NoError(t, err)
	var s Sample
	FromMetrics(m, &s)
	assert.Equal(t, 7.0, s.Goroutines)
	for _, v := range []float64{s.SchedulerEntries, s.MailboxMessages, s.MailboxMax} {
		assert.True(t, math.IsNaN(v))
	}
}

func TestParseMetricsRejectsGarbage(t *testing.T) {
	for _, bad := range []string{"go_goroutines\n", "x{a=\"b\" 1\n", "go_goroutines many\n"} {
		_, err := ParseMetrics(strings.NewReader(bad))
		assert.Error(t, err, bad)
	}
}

// TestCombineTakesTheFloor: a sample is the floor of its reads for what probes in flight inflate,
// with the peaks kept; NaN reads do not count.
func TestCombineTakesTheFloor(t *testing.T) {
	nan := math.NaN()
	reads := []Sample{
		{Goroutines: 1500, FDs: 1100, HeapLive: 30, HeapAlloc: 50, SchedulerEntries: 610, MailboxMessages: 4, MailboxMax: 3},
		{Goroutines: 1100, FDs: nan, HeapLive: 29, HeapAlloc: 70, SchedulerEntries: 600, MailboxMessages: 0, MailboxMax: 0},
		{Goroutines: 1200, FDs: 912, HeapLive: 31, HeapAlloc: 20, SchedulerEntries: 605, MailboxMessages: 9, MailboxMax: 8},
	}
	c := Combine(reads)
	assert.Equal(t, 1100.0, c.Goroutines)
	assert.Equal(t, 1500.0, c.GoroutinesPeak)
	assert.Equal(t, 912.0, c.FDs)
	assert.Equal(t, 1100.0, c.FDsPeak)
	assert.Equal(t, 29.0, c.HeapLive)
	assert.Equal(t, 50.0, c.HeapAlloc, "the first read's")
	assert.Equal(t, 600.0, c.SchedulerEntries)
	assert.Equal(t, 0.0, c.MailboxMessages)
	assert.Equal(t, 8.0, c.MailboxMax)

	none := Combine([]Sample{{Goroutines: nan, FDs: nan, HeapLive: nan, HeapAlloc: nan, SchedulerEntries: nan, MailboxMessages: nan, MailboxMax: nan}})
	assert.True(t, math.IsNaN(none.Goroutines) && math.IsNaN(none.SchedulerEntries) && math.IsNaN(none.MailboxMax))
	assert.True(t, math.IsNaN(none.RSS) && math.IsNaN(none.CPU), "series the reads do not carry stay NaN for the sampler to fill")
}

func TestHeapAfterGC(t *testing.T) {
	profile := `heap profile: 3: 1024 [9: 4096] @ heap/1048576
1: 512 [1: 512] @ 0x1 0x2
#	0x1	main.f+0x1	/x.go:1

# runtime.MemStats
# Alloc = 4234096
# TotalAlloc = 9000000
# HeapAlloc = 4234096
# HeapSys = 7798784
# HeapIdle = 2000000
# HeapInuse = 5798784
# HeapReleased = 1500000
`
	v, err := HeapAfterGC(strings.NewReader(profile))
	require.NoError(t, err)
	assert.Equal(t, AfterGC{Live: 4234096, Spans: 5798784, Free: 500000}, v)
	_, err = HeapAfterGC(strings.NewReader("# HeapAlloc = 1\n# HeapInuse = 2\n"))
	assert.ErrorContains(t, err, "HeapIdle")
	_, err = HeapAfterGC(strings.NewReader("binary profile"))
	assert.ErrorContains(t, err, "HeapAlloc")
}
