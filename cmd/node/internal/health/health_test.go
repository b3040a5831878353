package health

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, h http.Handler, target string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	b, err := io.ReadAll(w.Result().Body)
	require.NoError(t, err)
	return w.Code, string(b)
}

// TestHandlerIsTheAPIServersHealthz: /healthz, ?verbose, ?exclude and /healthz/NAME answer as the
// API server's healthz package does (kubelet serves that package).
func TestHandlerIsTheAPIServersHealthz(t *testing.T) {
	h := Handler([]Check{Ping, {Name: "tree", Run: func(context.Context) error { return errors.New("syncLoop did not answer") }}}, hclog.NewNullLogger())
	for _, tc := range []struct {
		target string
		code   int
		body   string
	}{
		{"/healthz", 500, "[+]ping ok\n[-]tree failed: reason withheld\nhealthz check failed\n"},
		{"/healthz?verbose", 500, "[+]ping ok\n[-]tree failed: reason withheld\nhealthz check failed\n"},
		{"/healthz?exclude=tree", 200, "ok"},
		{"/healthz?exclude=tree&verbose", 200, "[+]ping ok\n[+]tree excluded: ok\nhealthz check passed\n"},
		{"/healthz?exclude=nope&exclude=tree,other&verbose", 200,
			"[+]ping ok\n[+]tree excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"nope\",\"other\"\nhealthz check passed\n"},
		{"/healthz/ping", 200, "ok"},
		{"/healthz/tree", 500, "internal server error: syncLoop did not answer\n"},
		{"/healthz/nope", 404, "404 page not found: no health check \"nope\" (checks: ping, tree)\n"},
	} {
		code, body := get(t, h, tc.target)
		assert.Equal(t, tc.code, code, tc.target)
		assert.Equal(t, tc.body, body, tc.target)
	}
	code, body := get(t, Handler([]Check{Ping}, nil), "/healthz?verbose")
	assert.Equal(t, 200, code)
	assert.Equal(t, "[+]ping ok\nhealthz check passed\n", body)
}

// TestACheckThatHangsFails: a check that does not return within its deadline fails the request
// instead of holding it; Within does the same for a function that ignores ctx.
func TestACheckThatHangsFails(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	h := Handler([]Check{{Name: "stuck", Run: func(ctx context.Context) error {
		return Within(ctx, func() error { <-block; return nil })
	}}}, hclog.NewNullLogger())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, "/healthz/stuck", nil))
	assert.Equal(t, 500, w.Code)
	assert.Equal(t, "internal server error: no answer: context deadline exceeded\n", w.Body.String())
	assert.NoError(t, Within(context.Background(), func() error { return nil }))
	assert.EqualError(t, Within(context.Background(), func() error { return errors.New("x") }), "x")
}

func TestWatchdogInterval(t *testing.T) {
	const pid = 4242
	for _, tc := range []struct {
		usec, wpid string
		want       time.Duration
		err        string
	}{
		{"", "", 0, ""},
		{"30000000", "", 15 * time.Second, ""},
		{"30000000", strconv.Itoa(pid), 15 * time.Second, ""},
		{"30000000", "1", 0, ""}, // another process's watchdog
		{"1000000", "", 0, "systemd watchdog: WatchdogSec 1s is too small: node needs more than 1s"},
		{"0", "", 0, `systemd watchdog: WATCHDOG_USEC="0": want a positive number of microseconds`},
		{"30s", "", 0, `systemd watchdog: WATCHDOG_USEC="30s": want a positive number of microseconds`},
	} {
		env := map[string]string{"WATCHDOG_USEC": tc.usec, "WATCHDOG_PID": tc.wpid}
		got, err := WatchdogInterval(func(k string) string { return env[k] }, pid)
		if tc.err != "" {
			assert.EqualError(t, err, tc.err, tc.usec)
			continue
		}
		require.NoError(t, err, tc.usec)
		assert.Equal(t, tc.want, got, tc.usec)
	}
}

// listen opens a systemd-like notification socket at name (a path, or "@..." abstract).
func listen(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func receive(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	b := make([]byte, 256)
	n, err := c.Read(b)
	require.NoError(t, err)
	return string(b[:n])
}

func TestNotify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify.sock")
	c := listen(t, path)
	sent, err := Notify(path, Ready)
	require.NoError(t, err)
	assert.True(t, sent)
	assert.Equal(t, "READY=1", receive(t, c))

	abstract := "@probeactor-test-" + strconv.Itoa(int(time.Now().UnixNano()))
	a := listen(t, abstract)
	sent, err = Notify(abstract, Alive)
	require.NoError(t, err)
	assert.True(t, sent)
	assert.Equal(t, "WATCHDOG=1", receive(t, a))

	sent, err = Notify("", Ready)
	assert.NoError(t, err, "no socket: not started by systemd")
	assert.False(t, sent)

	_, err = Notify(filepath.Join(t.TempDir(), "none.sock"), Ready)
	assert.ErrorContains(t, err, "notify systemd at ")
}

