package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Status is what the sampler reads of a process' /proc/<pid>/status: its resident set in bytes,
// VmRSS = RssAnon (heap, stacks, the Go runtime's own memory) + RssFile (the executable's pages
// read so far) + RssShmem, and its OS threads (Go keeps a thread it created for good, so their
// count is the most ever needed at once: goroutines locked to a thread, blocking system calls).
type Status struct {
	RSS, Anon, File float64
	Threads         float64
}

// ReadStatus reads a process' VmRSS, RssAnon, RssFile and Threads in /proc/<pid>/status.
func ReadStatus(pid int) (Status, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Status{}, err
	}
	return ParseStatus(string(b))
}

// ParseStatus reads VmRSS, RssAnon, RssFile and Threads out of a /proc/<pid>/status text; VmRSS
// must be there (the others are NaN when missing: RssAnon and RssFile on an old kernel).
func ParseStatus(status string) (Status, error) {
	m := Status{RSS: math.NaN(), Anon: math.NaN(), File: math.NaN(), Threads: math.NaN()}
	fields := map[string]*float64{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File, "Threads:": &m.Threads}
	for line := range strings.Lines(status) {
		key, rest, ok := strings.Cut(line, "\t")
		if !ok {
			key, rest, _ = strings.Cut(line, " ")
		}
		dst, ok := fields[strings.TrimSpace(key)]
		if !ok {
			continue
		}
		v, kB := strings.CutSuffix(strings.TrimSpace(rest), " kB")
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return Status{}, fmt.Errorf("%s %q: %w", strings.TrimSpace(key), strings.TrimSpace(rest), err)
		}
		if kB {
			n *= 1024
		}
		*dst = n
	}
	if math.IsNaN(m.RSS) {
		return Status{}, fmt.Errorf("no VmRSS line")
	}
	return m, nil
}

// FDs counts a process' open descriptors.
func FDs(pid int) (int, error) {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, err
	}
	return len(entries), nil
}

// LoadAverage returns the 1-minute load average.
func LoadAverage() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/loadavg is empty")
	}
	return strconv.ParseFloat(f[0], 64)
}
