//go:build unix

package probes

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestDialerLinger: probe sockets carry kubelet's SO_LINGER {on, 1 s}.
func TestDialerLinger(t *testing.T) {
	s := newRawServer(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	for _, d := range []dialer{{}, {graceful: true}} {
		conn, err := d.DialContext(context.Background(), "tcp", s.ln.Addr().String(), time.Second)
		require.NoError(t, err)
		sc, ok := conn.(syscall.Conn)
		require.True(t, ok)
		raw, err := sc.SyscallConn()
		require.NoError(t, err)
		var l *unix.Linger
		var gerr error
		require.NoError(t, raw.Control(func(fd uintptr) {
			l, gerr = unix.GetsockoptLinger(int(fd), unix.SOL_SOCKET, unix.SO_LINGER)
		}))
		require.NoError(t, gerr)
		assert.Equal(t, int32(1), l.Onoff)
		assert.Equal(t, int32(lingerSeconds), l.Linger)
		require.NoError(t, conn.Close())
	}
}

// TestTCPProbeClose: by default the target sees the probe's connection reset (no TIME_WAIT left);
// with WithGracefulClose it sees kubelet's orderly close (EOF).
func TestTCPProbeClose(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      []Option
		wantReset bool
	}{
		{"abortive (default)", nil, true},
		{"graceful", []Option{WithGracefulClose()}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			readErr := make(chan error, 1)
			s := newRawServer(t, func(c net.Conn) {
				_, err := io.Copy(io.Discard, c)
				if err == nil {
					err = io.EOF // io.Copy reports a clean EOF as nil
				}
				readErr <- err
			})
			addr := s.ln.Addr().(*net.TCPAddr)
			out, err := New(nil, tc.opts...).Probe(context.Background(), tcpProbe("127.0.0.1", addr.Port, 1), Target{})
			require.NoError(t, err)
			require.Equal(t, Success, out.Result)
			got := <-readErr
			assert.Equal(t, tc.wantReset, errors.Is(got, syscall.ECONNRESET), "server read error: %v", got)
		})
	}
}
