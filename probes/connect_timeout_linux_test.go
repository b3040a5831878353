package probes

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// fullBacklogListener returns a loopback address whose connects hang: a listener with backlog 0
// that never accepts, its accept queue filled first. Linux then drops further SYNs (the client
// retransmits and waits) instead of refusing, which is what an unreachable or overloaded target
// looks like — without leaving loopback.
func fullBacklogListener(t *testing.T) *net.TCPAddr {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	f := os.NewFile(uintptr(fd), "full-backlog-listener")
	t.Cleanup(func() { _ = f.Close() })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*syscall.SockaddrInet4).Port}

	// Fill the accept queue until a connect hangs (with backlog 0 Linux queues one connection).
	for i := 0; ; i++ {
		require.Less(t, i, 64, "the accept queue never filled: connects to %s keep succeeding", addr)
		c, err := net.DialTimeout("tcp", addr.String(), 200*time.Millisecond)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return addr
		}
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
	}
}

// TestConnectTimeout: a connect that hangs is a Failure with ReasonTimeout once the probe's
// timeout passes, for TCP and HTTP alike (kubelet's "dial tcp ...: i/o timeout" and
// "Client.Timeout exceeded").
func TestConnectTimeout(t *testing.T) {
	addr := fullBacklogListener(t)
	for _, tc := range []struct {
		name string
		spec *v1.Probe
		want string
	}{
		{"tcp", tcpProbe("127.0.0.1", addr.Port, 1), "dial tcp " + addr.String() + ": i/o timeout"},
		{"http", &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
			Host: "127.0.0.1", Port: intstr.FromInt(addr.Port), Path: "/", Scheme: v1.URISchemeHTTP,
		}}}, "Client.Timeout exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := New(nil).Probe(context.Background(), tc.spec, Target{})
			require.NoError(t, err)
			assert.Equal(t, Failure, out.Result, out.Output)
			assert.Equal(t, ReasonTimeout, out.Reason, out.Output)
			assert.Contains(t, out.Output, tc.want)
			assert.GreaterOrEqual(t, out.Duration, Timeout(tc.spec)-50*time.Millisecond, "gave up before the timeout: %s", out.Output)
			assert.Less(t, out.Duration, Timeout(tc.spec)+hostileGrace, "the attempt outlived its timeout")
		})
	}
}
