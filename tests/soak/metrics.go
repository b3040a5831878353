package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// The actor tree's gauges the soak reads when node exposes them (issue 10 §2). Until the tree
// registers them, the sampler reports them as n/a.
const (
	// MetricSchedulerEntries: entries pending in the tree's one clock.Scheduler (one per idle
	// worker, plus pending back-offs); it must follow the number of probes, not the time run.
	MetricSchedulerEntries = "probeactor_scheduler_entries"
	// MetricMailboxMessages{actor=...}: messages waiting in actor mailboxes; label actor is
	// "root", "probeManager", "resultsCache", "statusManager", "syncLoop", or "worker" (the sum over
	// every worker's mailbox).
	MetricMailboxMessages = "probeactor_mailbox_messages"
)

// ParseMetrics reads Prometheus' text exposition format and returns the values of every series by
// metric name (labels dropped: the soak sums or takes the maximum over them).
func ParseMetrics(r io.Reader) (map[string][]float64, error) {
	out := map[string][]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, err := splitSeries(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", n, err)
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("metrics line %d: %q has no value", n, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: value of %s: %w", n, name, err)
		}
		out[name] = append(out[name], v)
	}
	return out, sc.Err()
}

// splitSeries splits `name{labels} value` into the name and what follows the labels; label values
// may hold spaces, braces and escaped quotes.
func splitSeries(line string) (name, rest string, err error) {
	i := strings.IndexAny(line, "{ \t")
	if i < 0 {
		return "", "", fmt.Errorf("%q has no value", line)
	}
	name = line[:i]
	if line[i] != '{' {
		return name, line[i:], nil
	}
	inQuote := false
	for j := i + 1; j < len(line); j++ {
		switch c := line[j]; {
		case inQuote && c == '\\':
			j++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '}':
			return name, line[j+1:], nil
		}
	}
	return "", "", fmt.Errorf("%q: unterminated labels", line)
}

// FromMetrics fills s's goroutines, heap-alloc and actor tree fields from a parsed /metrics; a
// metric node does not expose stays NaN.
func FromMetrics(m map[string][]float64, s *Sample) {
	first := func(name string) float64 {
		if v := m[name]; len(v) > 0 {
			return v[0]
		}
		return math.NaN()
	}
	s.Goroutines = first("go_goroutines")
	s.HeapAlloc = first("go_memstats_heap_alloc_bytes")
	s.HeapRetained = first("go_memstats_heap_idle_bytes") - first("go_memstats_heap_released_bytes")
	s.Stacks = first("go_memstats_stack_inuse_bytes")
	s.SchedulerEntries, s.MailboxMessages, s.MailboxMax = math.NaN(), math.NaN(), math.NaN()
	if v, ok := m[MetricSchedulerEntries]; ok {
		s.SchedulerEntries = sum(v)
	}
	if v, ok := m[MetricMailboxMessages]; ok {
		s.MailboxMessages = sum(v)
		s.MailboxMax = 0
		for _, x := range v {
			s.MailboxMax = max(s.MailboxMax, x)
		}
	}
}

func sum(v []float64) float64 {
	var t float64
	for _, x := range v {
		t += x
	}
	return t
}

// AfterGC is node's heap right after a forced garbage collection, in bytes.
type AfterGC struct {
	Live  float64 // HeapAlloc: what node keeps (plus what it allocated during those milliseconds)
	Spans float64 // HeapInuse: the spans holding it; above Live by the free slots between live objects
	Free  float64 // HeapIdle − HeapReleased: free pages still mapped (resident until the scavenger returns them)
}

// HeapAfterGC reads the heap profile node serves at /debug/pprof/heap?debug=1&gc=1: Go forces a
// garbage collection, writes the profile, then runtime.MemStats, read here.
func HeapAfterGC(r io.Reader) (AfterGC, error) {
	want := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		for _, key := range []string{"HeapAlloc", "HeapInuse", "HeapIdle", "HeapReleased"} {
			if v, ok := strings.CutPrefix(sc.Text(), "# "+key+" = "); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return AfterGC{}, fmt.Errorf("heap profile: %s: %w", key, err)
				}
				want[key] = f
			}
		}
	}
	if err := sc.Err(); err != nil {
		return AfterGC{}, err
	}
	if len(want) < 4 {
		return AfterGC{}, fmt.Errorf("heap profile lacks one of the \"# HeapAlloc = \", HeapInuse, HeapIdle, HeapReleased lines (not debug=1?)")
	}
	return AfterGC{Live: want["HeapAlloc"], Spans: want["HeapInuse"], Free: want["HeapIdle"] - want["HeapReleased"]}, nil
}

// Reads is how many times a sample reads /metrics and node's descriptors, ReadGap apart.
const (
	Reads   = 3
	ReadGap = 300 * time.Millisecond
)

// Combine folds a sample's reads (FromMetrics, HeapAfterGC and FDs of each) into one: the live heap
// (and its spans and free pages), goroutines, descriptors, scheduler entries and mailbox messages
// are the least of the reads — a probe in flight at one instant, or what node allocated between
// its forced GC and the report, is not growth; a leak raises the floor — with the most of
// goroutines and descriptors kept as peaks and the largest single mailbox over all reads;
// heap-alloc, heap-retained and stacks are the first read's. NaN reads are skipped; all NaN stays
// NaN, as does every series a read does not carry (RSS, CPU, pods: the sampler's own reads).
func Combine(reads []Sample) Sample {
	out := NaNSample()
	least := func(acc *float64, v float64) {
		if !math.IsNaN(v) && (math.IsNaN(*acc) || v < *acc) {
			*acc = v
		}
	}
	most := func(acc *float64, v float64) {
		if !math.IsNaN(v) && (math.IsNaN(*acc) || v > *acc) {
			*acc = v
		}
	}
	for i, r := range reads {
		if i == 0 {
			out.HeapAlloc, out.HeapRetained, out.Stacks = r.HeapAlloc, r.HeapRetained, r.Stacks
		}
		least(&out.Goroutines, r.Goroutines)
		most(&out.GoroutinesPeak, r.Goroutines)
		least(&out.FDs, r.FDs)
		most(&out.FDsPeak, r.FDs)
		least(&out.HeapLive, r.HeapLive)
		least(&out.HeapSpans, r.HeapSpans)
		least(&out.HeapFree, r.HeapFree)
		least(&out.SchedulerEntries, r.SchedulerEntries)
		least(&out.MailboxMessages, r.MailboxMessages)
		most(&out.MailboxMax, r.MailboxMax)
	}
	return out
}
