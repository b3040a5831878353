package probes

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hostile targets: none may hold an attempt past its timeout (plus a small grace for teardown) or
// make it allocate in proportion to what the target sends.

const hostileGrace = 2 * time.Second

var chunk64K = bytes.Repeat([]byte("a"), 64<<10)

// endlessBody answers 200 and streams a body until the client goes away.
func endlessBody(c net.Conn) {
	readRequestHead(c)
	if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")); err != nil {
		return
	}
	for {
		if _, err := c.Write(chunk64K); err != nil {
			return
		}
	}
}

// neverAnswer reads the request and then waits for the client to give up.
func neverAnswer(c net.Conn) {
	readRequestHead(c)
	buf := make([]byte, 512)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// dribbleHeaders sends a status line and then one header byte per second.
func dribbleHeaders(c net.Conn) {
	readRequestHead(c)
	if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nX-Slow: ")); err != nil {
		return
	}
	buf := make([]byte, 1)
	for {
		if _, err := c.Write([]byte("z")); err != nil {
			return
		}
		// Wait a second, but return as soon as the client closes the connection.
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(buf); err != nil {
			var ne net.Error
			if !(errorsAs(err, &ne) && ne.Timeout()) {
				return
			}
		}
	}
}

// hugeHeader sends a 10 MB header value.
func hugeHeader(c net.Conn) {
	readRequestHead(c)
	if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nX-Big: ")); err != nil {
		return
	}
	for sent := 0; sent < 10<<20; sent += len(chunk64K) {
		if _, err := c.Write(chunk64K); err != nil {
			return
		}
	}
	_, _ = c.Write([]byte("\r\n\r\nok"))
}

// resetMidResponse promises 1000 bytes, sends 10 and resets the connection.
func resetMidResponse(c net.Conn) {
	readRequestHead(c)
	_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789"))
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// resetBeforeResponse resets the connection as soon as the request arrives.
func resetBeforeResponse(c net.Conn) {
	readRequestHead(c)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

func TestHostileHTTPTargets(t *testing.T) {
	for _, tc := range []struct {
		name       string
		serve      func(net.Conn)
		https      bool
		want       Result
		wantReason Reason
		wantOutput string
		wantErr    bool // a body that broke off: kubelet's probe error (BodyError)
		maxAlloc   uint64
	}{
		{name: "endless body", serve: endlessBody, want: Success, wantOutput: string(chunk64K[:MaxOutputLength]), maxAlloc: 8 << 20},
		{name: "accept and never answer", serve: neverAnswer, want: Failure, wantReason: ReasonTimeout},
		{name: "TLS: accept and never answer", serve: neverAnswer, https: true, want: Failure, wantReason: ReasonTimeout},
		{name: "headers dribbled 1 byte/s", serve: dribbleHeaders, want: Failure, wantReason: ReasonTimeout},
		{name: "10 MB header", serve: hugeHeader, want: Failure, wantReason: ReasonProtocol, maxAlloc: 4 << 20},
		{name: "reset mid-response", serve: resetMidResponse, want: Failure, wantReason: ReasonConnectionReset, wantErr: true},
		{name: "reset before response", serve: resetBeforeResponse, want: Failure, wantReason: ReasonConnectionReset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRawServer(t, tc.serve)
			url := s.URL()
			if tc.https {
				url = strings.Replace(url, "http://", "https://", 1)
			}
			spec := httpProbe(t, url, "/", 1)
			before := totalAlloc()
			out, err := New(nil).Probe(context.Background(), spec, Target{})
			allocated := totalAlloc() - before
			if tc.wantErr {
				var be *BodyError
				require.ErrorAs(t, err, &be)
				assert.Empty(t, out.Output, "kubelet's probe error carries no output")
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, out.Result, "output: %.200s", out.Output)
			assert.Equal(t, tc.wantReason, out.Reason, "output: %.200s", out.Output)
			if tc.wantOutput != "" {
				assert.Equal(t, tc.wantOutput, out.Output)
			}
			assert.LessOrEqual(t, len(out.Output), MaxOutputLength+200)
			assert.Less(t, out.Duration, Timeout(spec)+hostileGrace, "the attempt outlived its timeout")
			if tc.maxAlloc > 0 {
				assert.Less(t, allocated, tc.maxAlloc, "allocated %d bytes", allocated)
			}
		})
	}
}

// TestHostileRedirectLoop: a redirect loop to the same host ends after 10 redirects as a Failure.
func TestHostileRedirectLoop(t *testing.T) {
	var n atomic.Int32
	s := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("/loop/%d", n.Add(1)), http.StatusTemporaryRedirect)
	}))
	spec := httpProbe(t, s.URL, "/", 1)
	out, err := New(nil).Probe(context.Background(), spec, Target{})
	require.NoError(t, err)
	assert.Equal(t, Failure, out.Result)
	assert.Equal(t, ReasonRedirect, out.Reason)
	assert.Contains(t, out.Output, "stopped after 10 redirects")
	assert.Equal(t, int32(maxRedirects), n.Load(), "the first request and 9 followed redirects (kubelet: len(via) >= 10 stops)")
}

// TestHostileTLSSelfSigned: a self-signed certificate does not fail the probe (no verification).
func TestHostileTLSSelfSigned(t *testing.T) {
	s := newTLSServer(t, statusHandler(200))
	out, err := New(nil).Probe(context.Background(), httpProbe(t, s.URL, "/", 1), Target{})
	require.NoError(t, err)
	assert.Equal(t, Success, out.Result, out.Output)
}

// TestHostileGRPCNeverAnswers: a gRPC target that accepts and never speaks times out in time.
func TestHostileGRPCNeverAnswers(t *testing.T) {
	s := newRawServer(t, neverAnswer)
	port := s.ln.Addr().(*net.TCPAddr).Port
	out, err := New(nil).Probe(context.Background(), grpcProbe(port, nil, 1), Target{PodIP: "127.0.0.1"})
	require.NoError(t, err)
	assert.Equal(t, Failure, out.Result)
	assert.Equal(t, ReasonTimeout, out.Reason)
	assert.Less(t, out.Duration, time.Second+hostileGrace)
}
