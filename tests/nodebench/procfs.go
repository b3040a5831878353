package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/probeactor/probeactor/internal/procfs"
)

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
func treeCPU(all []procfs.ProcStat, root int) (cpuSplit, error) {
	var out cpuSplit
	kids := map[int][]procfs.ProcStat{}
	found := false
	for _, p := range all {
		kids[p.PPID] = append(kids[p.PPID], p)
		if p.PID == root {
			out.self, found = p.CPU, true
		}
	}
	if !found {
		return out, fmt.Errorf("process %d is gone", root)
	}
	for _, c := range kids[root] {
		if c.State == 'Z' {
			continue
		}
		out.children += c.CPU
		out.nChildren++
		queue := []int{c.PID}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			for _, g := range kids[pid] {
				if g.State != 'Z' {
					out.below += g.CPU
					out.nBelow++
				}
				queue = append(queue, g.PID)
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
