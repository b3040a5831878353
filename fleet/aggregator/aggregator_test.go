package aggregator_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/fleet/aggregator"
	"github.com/probeactor/probeactor/internal/lifecycle"
	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/internal/racecheck"
)

// An Aggregator is a part of a lifecycle.List that can fail on its own.
var (
	_ lifecycle.Component = (*aggregator.Aggregator)(nil)
	_ lifecycle.Failing   = (*aggregator.Aggregator)(nil)
)

func config(t testing.TB) aggregator.Config {
	return aggregator.Config{Listen: "127.0.0.1:0", RemoteListen: "127.0.0.1:0", GracePeriod: 3 * time.Second, Logger: logtest.New(t)}
}

// New rejects bad input naming the `node fleet` flag, and binds nothing.
func TestNewRejectsBadInputNamingTheFlag(t *testing.T) {
	cases := []struct {
		name string
		edit func(*aggregator.Config)
		want string
	}{
		{"listen", func(c *aggregator.Config) { c.Listen = "nonsense" }, `--listen "nonsense": address nonsense: missing port`},
		{"remote listen", func(c *aggregator.Config) { c.RemoteListen = "" }, `--remote-listen: remote listen address "": missing port`},
		{"listen port unknown", func(c *aggregator.Config) { c.Listen = "127.0.0.1:abc" }, `--listen "127.0.0.1:abc": lookup tcp/abc`},
		{"remote listen port a name", func(c *aggregator.Config) { c.RemoteListen = "127.0.0.1:http" }, `--remote-listen: remote listen address "127.0.0.1:http": port "http" is not a number from 0 to 65535`},
		{"remote listen port out of range", func(c *aggregator.Config) { c.RemoteListen = "127.0.0.1:99999" }, `--remote-listen: remote listen address "127.0.0.1:99999": port "99999" is not a number from 0 to 65535`},
		{"remote advertise port zero", func(c *aggregator.Config) { c.RemoteAdvertise = "agg.example:0" }, `--remote-advertise "agg.example:0": port "0": want 1-65535`},
		{"remote advertise port a name", func(c *aggregator.Config) { c.RemoteAdvertise = "agg.example:x" }, `--remote-advertise "agg.example:x": port "x": want 1-65535`},
		{"grace period", func(c *aggregator.Config) { c.GracePeriod = 0 }, "--node-monitor-grace-period 0s: must be a positive duration"},
		{"remote advertise", func(c *aggregator.Config) { c.RemoteAdvertise = "x" }, `--remote-advertise "x": want host:port`},
		{"remote advertise without host", func(c *aggregator.Config) { c.RemoteAdvertise = ":7000" }, `--remote-advertise ":7000": want host:port`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(t)
			tc.edit(&cfg)
			_, err := aggregator.New(cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A Start that cannot bind its HTTP address fails naming --listen and leaves nothing running
// (goleak checks the goroutines when the package's tests end).
func TestStartOnABusyListenAddressFailsAndLeavesNothing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	cfg := config(t)
	cfg.Listen = busy.Addr().String()
	agg, err := aggregator.New(cfg)
	require.NoError(t, err)
	err = agg.Start(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--listen "+cfg.Listen+": ")
}

// The lifecycle contract end to end: Start returns once both addresses listen and logs the line
// internal/fleettest reads them from; a second aggregator on the same remote address fails naming
// --remote-listen and releases its HTTP port; Stop ends the API. Two remotes in one process hit
// protoactor's known races, so this runs in a child process (internal/racecheck).
func TestStartServesUntilStop(t *testing.T) {
	racecheck.InChild(t, racecheck.KnownProtoactorRaces, func(t testing.TB) {
		cfg := config(t)
		log, buf := logtest.Capture(t)
		cfg.Logger = log
		agg, err := aggregator.New(cfg)
		require.NoError(t, err)
		assert.Empty(t, agg.API(), "New binds nothing")
		require.NoError(t, agg.Start(context.Background()))
		assert.Contains(t, buf.String(), "fleet aggregator is running: api=http://"+agg.API()+" remote="+agg.Remote()+" ")
		assert.Equal(t, "ok", get(t, "http://"+agg.API()+"/healthz"))

		second := config(t)
		second.RemoteListen = agg.Remote()
		other, err := aggregator.New(second)
		require.NoError(t, err)
		err = other.Start(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--remote-listen: ")

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, agg.Stop(ctx))
		_, err = http.Get("http://" + agg.API() + "/healthz")
		assert.Error(t, err, "the API is closed after Stop")
		select {
		case err := <-agg.Failed():
			t.Errorf("a stop is not a failure: %v", err)
		default:
		}
	})
}

func get(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
