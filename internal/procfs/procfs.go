// Package procfs reads the processes' /proc/<pid>/stat: for the measurements that watch node and
// its containers from outside (tests/soak, tests/nodebench), and for node's own resource metrics
// (cmd/node/internal/usage); and the host's CPUs and memory, used (Host) and there (Capacity), for
// those metrics and node's Node object (cmd/node/internal/nodeobject). Linux only.
package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ClockTicks is the unit of /proc/<pid>/stat's utime and stime: USER_HZ, which Linux fixes at 100
// for everything it reports to user space.
const ClockTicks = 100

// pageSize converts /proc/<pid>/stat's rss (pages) to bytes.
var pageSize = float64(os.Getpagesize())

// ProcStat is what the measurements need of /proc/<pid>/stat.
type ProcStat struct {
	PID, PPID int
	Comm      string        // the command name, without its parentheses
	State     byte          // 'R', 'S', 'Z', ...
	RSS       float64       // bytes
	CPU       time.Duration // used so far, user and system (utime + stime)
	ChildCPU  time.Duration // used by the children it has waited for (cutime + cstime)
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
	// After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17) ... rss(24):
	// indexes 0, 1, 11, 12, 13, 14 and 21 here.
	if len(f) < 22 || len(f[0]) != 1 {
		return ProcStat{}, fmt.Errorf("stat %q: too few fields", line)
	}
	var n [6]int64
	for i, k := range []int{1, 11, 12, 21, 13, 14} {
		if n[i], err = strconv.ParseInt(f[k], 10, 64); err != nil {
			return ProcStat{}, fmt.Errorf("stat %q: field %d: %w", line, k+3, err)
		}
	}
	return ProcStat{PID: pid, PPID: int(n[0]), Comm: line[open+1 : end], State: f[0][0], RSS: float64(n[3]) * pageSize,
		CPU: time.Duration(n[1]+n[2]) * time.Second / ClockTicks, ChildCPU: time.Duration(n[4]+n[5]) * time.Second / ClockTicks}, nil
}

// Processes reads every process's stat (processes that end meanwhile are skipped).
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

// Descendants returns the processes below root (not root itself), zombies excluded (their
// children are followed).
func Descendants(all []ProcStat, root int) []ProcStat { return NewTree(all).Descendants(root) }

// Tree is one read of every process, indexed by pid and by parent, for asking about many
// processes of the same read.
type Tree struct {
	byPID    map[int]ProcStat
	children map[int][]ProcStat
}

// NewTree indexes all.
func NewTree(all []ProcStat) Tree {
	t := Tree{byPID: make(map[int]ProcStat, len(all)), children: map[int][]ProcStat{}}
	for _, p := range all {
		t.byPID[p.PID] = p
		t.children[p.PPID] = append(t.children[p.PPID], p)
	}
	return t
}

// Get returns process pid, if the read has it.
func (t Tree) Get(pid int) (ProcStat, bool) {
	p, ok := t.byPID[pid]
	return p, ok
}

// Descendants returns the processes below root (not root itself), zombies excluded (their
// children are followed).
func (t Tree) Descendants(root int) []ProcStat {
	var out []ProcStat
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range t.children[pid] {
			if c.State != 'Z' {
				out = append(out, c)
			}
			queue = append(queue, c.PID)
		}
	}
	return out
}

// ParseHostCPU reads /proc/stat's first line ("cpu  user nice system idle iowait irq softirq steal
// ..."): the time every CPU has spent busy (user, nice, system, irq, softirq and steal; idle and
// iowait are not busy, guest time is inside user already).
func ParseHostCPU(stat string) (time.Duration, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: first line %q is not the cpu line", line)
	}
	var busy int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: cpu field %d: %w", i, err)
		}
		busy += n
	}
	return time.Duration(busy) * time.Second / ClockTicks, nil
}

// ParseMemInfo reads /proc/meminfo's MemTotal and MemAvailable, in bytes.
func ParseMemInfo(meminfo string) (total, available float64, err error) {
	seen := 0
	for _, line := range strings.Split(meminfo, "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || (name != "MemTotal" && name != "MemAvailable") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("/proc/meminfo: %q", line)
		}
		kb, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/meminfo: %s: %w", name, err)
		}
		if name == "MemTotal" {
			total = kb * 1024
		} else {
			available = kb * 1024
		}
		seen++
	}
	if seen != 2 {
		return 0, 0, errors.New("/proc/meminfo: no MemTotal or MemAvailable")
	}
	return total, available, nil
}

// Host reads the host's busy CPU time (ParseHostCPU) and its memory in use: MemTotal less
// MemAvailable.
func Host() (cpu time.Duration, memory float64, err error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	if cpu, err = ParseHostCPU(string(stat)); err != nil {
		return 0, 0, err
	}
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, err
	}
	total, available, err := ParseMemInfo(string(meminfo))
	if err != nil {
		return 0, 0, err
	}
	return cpu, total - available, nil
}

// ParseCPUCount counts /proc/stat's per-CPU lines ("cpu0", "cpu1", ...): the CPUs online, whose
// time ParseHostCPU sums.
func ParseCPUCount(stat string) (int, error) {
	n := 0
	for line := range strings.SplitSeq(stat, "\n") {
		name, _, _ := strings.Cut(line, " ")
		if digits, ok := strings.CutPrefix(name, "cpu"); ok && digits != "" {
			if _, err := strconv.Atoi(digits); err == nil {
				n++
			}
		}
	}
	if n == 0 {
		return 0, errors.New("/proc/stat: no cpuN line")
	}
	return n, nil
}

// Capacity reads what the host has: its CPUs online (ParseCPUCount) and its memory, MemTotal in
// bytes (Host is what it uses of them).
func Capacity() (cpus int, memory float64, err error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	if cpus, err = ParseCPUCount(string(stat)); err != nil {
		return 0, 0, err
	}
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, err
	}
	total, _, err := ParseMemInfo(string(meminfo))
	if err != nil {
		return 0, 0, err
	}
	return cpus, total, nil
}
