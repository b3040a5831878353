package bareprobe

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/probeactor/probeactor/probes"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Get sends kubelet's headers, reads the body up to buf's length and judges by the status.
func TestGet(t *testing.T) {
	var ua, accept string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua, accept = r.Header.Get("User-Agent"), r.Header.Get("Accept")
		switch r.URL.Path {
		case "/ok":
			_, _ = w.Write([]byte(strings.Repeat("x", 100)))
		case "/redirect-ish":
			w.WriteHeader(http.StatusNotModified)
		default:
			http.Error(w, "down", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	c := NewClient(time.Second)
	defer c.CloseIdleConnections()
	buf := make([]byte, 10)
	assert.True(t, Get(c, srv.URL+"/ok", buf), "200, a body longer than the limit")
	assert.Equal(t, strings.Repeat("x", 10), string(buf))
	assert.Equal(t, probes.UserAgent, ua)
	assert.Equal(t, "*/*", accept)
	assert.True(t, Get(c, srv.URL+"/redirect-ish", buf), "304 is a success, as kubelet's")
	assert.False(t, Get(c, srv.URL+"/down", buf), "503")
	assert.False(t, Get(c, "http://127.0.0.1:1/", buf), "nobody listens")
	assert.False(t, Get(c, "://bad", buf), "an unparsable URL")
}

// A connection from ResetDialer closes with a reset: the peer reads ECONNRESET, not EOF.
func TestResetDialerResetsOnClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	conn, err := ResetDialer(time.Second)(context.Background(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	peer := <-accepted
	require.NotNil(t, peer)
	defer peer.Close()
	require.NoError(t, conn.Close())
	_ = peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = peer.Read(make([]byte, 1))
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.ECONNRESET)

	_, err = ResetDialer(time.Second)(context.Background(), "tcp", "127.0.0.1:1")
	assert.Error(t, err, "nobody listens")
}
