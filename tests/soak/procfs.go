package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// pageSize converts /proc/<pid>/stat's rss (pages) to bytes.
var pageSize = float64(os.Getpagesize())

// ProcStat is what the soak needs of /proc/<pid>/stat.
type ProcStat struct {
	PID, PPID int
	State     byte    // 'R', 'S', 'Z', ...
	RSS       float64 // bytes
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
	// After the name: state(3) ppid(4) ... rss(24): indexes 0, 1 and 21 here.
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
	return ProcStat{PID: pid, PPID: ppid, State: f[0][0], RSS: rss * pageSize}, nil
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

// RSS returns a process' resident set in bytes (VmRSS in /proc/<pid>/status).
func RSS(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS %q: %w", rest, err)
			}
			return kb * 1024, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
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
