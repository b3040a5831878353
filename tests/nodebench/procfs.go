package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of /proc/<pid>/stat's utime and stime: USER_HZ, which Linux fixes at 100
// for everything it reports to user space.
const clockTicks = 100

// procStat is what nodebench needs of /proc/<pid>/stat.
type procStat struct {
	pid, ppid int
	comm      string
	state     byte
	cpu       time.Duration // user + system so far
}

// parseStat parses one /proc/<pid>/stat line; the command name (in parentheses) may itself hold
// spaces and parentheses, so fields are counted from the last ')'.
func parseStat(line string) (procStat, error) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 1 || end < open {
		return procStat{}, fmt.Errorf("stat %q: no command name", line)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return procStat{}, fmt.Errorf("stat %q: pid: %w", line, err)
	}
	f := strings.Fields(line[end+1:])
	// After the name: state(3) ppid(4) ... utime(14) stime(15): indexes 0, 1, 11 and 12 here.
	if len(f) < 13 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("stat %q: too few fields", line)
	}
	var n [3]int64
	for i, k := range []int{1, 11, 12} {
		if n[i], err = strconv.ParseInt(f[k], 10, 64); err != nil {
			return procStat{}, fmt.Errorf("stat %q: field %d: %w", line, k+3, err)
		}
	}
	return procStat{pid: pid, ppid: int(n[0]), comm: line[open+1 : end], state: f[0][0],
		cpu: time.Duration(n[1]+n[2]) * time.Second / clockTicks}, nil
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(strings.TrimSpace(string(b)))
}

// allProcs reads every process's stat (processes that end meanwhile are skipped).
func allProcs() ([]procStat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []procStat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil {
			out = append(out, st)
		}
	}
	return out, nil
}

// cpuSplit is the CPU a prober's process tree used so far: the process itself, its children (node's
// shims) and everything below them (the containers).
type cpuSplit struct {
	self, children, below time.Duration
	nChildren, nBelow     int
}

func (a cpuSplit) sub(b cpuSplit) cpuSplit {
	return cpuSplit{self: a.self - b.self, children: a.children - b.children, below: a.below - b.below,
		nChildren: a.nChildren, nBelow: a.nBelow}
}

// treeCPU splits the CPU of root's tree in all (root, its children, the rest below them); zombies
// are left out. A process that ended between two reads takes its CPU with it: the runs measured
// here start and end nothing during a window (a restarted container makes the run invalid anyway).
func treeCPU(all []procStat, root int) (cpuSplit, error) {
	var out cpuSplit
	kids := map[int][]procStat{}
	found := false
	for _, p := range all {
		kids[p.ppid] = append(kids[p.ppid], p)
		if p.pid == root {
			out.self, found = p.cpu, true
		}
	}
	if !found {
		return out, fmt.Errorf("process %d is gone", root)
	}
	for _, c := range kids[root] {
		if c.state == 'Z' {
			continue
		}
		out.children += c.cpu
		out.nChildren++
		queue := []int{c.pid}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			for _, g := range kids[pid] {
				if g.state != 'Z' {
					out.below += g.cpu
					out.nBelow++
				}
				queue = append(queue, g.pid)
			}
		}
	}
	return out, nil
}

// loadAvg is the 1-minute load average, as /proc/loadavg prints it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}
