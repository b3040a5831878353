package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	resourceusage "github.com/probeactor/probeactor/cmd/node/internal/usage"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// The fleet-usage part samples at its start and every period, reports the window between the last
// two samples from the second on, skips a failed sample (the next one starts a new window), logs a
// refused report, and leaves no goroutine or timer after its Stop.
func TestFleetUsagePartReportsEachWindow(t *testing.T) {
	const period = 10 * time.Second
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	var (
		mu    sync.Mutex
		calls int
	)
	fail := map[int]bool{3: true} // the third sample fails
	sample := func() (resourceusage.Sample, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if fail[calls] {
			return resourceusage.Sample{}, errors.New("no /proc/stat")
		}
		// One core busy, 1 GiB in use; a counter read at the fake time.
		now := fake.Now()
		return resourceusage.Sample{At: now, NodeCPU: now.Sub(time.Unix(1_699_999_000, 0)), NodeMemory: 1 << 30}, nil
	}
	reports := make(chan *fleetv1.Usage, 10)
	refuse := false
	log, logs := logtest.Capture(t)
	r := &usageReporter{sample: sample, period: period, clock: fake, log: log,
		report: func(u *fleetv1.Usage) error {
			reports <- u
			if refuse {
				return errors.New("usage: refused")
			}
			return nil
		}}
	require.NoError(t, r.Stop(context.Background()), "Stop before Start does nothing")

	armed, tick := periods(t, fake, period)
	require.NoError(t, r.Start(context.Background()))
	armed()
	assert.Empty(t, reports, "one sample is no window")

	tick()
	require.Len(t, reports, 1, "the second sample closes the first window")
	u := <-reports
	assert.Equal(t, int64(period), u.GetWindowNanos())
	assert.Equal(t, fake.Now().UnixNano(), u.GetTimestampUnixNano())
	assert.Equal(t, uint64(1e9), u.GetNodeCpuNanocores(), "one core")
	assert.Equal(t, uint64(1<<30), u.GetNodeMemoryBytes())

	tick() // the third sample fails
	assert.Empty(t, reports, "a failed sample is skipped")
	assert.Contains(t, logs.String(), "[DEBUG]")
	assert.Contains(t, logs.String(), "usage not sampled; the next sample starts a new window: error=\"no /proc/stat\"")
	tick()
	assert.Empty(t, reports, "the sample after a failure starts a new window")
	refuse = true
	tick()
	require.Len(t, reports, 1)
	u = <-reports
	assert.Equal(t, int64(period), u.GetWindowNanos(), "the window since the sample after the failure")
	assert.Equal(t, fake.Now().UnixNano(), u.GetTimestampUnixNano())
	assert.Contains(t, logs.String(), "usage not reported to the fleet aggregator: error=\"usage: refused\"")

	require.NoError(t, r.Stop(context.Background()))
	assert.Zero(t, fake.Pending(), "no timer left")
	mu.Lock()
	n := calls
	mu.Unlock()
	fake.Advance(10 * period)
	mu.Lock()
	assert.Equal(t, n, calls, "no sample after Stop")
	mu.Unlock()
	require.NoError(t, r.Stop(context.Background()), "a second Stop does nothing")
}

// The fleet-usage part reads the node's own Node object at its start and every period and hands
// each read to the link (which sends only a change); a machine that cannot be read is warned of
// once, while the link keeps the last read, and its return is said.
func TestFleetUsagePartReadsTheMachineEachPeriod(t *testing.T) {
	const period = 10 * time.Second
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	var (
		mu    sync.Mutex
		reads int
	)
	cpus := map[int]string{1: "2", 2: "2", 3: "4", 6: "4"} // 4 and 5: the machine cannot be read
	machine := func() (v1.Node, error) {
		mu.Lock()
		defer mu.Unlock()
		reads++
		c, ok := cpus[reads]
		if !ok {
			return v1.Node{}, errors.New("no /proc/meminfo")
		}
		return v1.Node{Status: v1.NodeStatus{Capacity: v1.ResourceList{v1.ResourceCPU: resource.MustParse(c)}}}, nil
	}
	set := make(chan string, 10)
	log, logs := logtest.Capture(t)
	r := &usageReporter{sample: func() (resourceusage.Sample, error) { return resourceusage.Sample{}, errors.New("not sampled") },
		report: func(*fleetv1.Usage) error { return nil }, machine: machine,
		setNode: func(n *v1.Node) { set <- n.Status.Capacity.Cpu().String() },
		period:  period, clock: fake, log: log}

	armed, tick := periods(t, fake, period)
	require.NoError(t, r.Start(context.Background()))
	armed()
	require.Len(t, set, 1, "read at the start")
	assert.Equal(t, "2", <-set)
	tick()
	require.Len(t, set, 1, "read again each period: the link drops an equal one")
	assert.Equal(t, "2", <-set)
	tick()
	require.Len(t, set, 1)
	assert.Equal(t, "4", <-set, "a hotplugged CPU reaches the link at the next period")

	tick()
	tick() // the machine cannot be read twice running
	assert.Empty(t, set, "nothing is handed over while the machine cannot be read")
	assert.Equal(t, 1, strings.Count(logs.String(), "[WARN]"), "warned once while it stays unreadable")
	assert.Contains(t, logs.String(), "the fleet aggregator keeps this node's last capacity and system info: the machine cannot be read: error=\"no /proc/meminfo\"")
	tick()
	require.Len(t, set, 1)
	assert.Equal(t, "4", <-set)
	assert.Contains(t, logs.String(), "the machine can be read again")

	require.NoError(t, r.Stop(context.Background()))
}

// periods drives the fake clock for a part that arms one timer at a time: armed waits until the
// part has armed its timer; tick then moves time on by a period and waits for the next one.
func periods(t *testing.T, fake *clock.Fake, period time.Duration) (armed, tick func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	armed = func() {
		t.Helper()
		require.NoError(t, fake.WaitPending(ctx, 1))
	}
	tick = func() {
		t.Helper()
		armed()
		fake.Advance(period)
		armed()
	}
	return armed, tick
}
