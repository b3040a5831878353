package main

import (
	"context"
	"io"
	"net/http"
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
)

// TestEachModeAssemblesItsPartsInOrder: a mode is which parts are in node's list. For each mode the
// list holds exactly its parts in start order (the data ARCHITECTURE.md shows), and a real start
// and stop of that list starts them in that order and stops them in reverse, every step without
// error.
func TestEachModeAssemblesItsPartsInOrder(t *testing.T) {
	base := []string{partEvents, partActorSystem, partRuntime, partProbeTree}
	cases := []struct {
		name  string
		flags func(t *testing.T, cfg *runConfig) (settled func(t *testing.T))
		want  []string
	}{
		{"single", func(*testing.T, *runConfig) func(*testing.T) { return nil },
			concat(base, partHTTPAPI, partPods, partOrphans)},
		{"static pods", func(t *testing.T, c *runConfig) func(*testing.T) { c.manifestPath = t.TempDir(); return nil },
			concat(base, partHTTPAPI, partPods, partHousekeeping, partStaticPods, partOrphans)},
		{"fleet", fleetFlags,
			concat(base, partRemote, partHTTPAPI, partFleetLink, partPods, partOrphans)},
		{"cluster", func(t *testing.T, c *runConfig) func(*testing.T) { clusterFlags(t, c); return nil },
			concat(base, partRemote, partHTTPAPI, partPods, partHousekeeping, partMembership, partRunner)},
		{"cluster, fleet and static pods", func(t *testing.T, c *runConfig) func(*testing.T) {
			clusterFlags(t, c)
			c.manifestPath = t.TempDir()
			return fleetFlags(t, c)
		}, concat(base, partRemote, partHTTPAPI, partFleetLink, partPods, partHousekeeping, partMembership, partRunner, partStaticPods)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
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
			require.NoError(t, err)
			assert.Equal(t, tc.want, n.list.Names(), "the mode's parts, in start order")

			require.NoError(t, n.list.Start(context.Background()))
			if settled != nil {
				settled(t)
			}
			n.list.Stop()
			mu.Lock()
			defer mu.Unlock()
			var started, stopped []string
			for _, e := range events {
				assert.NoError(t, e.Err, "%s %s", e.Phase, e.Part)
				assert.False(t, e.Overran, "%s overran its stop deadline", e.Part)
				switch e.Phase {
				case lifecycle.Started:
					started = append(started, e.Part)
				case lifecycle.Stopped:
					stopped = append(stopped, e.Part)
				}
			}
			assert.Equal(t, tc.want, started, "started in order")
			assert.Equal(t, reversed(tc.want), stopped, "stopped in reverse")
		})
	}
}

// TestABusyListenAddressFailsBeforeAnythingRuns: the API's listener is bound when node is
// assembled, so an address in use is the first error, naming the flag, and no part ever starts.
func TestABusyListenAddressFailsBeforeAnythingRuns(t *testing.T) {
	first, err := assemble(runConfig{listen: "127.0.0.1:0", rootDir: t.TempDir(), logOutput: io.Discard}, nil, logtest.New(t), io.Discard)
	require.NoError(t, err)
	require.NoError(t, first.list.Start(context.Background()))
	defer first.list.Stop()
	addr := first.ln.Addr().String()
	_, err = assemble(runConfig{listen: addr, rootDir: t.TempDir(), logOutput: io.Discard}, nil, logtest.New(t), io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--listen "+addr+": ")
	assert.Contains(t, err.Error(), "address already in use")
}

// fleetFlags points node at a running aggregator (`node fleet`, a child process: protoactor's
// remote shutdown races in-process). One that is down would hold the remote's stop for
// protoactor's 10 s: its endpoint writer to a dead address blocks. The returned wait lets node's
// session with the aggregator settle before node stops: protoactor's graceful remote shutdown
// waits up to 10 s for a peer's stream that is still being set up.
func fleetFlags(t *testing.T, c *runConfig) func(*testing.T) {
	agg := fleettest.StartAggregator(t)
	c.fleet = fleetConfig{nodeName: "node-a", aggregator: agg.Remote, listen: "127.0.0.1:0", statusEvery: 10 * time.Second}
	return func(t *testing.T) {
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

func clusterFlags(t *testing.T, c *runConfig) {
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