// TestWatchdogTellsSystemdOnlyWhileHealthy: READY=1 at Start; WATCHDOG=1 after each round of
// checks that all pass, never after one that fails; STOPPING=1 at Stop, the last state sent.
func TestWatchdogTellsSystemdOnlyWhileHealthy(t *testing.T) {
	var healthy atomic.Bool
	var failedRounds atomic.Int64
	healthy.Store(true)
	states := make(chan string, 1000)
	w := NewWatchdog(WatchdogOptions{
		Checks: []Check{Ping, {Name: "switch", Run: func(context.Context) error {
			if healthy.Load() {
				return nil
			}
			failedRounds.Add(1)
			return errors.New("off")
		}}},
		Interval: 5 * time.Millisecond,
		Notify:   func(s string) (bool, error) { states <- s; return true, nil },
	})
	require.NoError(t, w.Start(context.Background()))
	assert.Equal(t, Ready, <-states)
	assert.Equal(t, Alive, <-states)

	healthy.Store(false)
	waitRounds := func(n int64) {
		start := failedRounds.Load()
		require.Eventually(t, func() bool { return failedRounds.Load() >= start+n }, 10*time.Second, time.Millisecond)
	}
	waitRounds(2) // the round that may have passed before the switch is over
	for len(states) > 0 {
		<-states
	}
	waitRounds(5)
	assert.Empty(t, states, "no WATCHDOG=1 after a round with a failed check")

	healthy.Store(true)
	assert.Equal(t, Alive, <-states)
	require.NoError(t, w.Stop(context.Background()))
	var last string
	for len(states) > 0 {
		last = <-states
	}
	assert.Equal(t, Stopping, last)
}

// TestWatchdogStopEndsACheckUnderWay: a check that waits on its ctx does not hold Stop.
func TestWatchdogStopEndsACheckUnderWay(t *testing.T) {
	entered := make(chan struct{}, 1)
	w := NewWatchdog(WatchdogOptions{
		Checks: []Check{{Name: "slow", Run: func(ctx context.Context) error {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return ctx.Err()
		}}},
		Interval: time.Millisecond,
		Notify:   func(string) (bool, error) { return true, nil },
	})
	require.NoError(t, w.Start(context.Background()))
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, w.Stop(ctx))
}

// Without a watchdog (no WATCHDOG_USEC) the Watchdog sends READY=1 and STOPPING=1 only.
func TestNoWatchdog(t *testing.T) {
	var states []string
	w := NewWatchdog(WatchdogOptions{Checks: []Check{Ping}, Notify: func(s string) (bool, error) { states = append(states, s); return false, nil }})
	require.NoError(t, w.Start(context.Background()))
	require.NoError(t, w.Stop(context.Background()))
	assert.Equal(t, []string{Ready, Stopping}, states)
}

// FromEnvironment reads systemd's variables: a watchdog node could not feed (no NOTIFY_SOCKET)
// fails the start rather than have systemd kill node every WatchdogSec.
func TestFromEnvironment(t *testing.T) {
	t.Setenv("WATCHDOG_PID", "")
	t.Setenv("WATCHDOG_USEC", "30000000")
	t.Setenv("NOTIFY_SOCKET", "")
	_, err := FromEnvironment([]Check{Ping}, nil)
	assert.EqualError(t, err, "systemd watchdog: WATCHDOG_USEC is set but NOTIFY_SOCKET is not: node could not tell systemd it is alive (Type=notify, or NotifyAccess=main)")

	t.Setenv("WATCHDOG_USEC", "500000")
	_, err = FromEnvironment([]Check{Ping}, nil)
	assert.ErrorContains(t, err, "is too small")

	path := filepath.Join(t.TempDir(), "notify.sock")
	c := listen(t, path)
	t.Setenv("NOTIFY_SOCKET", path)
	t.Setenv("WATCHDOG_USEC", "")
	w, err := FromEnvironment([]Check{Ping}, nil)
	require.NoError(t, err)
	for _, v := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} {
		_, set := os.LookupEnv(v)
		assert.False(t, set, "%s is removed once read: containers inherit node's environment", v)
	}
	require.NoError(t, w.Start(context.Background()))
	assert.Equal(t, Ready, receive(t, c))
	require.NoError(t, w.Stop(context.Background()))
	assert.Equal(t, Stopping, receive(t, c))
}
