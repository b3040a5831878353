package procfs

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	line := "4242 (node (x) y) S 4200 4242 4200 0 -1 4194560 1 0 0 0 3 4 0 0 20 0 12 0 1000 700000 2560 18446744073709551615"
	st, err := ParseStat(line)
	require.NoError(t, err)
	assert.Equal(t, ProcStat{PID: 4242, PPID: 4200, Comm: "node (x) y", State: 'S', RSS: 2560 * pageSize, CPU: 70 * time.Millisecond}, st)

	st, err = ParseStat("4242 (node (shim) x) S 17 4242 4242 0 -1 4194560 1 0 0 0 150 25 7 3 20 0 9 0 1234 0 0")
	require.NoError(t, err)
	assert.Equal(t, ProcStat{PID: 4242, PPID: 17, Comm: "node (shim) x", State: 'S', CPU: 1750 * time.Millisecond, ChildCPU: 100 * time.Millisecond}, st)

	for _, bad := range []string{"", "12 no-paren S 1", "x (a) S 1 2 3", "12 (a) S 1",
		"12 (a) S x 1 1 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 0 0",
		"4242 node S 1", "x (a) S 1 2 3 4 5 6 7 8 9 10 11 12", "1 (a) S 1 2 3"} {
		_, err := ParseStat(bad)
		assert.Error(t, err, bad)
	}
}

func TestDescendantsSkipZombiesButFollowTheirChildren(t *testing.T) {
	all := []ProcStat{
		{PID: 1, PPID: 0, State: 'S'},
		{PID: 10, PPID: 1, State: 'S'},  // node
		{PID: 11, PPID: 10, State: 'S'}, // shim
		{PID: 12, PPID: 11, State: 'S'}, // container
		{PID: 13, PPID: 10, State: 'Z'}, // a probe not reaped yet
		{PID: 14, PPID: 13, State: 'S'},
		{PID: 20, PPID: 1, State: 'S'}, // not below node
	}
	var pids []int
	for _, p := range Descendants(all, 10) {
		pids = append(pids, p.PID)
	}
	assert.ElementsMatch(t, []int{11, 12, 14}, pids)
}

// Processes finds this test process, under its parent.
func TestProcessesFindsThisOne(t *testing.T) {
	all, err := Processes()
	require.NoError(t, err)
	found := false
	for _, p := range all {
		found = found || (p.PID == os.Getpid() && p.PPID == os.Getppid() && p.CPU >= 0 && p.RSS > 0)
	}
	assert.True(t, found)
}

func TestParseHost(t *testing.T) {
	cpu, err := ParseHostCPU("cpu  100 20 30 5000 40 1 2 3 7 0\ncpu0 50 10 15 2500 20 0 1 1 3 0\n")
	require.NoError(t, err)
	assert.Equal(t, 1560*time.Millisecond, cpu, "user+nice+system+irq+softirq+steal = 156 ticks")
	_, err = ParseHostCPU("intr 1 2 3\n")
	assert.Error(t, err)
	_, err = ParseHostCPU("cpu  1 2 x 4 5 6 7 8\n")
	assert.Error(t, err)

	total, avail, err := ParseMemInfo("MemTotal:       16000000 kB\nMemFree:  1 kB\nMemAvailable:   4000000 kB\n")
	require.NoError(t, err)
	assert.Equal(t, 16000000.0*1024, total)
	assert.Equal(t, 4000000.0*1024, avail)
	_, _, err = ParseMemInfo("MemTotal: 5 kB\n")
	assert.Error(t, err)

	cpu, mem, err := Host()
	require.NoError(t, err, "this machine's /proc")
	assert.Positive(t, cpu)
	assert.Positive(t, mem)
}

func TestParseCPUCount(t *testing.T) {
	n, err := ParseCPUCount("cpu  100 20 30 5000 40 1 2 3 7 0\ncpu0 50 10 15 2500 20 0 1 1 3 0\ncpu3 50 10 15 2500 20 0 1 1 3 0\nintr 1 2\ncpuX 1\n")
	require.NoError(t, err)
	assert.Equal(t, 2, n, "cpu0 and cpu3 (CPUs 1 and 2 offline); not the total line, not cpuX")
	_, err = ParseCPUCount("cpu  1 2 3 4 5 6 7 8\nintr 1\n")
	assert.Error(t, err)
}

// TestCapacity reads this machine: at least one CPU, as many as /proc/stat has per-CPU lines and
// no more than Go sees, and more memory than the host uses.
func TestCapacity(t *testing.T) {
	cpus, memory, err := Capacity()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, cpus, runtime.NumCPU(), "Go sees the CPUs of its affinity mask, at most those online")
	_, used, err := Host()
	require.NoError(t, err)
	assert.Greater(t, memory, used)
}
