package probes

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// hostPort splits an httptest server's URL into host and port.
func hostPort(t testing.TB, rawURL string) (string, int) {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	return u.Hostname(), port
}

// httpProbe builds an httpGet probe aimed at rawURL's host and port with the given path.
func httpProbe(t testing.TB, rawURL, path string, timeoutSeconds int32, headers ...v1.HTTPHeader) *v1.Probe {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	host, port := hostPort(t, rawURL)
	scheme := v1.URISchemeHTTP
	if u.Scheme == "https" {
		scheme = v1.URISchemeHTTPS
	}
	return &v1.Probe{
		TimeoutSeconds: timeoutSeconds,
		ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
			Host: host, Port: intstr.FromInt(port), Path: path, Scheme: scheme, HTTPHeaders: headers,
		}},
	}
}

func tcpProbe(host string, port int, timeoutSeconds int32) *v1.Probe {
	return &v1.Probe{
		TimeoutSeconds: timeoutSeconds,
		ProbeHandler:   v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Host: host, Port: intstr.FromInt(port)}},
	}
}

func execProbe(timeoutSeconds int32, cmd ...string) *v1.Probe {
	return &v1.Probe{
		TimeoutSeconds: timeoutSeconds,
		ProbeHandler:   v1.ProbeHandler{Exec: &v1.ExecAction{Command: cmd}},
	}
}

// newServer starts an httptest server for h and closes it at the end of the test.
func newServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // handlers that panic on purpose stay quiet
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// rawServer is a TCP listener on 127.0.0.1:0 whose connections are handled by serve; Close (run at
// cleanup) closes the listener and every connection and waits for the handlers to return.
type rawServer struct {
	ln     net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
}

func newRawServer(t testing.TB, serve func(net.Conn)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &rawServer{ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				_ = c.Close()
				return
			}
			s.conns[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	t.Cleanup(s.Close)
	return s
}

func (s *rawServer) URL() string { return "http://" + s.ln.Addr().String() }

func (s *rawServer) Close() {
	_ = s.ln.Close()
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// readRequestHead reads until the end of an HTTP request head (blank line) or an error.
func readRequestHead(c net.Conn) {
	buf := make([]byte, 1)
	var last [4]byte
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
		last[0], last[1], last[2], last[3] = last[1], last[2], last[3], buf[0]
		if string(last[:]) == "\r\n\r\n" {
			return
		}
	}
}

// waitCtx sleeps d or until ctx ends (handlers that must not outlive their client).
func waitCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// newTLSServer starts an httptest TLS server (self-signed certificate) for h.
func newTLSServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

func errorsAs(err error, target any) bool { return errors.As(err, target) }
