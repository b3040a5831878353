package usage

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/cmd/node/internal/proc"
	"github.com/probeactor/probeactor/internal/procfs"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

var (
	t0      = time.Unix(1_700_000_000, 0)
	started = t0.Add(-time.Hour)
)

// ctr is a container of the run id, started at started, with its CPU counter and memory.
func ctr(ns, pod, name, id string, cpu time.Duration, mem float64) ContainerSample {
	return ContainerSample{Namespace: ns, Pod: pod, Container: name, ID: id, StartedAt: started, Usage: Usage{CPU: cpu, Memory: mem}}
}

func sample(at time.Time, nodeCPU time.Duration, nodeMem float64, cs ...ContainerSample) Sample {
	return Sample{At: at, NodeCPU: nodeCPU, NodeMemory: nodeMem, Containers: cs}
}

// usage is the window [t0, t0+10s], the node at 2 cores and 4 GB, with pods.
func usage(pods ...*fleetv1.PodUsage) *fleetv1.Usage {
	return &fleetv1.Usage{TimestampUnixNano: t0.Add(10 * s).UnixNano(), WindowNanos: int64(10 * s),
		NodeCpuNanocores: 2e9, NodeMemoryBytes: 4e9, Pods: pods}
}

func pod(ns, name string, cs ...*fleetv1.ContainerUsage) *fleetv1.PodUsage {
	return &fleetv1.PodUsage{Namespace: ns, Name: name, Containers: cs}
}

func cu(name string, nanocores, mem uint64) *fleetv1.ContainerUsage {
	return &fleetv1.ContainerUsage{Name: name, CpuNanocores: nanocores, MemoryBytes: mem}
}

