package main

import (
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	line := "4242 (node (x) y) S 4200 4242 4200 0 -1 4194560 1 0 0 0 3 4 0 0 20 0 12 0 1000 700000 2560 18446744073709551615"
	st, err := ParseStat(line)
	require.NoError(t, err)
	assert.Equal(t, ProcStat{PID: 4242, PPID: 4200, State: 'S', RSS: 2560 * pageSize, CPU: 0.07}, st)

	for _, bad := range []string{"", "12 no-paren S 1", "x (a) S 1 2 3", "12 (a) S 1"} {
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

func TestParseStatus(t *testing.T) {
	status := "Name:\tnode\nVmPeak:\t  900 kB\nVmRSS:\t   64040 kB\nRssAnon:\t   41428 kB\nRssFile:\t   22612 kB\nRssShmem:\t       0 kB\nThreads:\t15\n"
	m, err := ParseStatus(status)
	require.NoError(t, err)
	assert.Equal(t, Status{RSS: 64040 * 1024, Anon: 41428 * 1024, File: 22612 * 1024, Threads: 15}, m, "sizes in kB, the thread count as it is")

	m, err = ParseStatus("VmRSS:\t 10 kB\n") // an old kernel: no split
	require.NoError(t, err)
	assert.Equal(t, float64(10*1024), m.RSS)
	assert.True(t, math.IsNaN(m.Anon) && math.IsNaN(m.File) && math.IsNaN(m.Threads))

	_, err = ParseStatus("Name:\tnode\n")
	assert.ErrorContains(t, err, "no VmRSS")
	_, err = ParseStatus("VmRSS:\t many kB\n")
	assert.ErrorContains(t, err, `VmRSS: "many kB"`)
}

// TestOwnProcess reads this test process as the sampler reads node.
func TestOwnProcess(t *testing.T) {
	mem, err := ReadStatus(os.Getpid())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, mem.Threads, 1.0)
	assert.Greater(t, mem.RSS, float64(1<<20))
	assert.Greater(t, mem.File, float64(1<<20), "the test binary's pages")
	assert.InDelta(t, mem.RSS, mem.Anon+mem.File, float64(1<<20), "VmRSS = RssAnon + RssFile (+ RssShmem)")
	self, err := Processes()
	require.NoError(t, err)
	for _, p := range self {
		if p.PID == os.Getpid() {
			assert.GreaterOrEqual(t, p.CPU, 0.0)
		}
	}
	fds, err := FDs(os.Getpid())
	require.NoError(t, err)
	assert.Greater(t, fds, 2)
	all, err := Processes()
	require.NoError(t, err)
	found := false
	for _, p := range all {
		found = found || (p.PID == os.Getpid() && p.PPID == os.Getppid())
	}
	assert.True(t, found)
	_, err = LoadAverage()
	assert.NoError(t, err)
}
