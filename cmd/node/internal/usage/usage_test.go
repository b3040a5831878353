package usage

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/cmd/node/internal/proc"
	"github.com/probeactor/probeactor/internal/procfs"
)

const s = time.Second

// procs: node (10) with two shims; shim 11 runs main 12, which forked 13 (and a zombie 15 whose
// child 16 lives on), and 14 escaped with setsid and was reparented to the shim; shim 21 runs 22.
var procs = []procfs.ProcStat{
	{PID: 1, PPID: 0, State: 'S', CPU: 100 * s, RSS: 1e9},
	{PID: 10, PPID: 1, State: 'S', CPU: 50 * s, RSS: 5e8},
	{PID: 11, PPID: 10, State: 'S', CPU: 9 * s, ChildCPU: 1 * s, RSS: 1e6},
	{PID: 12, PPID: 11, State: 'S', CPU: 2 * s, ChildCPU: s / 2, RSS: 100},
	{PID: 13, PPID: 12, State: 'R', CPU: 1 * s, RSS: 50},
	{PID: 14, PPID: 11, State: 'S', CPU: 1 * s, RSS: 10},
	{PID: 15, PPID: 12, State: 'Z', CPU: 7 * s},
	{PID: 16, PPID: 15, State: 'S', CPU: 1 * s, RSS: 1},
	{PID: 21, PPID: 10, State: 'S', CPU: 9 * s, RSS: 1e6},
	{PID: 22, PPID: 21, State: 'S', CPU: 3 * s, RSS: 300},
}

func TestMeasure(t *testing.T) {
	u, ok := Measure(procs, 12, 11)
	assert.True(t, ok)
	assert.Equal(t, Usage{CPU: 6500 * time.Millisecond, Memory: 161}, u,
		"the shim's tree: its reaped children, main, its child, the escaped one and the zombie's child; not the shim's own time or memory")

	u, _ = Measure(procs, 12, 0)
	assert.Equal(t, Usage{CPU: 4500 * time.Millisecond, Memory: 151}, u, "no shim pid: the main process's own tree")

	u, _ = Measure(procs, 12, 21)
	assert.Equal(t, Usage{CPU: 4500 * time.Millisecond, Memory: 151}, u, "a shim that is not the main process's parent is not used")

	u, _ = Measure(procs, 22, 21)
	assert.Equal(t, Usage{CPU: 3 * s, Memory: 300}, u)

	_, ok = Measure(procs, 99, 11)
	assert.False(t, ok, "a container whose process has gone")
}

func TestCollector(t *testing.T) {
	pod := func(ns, name string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	web := pod("default", "web")
	started := time.Unix(1700000000, 500000000)
	list := func() []proc.RunningContainer {
		return []proc.RunningContainer{
			{Pod: web, Container: "app", PID: 12, ShimPID: 11, StartedAt: started},
			{Pod: web, Container: "proxy", PID: 22, ShimPID: 21, StartedAt: started},
			{Pod: pod("jobs", "gone"), Container: "c", PID: 99, ShimPID: 98, StartedAt: started},
		}
	}
	host := func() (time.Duration, float64, error) { return 90 * s, 4e9, nil }
	c := NewCollector(list, func() ([]procfs.ProcStat, error) { return procs, nil }, host)
	want := `
# HELP node_cpu_usage_seconds_total Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 90
# HELP node_memory_working_set_bytes Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 4e+09
# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 6.5
container_cpu_usage_seconds_total{container="proxy",namespace="default",pod="web"} 3
# HELP container_memory_working_set_bytes Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 161
container_memory_working_set_bytes{container="proxy",namespace="default",pod="web"} 300
# HELP container_start_time_seconds Start time of the container since unix epoch in seconds
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container="app",namespace="default",pod="web"} 1.7000000005e+09
container_start_time_seconds{container="proxy",namespace="default",pod="web"} 1.7000000005e+09
# HELP pod_cpu_usage_seconds_total Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="default",pod="web"} 9.5
# HELP pod_memory_working_set_bytes Current working set of the pod in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="default",pod="web"} 461
# HELP scrape_error 1 if there was an error while getting container metrics, 0 otherwise
# TYPE scrape_error gauge
scrape_error 0
`
	assert.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want)))

	broken := NewCollector(list, func() ([]procfs.ProcStat, error) { return nil, errors.New("no /proc") }, host)
	assert.NoError(t, testutil.CollectAndCompare(broken, strings.NewReader(`
# HELP node_cpu_usage_seconds_total Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 90
# HELP node_memory_working_set_bytes Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 4e+09
# HELP scrape_error 1 if there was an error while getting container metrics, 0 otherwise
# TYPE scrape_error gauge
scrape_error 1
`)))
	noHost := NewCollector(list, func() ([]procfs.ProcStat, error) { return procs, nil },
		func() (time.Duration, float64, error) { return 0, 0, errors.New("no /proc/stat") })
	assert.NoError(t, testutil.CollectAndCompare(noHost, strings.NewReader(`
# HELP scrape_error 1 if there was an error while getting container metrics, 0 otherwise
# TYPE scrape_error gauge
scrape_error 1
`)))
}