func TestRates(t *testing.T) {
	prevAt, curAt := t0, t0.Add(10*s)
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		prev, cur Sample
		want      *fleetv1.Usage
	}{
		{"steady usage: CPU over the window, memory now",
			sample(prevAt, 100*s, 3e9, ctr("default", "web", "app", "a", 1*s, 50e6)),
			sample(curAt, 120*s, 4e9, ctr("default", "web", "app", "a", 2*s, 100e6)),
			usage(pod("default", "web", cu("app", 1e8, 100e6)))},
		{"no container: the node alone",
			sample(prevAt, 100*s, 3e9), sample(curAt, 120*s, 4e9), usage()},
		{"a restarted container (another ID, a counter from zero) is left out, and its pod with it",
			sample(prevAt, 100*s, 3e9, ctr("default", "web", "app", "a", 50*s, 50e6)),
			sample(curAt, 120*s, 4e9, func() ContainerSample {
				c := ctr("default", "web", "app", "b", s/2, 10e6)
				c.StartedAt = t0.Add(5 * s)
				return c
			}()),
			usage()},
		{"the same ID started again is another run",
			sample(prevAt, 100*s, 3e9, ctr("default", "web", "app", "a", 50*s, 50e6)),
			sample(curAt, 120*s, 4e9, func() ContainerSample {
				c := ctr("default", "web", "app", "a", 51*s, 10e6)
				c.StartedAt = t0.Add(5 * s)
				return c
			}()),
			usage()},
		{"a new container, in a known pod and in a new one, waits for its second point",
			sample(prevAt, 100*s, 3e9, ctr("default", "web", "app", "a", 1*s, 50e6)),
			sample(curAt, 120*s, 4e9, ctr("default", "web", "app", "a", 2*s, 60e6),
				ctr("default", "web", "sidecar", "c", 1*s, 5e6), ctr("default", "new", "app", "d", 1*s, 5e6)),
			usage(pod("default", "web", cu("app", 1e8, 60e6)))},
		{"a container gone is left out",
			sample(prevAt, 100*s, 3e9, ctr("default", "web", "app", "a", 1*s, 50e6), ctr("default", "web", "sidecar", "c", 1*s, 5e6),
				ctr("default", "old", "app", "e", 1*s, 5e6)),
			sample(curAt, 120*s, 4e9, ctr("default", "web", "app", "a", 3*s, 60e6)),
			usage(pod("default", "web", cu("app", 2e8, 60e6)))},
		{"a counter that went backwards is left out, its pod's others stay",
			sample(prevAt, 100*s, 3e9, ctr("default", "web", "app", "a", 5*s, 50e6), ctr("default", "web", "sidecar", "c", 1*s, 5e6)),
			sample(curAt, 120*s, 4e9, ctr("default", "web", "app", "a", 4*s, 50e6), ctr("default", "web", "sidecar", "c", 1*s, 5e6)),
			usage(pod("default", "web", cu("sidecar", 0, 5e6)))},
		{"several pods: by namespace then name, containers by name",
			sample(prevAt, 100*s, 3e9,
				ctr("prod", "db", "postgres", "p1", 10*s, 1e9), ctr("default", "web", "proxy", "w2", 1*s, 1e6),
				ctr("default", "web", "app", "w1", 1*s, 2e6), ctr("default", "api", "app", "a1", 0, 3e6)),
			sample(curAt, 120*s, 4e9,
				ctr("default", "web", "proxy", "w2", 1*s+250*ms, 1e6), ctr("prod", "db", "postgres", "p1", 30*s, 1e9),
				ctr("default", "api", "app", "a1", 5*ms, 3e6), ctr("default", "web", "app", "w1", 1*s, 2e6)),
			usage(pod("default", "api", cu("app", 5e5, 3e6)),
				pod("default", "web", cu("app", 0, 2e6), cu("proxy", 25e6, 1e6)),
				pod("prod", "db", cu("postgres", 2e9, 1e9)))},
		{"two runs of one container both measurable: the later one counts",
			sample(prevAt, 100*s, 3e9, ctr("default", "web", "app", "old", 1*s, 50e6), func() ContainerSample {
				c := ctr("default", "web", "app", "new", 1*s, 10e6)
				c.StartedAt = started.Add(time.Minute)
				return c
			}()),
			sample(curAt, 120*s, 4e9, func() ContainerSample {
				c := ctr("default", "web", "app", "new", 3*s, 10e6)
				c.StartedAt = started.Add(time.Minute)
				return c
			}(), ctr("default", "web", "app", "old", 2*s, 50e6)),
			usage(pod("default", "web", cu("app", 2e8, 10e6)))},
		{"a container without a namespace, pod or container name is left out (the wire refuses it)",
			sample(prevAt, 100*s, 3e9, ctr("", "web", "app", "a", 1*s, 1), ctr("default", "", "app", "b", 1*s, 1), ctr("default", "web", "", "c", 1*s, 1)),
			sample(curAt, 120*s, 4e9, ctr("", "web", "app", "a", 2*s, 1), ctr("default", "", "app", "b", 2*s, 1), ctr("default", "web", "", "c", 2*s, 1)),
			usage()},
		{"rounded to the nearest nanocore, halves up; memory to the nearest byte",
			sample(prevAt, 100*s, 3e9, ctr("default", "web", "a", "a", 0, 0), ctr("default", "web", "b", "b", 0, 0),
				ctr("default", "web", "c", "c", 0, 0), ctr("default", "web", "d", "d", 0, 0)),
			sample(curAt, 120*s, 4e9+0.5, ctr("default", "web", "a", "a", 4, 1.4), ctr("default", "web", "b", "b", 5, 1.5),
				ctr("default", "web", "c", "c", 6, 2), ctr("default", "web", "d", "d", 14, -1)),
			func() *fleetv1.Usage {
				u := usage(pod("default", "web", cu("a", 0, 1), cu("b", 1, 2), cu("c", 1, 2), cu("d", 1, 0)))
				u.NodeMemoryBytes = 4e9 + 1
				return u
			}()},
		{"a CPU time beyond 64 bits times 10⁹: 64 cores busy",
			sample(prevAt, 100*s, 3e9, ctr("default", "web", "app", "a", 0, 0)),
			sample(curAt, 100*s+640*s, 4e9, ctr("default", "web", "app", "a", 640*s, 0)),
			func() *fleetv1.Usage {
				u := usage(pod("default", "web", cu("app", 64e9, 0)))
				u.NodeCpuNanocores = 64e9
				return u
			}()},
		{"a zero window: no usage",
			sample(prevAt, 100*s, 3e9), sample(prevAt, 120*s, 4e9), nil},
		{"a negative window: no usage",
			sample(curAt, 100*s, 3e9), sample(prevAt, 120*s, 4e9), nil},
		{"a window ending before the epoch: no usage",
			sample(time.Unix(-20, 0), 100*s, 3e9), sample(time.Unix(0, 0), 120*s, 4e9), nil},
		{"the host's counter gone backwards: no usage",
			sample(prevAt, 100*s, 3e9, ctr("default", "web", "app", "a", 1*s, 50e6)),
			sample(curAt, 90*s, 4e9, ctr("default", "web", "app", "a", 2*s, 100e6)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Rates(tc.prev, tc.cur)
			assert.True(t, proto.Equal(tc.want, got), "want\n%v\ngot\n%v", prototext.Format(tc.want), prototext.Format(got))
			if tc.want == nil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.NoError(t, got.Validate(), "what Rates makes, the wire takes")
		})
	}
}

