package main

import (
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	fds, err := FDs(os.Getpid())
	require.NoError(t, err)
	assert.Greater(t, fds, 2)
	_, err = LoadAverage()
	assert.NoError(t, err)
}
