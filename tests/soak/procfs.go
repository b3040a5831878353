package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// pageSize converts /proc/<pid>/stat's rss (pages) to bytes.
var pageSize = float64(os.Getpagesize())

// ClockTicks is the unit of /proc/<pid>/stat's utime and stime: USER_HZ, which Linux fixes at 100
// for everything it reports to user space.
const ClockTicks = 100

// ProcStat is what the soak needs of /proc/<pid>/stat.
type ProcStat struct {
	PID, PPID int
	State     byte    // 'R', 'S', 'Z', ...
	RSS       float64 // bytes
	CPU       float64 // seconds of CPU used so far, user and system (utime + stime)
}

// ParseStat parses one /proc/<pid>/stat line; the command name (in parentheses) may itself hold
// spaces and parentheses, so fields are counted from the last ')'.
func ParseStat(line string) (ProcStat, error) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 1 || end < open {
		return ProcStat{}, fmt.Errorf("stat %q: no command name", line)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return ProcStat{}, fmt.Errorf("stat %q: pid: %w", line, err)
	}
	f := strings.Fields(line[end+1:])
	// After the name: state(3) ppid(4) ... utime(14) stime(15) ... rss(24): indexes 0, 1, 11, 12
	// and 21 here.
	if len(f) < 22 || len(f[0]) != 1 {
		return ProcStat{}, fmt.Errorf("stat %q: too few fields", line)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return ProcStat{}, fmt.Errorf("stat %q: ppid: %w", line, err)
	}
	rss, err := strconv.ParseFloat(f[21], 64)
	if err != nil {
		return ProcStat{}, fmt.Errorf("stat %q: rss: %w", line, err)
	}
	utime, err := strconv.ParseFloat(f[11], 64)
	if err != nil {
		return ProcStat{}, fmt.Errorf("stat %q: utime: %w", line, err)
	}
	stime, err := strconv.ParseFloat(f[12], 64)
	if err != nil {
		return ProcStat{}, fmt.Errorf("stat %q: stime: %w", line, err)
	}
	return ProcStat{PID: pid, PPID: ppid, State: f[0][0], RSS: rss * pageSize, CPU: (utime + stime) / ClockTicks}, nil
}

// Processes reads every process' stat (processes that end meanwhile are skipped).
func Processes() ([]ProcStat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []ProcStat
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		if st, err := ParseStat(string(bytes.TrimSpace(b))); err == nil {
			out = append(out, st)
		}
	}
	return out, nil
}

// Descendants returns the processes below root (not root itself), zombies excluded.
func Descendants(all []ProcStat, root int) []ProcStat {
	children := map[int][]ProcStat{}
	for _, p := range all {
		children[p.PPID] = append(children[p.PPID], p)
	}
	var out []ProcStat
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if c.State != 'Z' {
				out = append(out, c)
			}
			queue = append(queue, c.PID)
		}
	}
	return out
}

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
