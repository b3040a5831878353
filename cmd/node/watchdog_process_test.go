package main

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/internal/fleettest"
)

// notifySocket is a systemd notification socket for a node child: the test's NOTIFY_SOCKET.
type notifySocket struct {
	t    *testing.T
	conn *net.UnixConn
}

func newNotifySocket(t *testing.T) *notifySocket {
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return &notifySocket{t: t, conn: conn}
}

// next returns the next state node sent, within 30 s.
func (s *notifySocket) next() string {
	s.t.Helper()
	require.NoError(s.t, s.conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	b := make([]byte, 256)
	n, err := s.conn.Read(b)
	require.NoError(s.t, err, "no notification from node")
	return string(b[:n])
}

// TestNodeTellsSystemdItRuns: under systemd (Type=notify, WatchdogSec=2s) node sends READY=1 once
// it runs (its static pod already in /pods), WATCHDOG=1 every second while its health checks pass
// (/healthz?verbose lists them), and STOPPING=1 when SIGTERM stops it.
func TestNodeTellsSystemdItRuns(t *testing.T) {
	sock := newNotifySocket(t)
	t.Setenv("WATCHDOG_USEC", "2000000")
	t.Setenv("WATCHDOG_PID", "")
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.MkdirAll(manifests, 0o755))
	onePod(t, filepath.Join(manifests, "web.yaml"), dir, "web", 1, "env > env.txt; exec sleep 300", "")

	n := startRestartNode(t, dir, "--pod-manifest-path", manifests)
	require.Equal(t, "READY=1", sock.next())
	_, ok := n.pod("web")
	assert.True(t, ok, "READY=1 comes once node runs: the static pod was started")
	for range 2 {
		require.Equal(t, "WATCHDOG=1", sock.next())
	}
	env, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(env), "HOSTNAME=web")
	for _, v := range []string{"NOTIFY_SOCKET=", "WATCHDOG_USEC=", "WATCHDOG_PID="} {
		assert.NotContains(t, string(env), v, "a container does not talk to systemd as node")
	}

	code, body := getBody(t, n.api+"/healthz?verbose")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "[+]ping ok\n[+]probe-tree ok\n[+]runtime ok\n[+]housekeeping ok\nhealthz check passed\n", body)
	code, body = getBody(t, n.api+"/healthz/probe-tree")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)

	n.proc.Signal(syscall.SIGTERM)
	for {
		s := sock.next()
		if s == "STOPPING=1" {
			break
		}
		require.Equal(t, "WATCHDOG=1", s)
	}
	select {
	case <-n.proc.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("node did not exit after SIGTERM")
	}
}

// TestNodeRefusesAWatchdogItCannotFeed: a WatchdogSec node cannot honour fails its start, naming
// the variable, before any pod runs.
func TestNodeRefusesAWatchdogItCannotFeed(t *testing.T) {
	newNotifySocket(t)
	t.Setenv("WATCHDOG_USEC", "500000")
	t.Setenv("WATCHDOG_PID", "")
	dir := t.TempDir()
	manifest := onePod(t, filepath.Join(dir, "web.yaml"), dir, "web", 1, "echo started > started; exec sleep 300", "")
	p := fleettest.StartRole(t, "node", "-f", manifest, "--root-dir", filepath.Join(dir, "root"), "--listen", "127.0.0.1:0")
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("node did not exit")
	}
	assert.Error(t, p.Err())
	assert.True(t, strings.Contains(p.Stderr(), "systemd watchdog: WatchdogSec 500ms is too small"), p.Stderr())
	assert.NoFileExists(t, filepath.Join(dir, "started"), "no container started")
}
