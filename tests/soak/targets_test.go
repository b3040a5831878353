package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestTargetsAnswerAsTheScheduleSays: one slot of each kind, two of them ready and two not for an
// hour (so the answers cannot change during the test); every target answers the schedule.
func TestTargetsAnswerAsTheScheduleSays(t *testing.T) {
	s := &Schedule{Duration: 2 * time.Hour, Slots: make([]Slot, 8)}
	for i := range s.Slots {
		s.Slots[i] = Slot{Index: i, Kind: Kind(i % 4), ReadyPeriod: 2 * time.Hour, UnreadyFor: time.Hour}
		if i >= 4 {
			s.Slots[i].ReadyOffset = time.Hour // ready for the first hour
		}
	}
	ts, where, err := startTargets(s, filepath.Join(t.TempDir(), "exec"))
	require.NoError(t, err)
	defer ts.Close()
	low, high, err := stablePorts()
	require.NoError(t, err)

	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", where.GRPCPort), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()

	for i := range s.Slots {
		ready := i >= 4
		require.Equal(t, ready, s.Ready(i, ts.elapsed()))
		for _, what := range []string{"ready", "live"} {
			up := what == "live" || ready // no liveness failures planned
			name := fmt.Sprintf("slot %d %s", i, what)
			switch s.Slots[i].Kind {
			case HTTP:
				resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/%s/%d", where.HTTPPort, what, i))
				require.NoError(t, err, name)
				resp.Body.Close()
				assert.Equal(t, map[bool]int{true: 200, false: 503}[up], resp.StatusCode, name)
			case GRPC:
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				r, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: fmt.Sprintf("%s-%d", what, i)})
				cancel()
				require.NoError(t, err, name)
				assert.Equal(t, map[bool]healthpb.HealthCheckResponse_ServingStatus{true: healthpb.HealthCheckResponse_SERVING, false: healthpb.HealthCheckResponse_NOT_SERVING}[up], r.Status, name)
			case TCP:
				port := where.TCPReady[i]
				if what == "live" {
					port = where.TCPLive[i]
				}
				assert.True(t, port >= low && port <= high, "%s: port %d outside the ephemeral range", name, port)
				c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
				if err == nil {
					c.Close()
				}
				assert.Equal(t, up, err == nil, "%s: %v", name, err)
			case Exec:
				_, err := os.Stat(filepath.Join(where.ExecDir, fmt.Sprintf("%s-%d", what, i)))
				assert.Equal(t, up, err == nil, name)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = health.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope-1"})
	assert.ErrorContains(t, err, "unknown service")
}
