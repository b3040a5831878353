package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// resourceFixture is /metrics/resource as node serves it; cpu is added to every counter.
func resourceFixture(cpu float64) string {
	f := func(v float64) string { return strings.TrimRight(strings.TrimRight(strconvF(v), "0"), ".") }
	return `# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} ` + f(10+cpu) + `
container_cpu_usage_seconds_total{container="proxy",namespace="default",pod="web"} ` + f(1+cpu/4) + `
container_cpu_usage_seconds_total{container="c",namespace="jobs",pod="batch"} ` + f(5+2*cpu) + `
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 1.048576e+08
container_memory_working_set_bytes{container="proxy",namespace="default",pod="web"} 2.097152e+07
container_memory_working_set_bytes{container="c",namespace="jobs",pod="batch"} 5.24288e+06
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="default",pod="web"} ` + f(11+cpu*5/4) + `
pod_cpu_usage_seconds_total{namespace="jobs",pod="batch"} ` + f(5+2*cpu) + `
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="default",pod="web"} 1.2582912e+08
pod_memory_working_set_bytes{namespace="jobs",pod="batch"} 5.24288e+06
# TYPE scrape_error gauge
scrape_error 0
`
}

func strconvF(v float64) string { return fmt.Sprintf("%.6f", v) }

// fakeResource serves resourceFixture, its counters growing at 0.25 core (the pod web's at
// 0.3125, the sum of its containers') whenever they are read.
func fakeResource(t *testing.T) *httptest.Server {
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics/resource" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, resourceFixture(0.25*time.Since(start).Seconds()))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestTopPods: kubectl top pod's table, from two reads of /metrics/resource --window apart: CPU is
// the counters' rate (here 0.3125 core for the pod web: "313m", give or take the time between the
// server's answer and the client's clock), memory the second read's.
func TestTopPods(t *testing.T) {
	srv := fakeResource(t)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := dispatch(append([]string{"top"}, append(args, "--server", srv.URL, "--window", "500ms")...), nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, _ := run("pods")
	require.Equal(t, 0, code)
	assert.Regexp(t, regexp.MustCompile(`^NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)\nweb\s+\d+m\s+120Mi\n$`), out)
	cpu := regexp.MustCompile(`web\s+(\d+)m`).FindStringSubmatch(out)
	require.Len(t, cpu, 2)
	milli, err := strconv.Atoi(cpu[1])
	require.NoError(t, err)
	assert.InDelta(t, 313, milli, 100, "the rate of a counter growing at 0.3125 core: %s", out)

	code, out, _ = run("pods", "-A", "--containers", "--sort-by", "memory", "--no-headers")
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3)
	assert.Regexp(t, `^default\s+web\s+app\s+\d+m\s+100Mi$`, lines[0])
	assert.Regexp(t, `^default\s+web\s+proxy\s+\d+m\s+20Mi$`, lines[1])
	assert.Regexp(t, `^jobs\s+batch\s+c\s+\d+m\s+5Mi$`, lines[2])

	code, out, _ = run("pods", "-n", "jobs", "--sort-by", "cpu")
	require.Equal(t, 0, code)
	assert.Regexp(t, `^NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)\nbatch\s+\d+m\s+5Mi\n$`, out)

	code, _, errOut := run("pods", "-n", "empty")
	assert.Equal(t, 0, code)
	assert.Equal(t, "No resources found in empty namespace.\n", errOut)

	code, _, errOut = run("pods", "nope")
	assert.Equal(t, 1, code)
	assert.Equal(t, "error: pod \"nope\" has no metrics in namespace \"default\": it is not running on this node\n", errOut)

	for args, want := range map[string]string{
		"nodes":               "error: node top shows pods",
		"pods --sort-by name": `error: --sort-by "name": use cpu or memory`,
		"pods -A web":         "error: a pod name and -A cannot go together",
	} {
		code, _, errOut := run(strings.Fields(args)...)
		assert.Equal(t, 2, code, args)
		assert.Contains(t, errOut, want, args)
	}
	var errb bytes.Buffer
	assert.Equal(t, 2, dispatch([]string{"top", "pods", "--window", "0s", "--server", srv.URL}, nil, io.Discard, &errb))
	assert.Contains(t, errb.String(), "error: --window 0s: must be a positive duration")
}

// TestTopRows: the rate between two reads; a counter that went back (the container restarted)
// counts from zero; what only one read has is left out.
func TestTopRows(t *testing.T) {
	a := usageKey{"default", "web", "app"}
	b := usageKey{"default", "web", "new"}
	first := map[usageKey]usageSample{a: {cpu: 10}, {"default", "web", ""}: {cpu: 12}}
	second := map[usageKey]usageSample{a: {cpu: 0.5, memory: 3}, b: {cpu: 1}, {"default", "web", ""}: {cpu: 14, memory: 9}}
	assert.Equal(t, []topRow{{key: a, cores: 0.25, memory: 3}}, topRows(first, second, 2*time.Second, true))
	assert.Equal(t, []topRow{{key: usageKey{"default", "web", ""}, cores: 1, memory: 9}}, topRows(first, second, 2*time.Second, false))
}

// TestNodeMeasuresItsContainers: node's /metrics/resource counts a container's CPU and memory,
// its forked children included, and node top shows the pod.
func TestNodeMeasuresItsContainers(t *testing.T) {
	dir := t.TempDir()
	manifest := onePod(t, filepath.Join(dir, "burn.yaml"), dir, "burn", 1,
		// a child that burns about a second of CPU, then sleeps; the main process waits.
		`sh -c 'i=0; while [ $$i -lt 200000 ]; do i=$$((i+1)); done; echo done > burned; exec sleep 300' & wait`, "")
	n := startRestartNode(t, dir, "-f", manifest)
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(dir, "burned")); return err == nil }, 60*time.Second, 50*time.Millisecond)
	first, _, err := readUsage(n.api)
	require.NoError(t, err)
	u := first[usageKey{"default", "burn", "app"}]
	assert.Greater(t, u.cpu, 0.05, "the child's CPU counts: %+v", first)
	assert.Greater(t, u.memory, float64(100*1024), "the processes' resident memory")
	assert.Equal(t, u, first[usageKey{"default", "burn", ""}], "a one-container pod uses what its container does")

	_, raw := getBody(t, n.api+"/metrics/resource")
	assert.Regexp(t, `(?m)^node_cpu_usage_seconds_total [0-9.e+]+$`, raw, "the host's series too")
	assert.Regexp(t, `(?m)^node_memory_working_set_bytes [0-9.e+]+$`, raw)
	var out, errb bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"top", "pods", "--server", n.api, "--window", "200ms"}, nil, &out, &errb), errb.String())
	assert.Regexp(t, `(?m)^burn\s+\d+m\s+\d+Mi$`, out.String())
}
