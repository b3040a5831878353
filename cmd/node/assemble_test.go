package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/internal/fleettest"
	"github.com/probeactor/probeactor/internal/freeport"
	"github.com/probeactor/probeactor/internal/lifecycle"
	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/internal/racecheck"
)

// TestEachModeAssemblesItsPartsInOrder: a mode is which parts are in node's list. For each mode the
// list holds exactly its parts in start order (the data ARCHITECTURE.md shows), and a real start
// and stop of that list starts them in that order and stops them in reverse, every step without
// error.
func TestEachModeAssemblesItsPartsInOrder(t *testing.T) {
	for _, tc := range []assembleCase{
		{"single", func(testing.TB, *runConfig) func(testing.TB) { return nil },
			concat(assembleBase, partHTTPAPI, partPods, partOrphans, partWatchdog)},
		{"static pods", func(t testing.TB, c *runConfig) func(testing.TB) { c.manifestPath = t.TempDir(); return nil },
			concat(assembleBase, partHTTPAPI, partPods, partHousekeeping, partStaticPods, partOrphans, partWatchdog)},
		{"static pods from a URL", func(t testing.TB, c *runConfig) func(testing.TB) {
			ts := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})) // no pods
			t.Cleanup(ts.Close)
			c.manifestURL = ts.URL
			return nil
		}, concat(assembleBase, partHTTPAPI, partPods, partHousekeeping, partStaticPods, partOrphans, partWatchdog)},
	} {
		t.Run(tc.name, func(t *testing.T) { assembleInOrder(t, tc) })
	}
}

// The modes with protoactor's remote run in a child process (racecheck.InChild): the pinned
// protoactor's remote shutdown races its own endpoint events (racecheck.KnownProtoactorRaces), which
// in this process would fail the test.
func TestEachRemoteModeAssemblesItsPartsInOrder(t *testing.T) {
	racecheck.InChild(t, racecheck.KnownProtoactorRaces, func(t testing.TB) {
		for _, tc := range []assembleCase{
			{"fleet", fleetFlags,
				concat(assembleBase, partRemote, partHTTPAPI, partFleetLink, partFleetUsage, partPods, partOrphans, partWatchdog)},
			{"cluster", func(t testing.TB, c *runConfig) func(testing.TB) { clusterFlags(t, c); return nil },
				concat(assembleBase, partRemote, partHTTPAPI, partPods, partHousekeeping, partMembership, partRunner, partWatchdog)},
			{"cluster, fleet and static pods", func(t testing.TB, c *runConfig) func(testing.TB) {
				clusterFlags(t, c)
				c.manifestPath = t.TempDir()
				return fleetFlags(t, c)
			}, concat(assembleBase, partRemote, partHTTPAPI, partFleetLink, partFleetUsage, partPods, partHousekeeping, partMembership, partRunner, partStaticPods, partWatchdog)},
		} {
			t.Logf("mode %q", tc.name)
			assembleInOrder(t, tc)
		}
	})
}

var assembleBase = []string{partEvents, partActorSystem, partRuntime, partProbeTree}

// assembleCase is one mode: its flags (settled, if not nil, waits until the mode has settled after
// the start) and its parts in start order.
type assembleCase struct {
	name  string
	flags func(t testing.TB, cfg *runConfig) (settled func(t testing.TB))
	want  []string
}

// assembleInOrder assembles the mode, checks its parts, starts and stops them, and checks that
// they started in order and stopped in reverse, each without an error or an overrun.
func assembleInOrder(t testing.TB, tc assembleCase) {
	cfg := runConfig{listen: "127.0.0.1:0", rootDir: filepath.Join(t.TempDir(), "root"), logFormat: "text", logOutput: io.Discard,
		backoffInitial: 10 * time.Second, backoffMax: time.Minute, fileCheck: time.Second}
	settled := tc.flags(t, &cfg)
	var (
		mu     sync.Mutex
		events []lifecycle.Event
	)
	n, err := assemble(cfg, nil, logtest.New(t), io.Discard, lifecycle.WithObserver(func(e lifecycle.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}))
	require.NoError(t, err, tc.name)
	assert.Equal(t, tc.want, n.list.Names(), "%s: the mode's parts, in start order", tc.name)

	require.NoError(t, n.list.Start(context.Background()), tc.name)
	if settled != nil {
		settled(t)
	}
	n.list.Stop()
	mu.Lock()
	defer mu.Unlock()
	var started, stopped []string
	for _, e := range events {
		assert.NoError(t, e.Err, "%s: %s %s", tc.name, e.Phase, e.Part)
		assert.False(t, e.Overran, "%s: %s overran its stop deadline", tc.name, e.Part)
		switch e.Phase {
		case lifecycle.Started:
			started = append(started, e.Part)
		case lifecycle.Stopped:
			stopped = append(stopped, e.Part)
		}
	}
	assert.Equal(t, tc.want, started, "%s: started in order", tc.name)
	assert.Equal(t, reversed(tc.want), stopped, "%s: stopped in reverse", tc.name)
}

func fleetFlags(t testing.TB, c *runConfig) func(testing.TB) {
	agg := fleettest.StartAggregator(t)
	c.fleet = fleetConfig{nodeName: "node-a", aggregator: agg.Remote, listen: "127.0.0.1:0", statusEvery: 10 * time.Second}
	return func(t testing.TB) {
		require.Eventually(t, func() bool {
			resp, err := http.Get(agg.API + "/nodes")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return strings.Contains(string(b), `"node-a"`)
		}, 30*time.Second, 20*time.Millisecond, "the node reports to the aggregator")
	}
}

func clusterFlags(t testing.TB, c *runConfig) {
	self := freeport.Addr(t)
	c.fleet.nodeName = "node-a"
	c.cluster = clusterConfig{name: "demo", listen: self, peers: self, failureTimeout: time.Second}
}

func concat(base []string, more ...string) []string { return append(slices.Clone(base), more...) }

func reversed(s []string) []string {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}
