package demo

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/probeactor/probeactor/internal/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start runs serve in the background; the returned function cancels it and returns its error.
func start(t *testing.T, args ...string) (out *logtest.Buffer, stop func() error) {
	t.Helper()
	out = &logtest.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, args, out, out) }()
	return out, func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not return within 10 s of its context's end")
			return nil
		}
	}
}

func httpCode(t *testing.T, port int, path string) int {
	t.Helper()
	var code int
	require.Eventually(t, func() bool { // until the listener is up
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + path)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		code = resp.StatusCode
		return true
	}, 10*time.Second, 10*time.Millisecond)
	return code
}

// grpcStatus asks the gRPC health service; it waits up to 5 s for the server to come up.
func grpcStatus(port int) (healthpb.HealthCheckResponse_ServingStatus, error) {
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	return resp.GetStatus(), err
}

func requireGRPCStatus(t *testing.T, port int, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	var got healthpb.HealthCheckResponse_ServingStatus
	var err error
	require.Eventually(t, func() bool { // the script's status is set by a 100 ms ticker
		got, err = grpcStatus(port)
		return err == nil && got == want
	}, 10*time.Second, 20*time.Millisecond, "gRPC health: got %v (error %v), want %v", got, err, want)
}

func TestServeAnswersItsScriptOnEveryEndpoint(t *testing.T) {
	p, err := FreePorts()
	require.NoError(t, err)
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	marker := filepath.Join(dir, "fail-once")
	base := []string{"--http=" + strconv.Itoa(p.HTTP), "--tcp=" + strconv.Itoa(p.TCP), "--grpc=" + strconv.Itoa(p.GRPC),
		"--ready-file=" + ready, "--fail-marker=" + marker}

	t.Run("not started yet", func(t *testing.T) {
		_, stop := start(t, append(base, "--start-after=1h")...)
		assert.Equal(t, http.StatusServiceUnavailable, httpCode(t, p.HTTP, "/started"))
		assert.Equal(t, http.StatusServiceUnavailable, httpCode(t, p.HTTP, "/ready"))
		assert.Equal(t, http.StatusOK, httpCode(t, p.HTTP, "/healthz"))
		requireGRPCStatus(t, p.GRPC, healthpb.HealthCheckResponse_SERVING)
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(p.TCP), 5*time.Second)
		require.NoError(t, err, "the TCP port accepts")
		_ = c.Close()
		assert.NoFileExists(t, ready, "not ready: no ready file for exec probes")
		require.NoError(t, stop())
	})

	t.Run("ready", func(t *testing.T) {
		out, stop := start(t, base...)
		assert.Equal(t, http.StatusOK, httpCode(t, p.HTTP, "/started"))
		assert.Equal(t, http.StatusOK, httpCode(t, p.HTTP, "/ready"))
		assert.Eventually(t, func() bool { _, err := os.Stat(ready); return err == nil }, 10*time.Second, 10*time.Millisecond,
			"the ready file appears")
		require.NoError(t, stop())
		assert.Contains(t, out.String(), "demo: SIGTERM, shutting down")
	})

	t.Run("liveness fails once per demo run", func(t *testing.T) {
		_, stop := start(t, append(base, "--fail-at=1ns")...)
		assert.Equal(t, http.StatusInternalServerError, httpCode(t, p.HTTP, "/healthz"))
		assert.Equal(t, http.StatusServiceUnavailable, httpCode(t, p.HTTP, "/ready"), "an unhealthy container is not ready")
		requireGRPCStatus(t, p.GRPC, healthpb.HealthCheckResponse_NOT_SERVING) // gRPC health follows liveness
		require.NoError(t, stop())
		require.FileExists(t, marker, "the failure is recorded")

		// The restarted container finds the marker and stays healthy.
		_, stop = start(t, append(base, "--fail-at=1ns")...)
		assert.Equal(t, http.StatusOK, httpCode(t, p.HTTP, "/healthz"))
		requireGRPCStatus(t, p.GRPC, healthpb.HealthCheckResponse_SERVING)
		require.NoError(t, stop())
	})
}

// A port that cannot be opened is an error naming the flag, and whatever serve had started before
// it (here the HTTP server, with its goroutine and its port) is stopped before serve returns:
// goleak checks the goroutine, and the port is free again.
func TestServeStopsWhatItStartedWhenAPortIsTaken(t *testing.T) {
	p, err := FreePorts()
	require.NoError(t, err)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	tcp := taken.Addr().(*net.TCPAddr).Port

	err = serve(context.Background(), []string{"--http=" + strconv.Itoa(p.HTTP), "--tcp=" + strconv.Itoa(tcp)}, &logtest.Buffer{}, &logtest.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--tcp="+strconv.Itoa(tcp))
	assert.Contains(t, err.Error(), "address already in use")

	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p.HTTP))
	require.NoError(t, err, "the HTTP port was released")
	_ = ln.Close()
}

func TestMainRejectsBadUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, Main(nil, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "usage: node __demo serve")

	stderr.Reset()
	assert.Equal(t, 1, Main([]string{"serve", "--http=abc"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-http")
	assert.Contains(t, stderr.String(), `"abc"`)
	assert.Contains(t, stderr.String(), "Usage of serve", "the flags' usage goes to Main's stderr")
}