func TestNanocores(t *testing.T) {
	for _, tc := range []struct {
		delta, window time.Duration
		want          uint64
	}{
		{s, s, 1e9},
		{1, 3 * s, 0},                      // 1/3
		{2, 3 * s, 1},                      // 2/3
		{1, 2 * s, 1},                      // 1/2: halves up
		{3, 2 * s, 2},                      // 3/2
		{0, s, 0},                          // idle
		{math.MaxInt64, 1, math.MaxUint64}, // beyond uint64: saturated
	} {
		got, ok := nanocores(tc.delta, tc.window)
		assert.True(t, ok)
		assert.Equal(t, tc.want, got, "%v over %v", tc.delta, tc.window)
	}
	_, ok := nanocores(-1, s)
	assert.False(t, ok, "a counter that went backwards")
}

// Sample is Collect's read: the host, then every running container's tree, each with its run.
func TestCollectorSample(t *testing.T) {
	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	list := func() []proc.RunningContainer {
		return []proc.RunningContainer{
			{Pod: web, Container: "app", ID: "proc://a", PID: 12, ShimPID: 11, StartedAt: started},
			{Pod: web, Container: "gone", ID: "proc://g", PID: 99, ShimPID: 98, StartedAt: started},
			{Pod: web, Container: "proxy", ID: "proc://p", PID: 22, ShimPID: 21, StartedAt: started},
		}
	}
	host := func() (time.Duration, float64, error) { return 90 * s, 4e9, nil }
	c := NewCollector(list, func() ([]procfs.ProcStat, error) { return procs, nil }, host)
	c.now = func() time.Time { return t0 }
	got, err := c.Sample()
	require.NoError(t, err)
	assert.Equal(t, Sample{At: t0, NodeCPU: 90 * s, NodeMemory: 4e9, Containers: []ContainerSample{
		{Namespace: "default", Pod: "web", Container: "app", ID: "proc://a", StartedAt: started, Usage: Usage{CPU: 6500 * time.Millisecond, Memory: 161}},
		{Namespace: "default", Pod: "web", Container: "proxy", ID: "proc://p", StartedAt: started, Usage: Usage{CPU: 3 * s, Memory: 300}},
	}}, got, "a container whose process has gone is left out")

	_, err = NewCollector(list, func() ([]procfs.ProcStat, error) { return nil, errors.New("no /proc") }, host).Sample()
	assert.EqualError(t, err, "no /proc")
	_, err = NewCollector(list, func() ([]procfs.ProcStat, error) { return procs, nil },
		func() (time.Duration, float64, error) { return 0, 0, errors.New("no /proc/stat") }).Sample()
	assert.EqualError(t, err, "no /proc/stat")
}
