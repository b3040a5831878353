package main

import (
	"context"
	"io"
	"path/filepath"
	"slices"
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
		flags func(t *testing.T, cfg *runConfig)
		want  []string
	}{
		{"single", func(*testing.T, *runConfig) {},
			concat(base, partHTTPAPI, partPods)},
		{"static pods", func(t *testing.T, c *runConfig) { c.manifestPath = t.TempDir() },
			concat(base, partHTTPAPI, partPods, partHousekeeping, partStaticPods)},
		{"fleet", func(t *testing.T, c *runConfig) { fleetFlags(t, c) },
			concat(base, partRemote, partHTTPAPI, partFleetLink, partPods)},
		{"cluster", func(t *testing.T, c *runConfig) { clusterFlags(t, c) },
			concat(base, partRemote, partHTTPAPI, partPods, partHousekeeping, partMembership, partRunner)},
		{"cluster, fleet and static pods", func(t *testing.T, c *runConfig) {
			clusterFlags(t, c)
			fleetFlags(t, c)
			c.manifestPath = t.TempDir()
		}, concat(base, partRemote, partHTTPAPI, partFleetLink, partPods, partHousekeeping, partMembership, partRunner, partStaticPods)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := runConfig{listen: "127.0.0.1:0", rootDir: filepath.Join(t.TempDir(), "root"), logFormat: "text", logOutput: io.Discard,
				backoffInitial: 10 * time.Second, backoffMax: time.Minute, fileCheck: time.Second}
			tc.flags(t, &cfg)
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
// protoactor's 10 s: its endpoint writer to a dead address blocks.
func fleetFlags(t *testing.T, c *runConfig) {
	agg := fleettest.StartAggregator(t)
	c.fleet = fleetConfig{nodeName: "node-a", aggregator: agg.Remote, listen: "127.0.0.1:0", statusEvery: 10 * time.Second}
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
