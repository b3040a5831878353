package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests in this file prove the guarantees of README's "HTTP API" section: what a client can make
// the node hold is bounded, and misbehaving clients do not take the API down.

func rawRequest(t *testing.T, base, req string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = io.WriteString(conn, req)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestRequestHeadersAreCappedAt64KiB(t *testing.T) {
	env := newEnv(t)
	base, _ := env.start(t, Options{})
	for _, tc := range []struct {
		size int
		code int
	}{
		{32 << 10, http.StatusOK},
		{100 << 10, http.StatusRequestHeaderFieldsTooLarge},
		{1 << 20, http.StatusRequestHeaderFieldsTooLarge},
	} {
		t.Run(fmt.Sprint(tc.size), func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, base+"/healthz", nil)
			require.NoError(t, err)
			req.Header.Set("X-Big", strings.Repeat("a", tc.size))
			resp, err := http.DefaultClient.Do(req)
			if tc.code != http.StatusOK && err != nil {
				// The server may answer 431 and close before the client finished sending.
				assert.NotContains(t, err.Error(), "timeout")
				return
			}
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, tc.code, resp.StatusCode, string(body))
		})
	}
}

func TestRequestBodiesAreRefused(t *testing.T) {
	env := newEnv(t)
	base, _ := env.start(t, Options{})
	resp := rawRequest(t, base, "GET /pods HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nabc")
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Equal(t, "request body not allowed: node's API is read-only and takes no body\n", string(body))
	assert.True(t, resp.Close, "the connection closes: the body is not drained")

	resp = rawRequest(t, base, "GET /pods HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

	resp = rawRequest(t, base, "DELETE /pods/default/web HTTP/1.1\r\nHost: x\r\n\r\n")
	body, _ = io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
	assert.Contains(t, string(body), `method "DELETE" not allowed: node's API is read-only`)
}

func TestProfilingIsOffByDefault(t *testing.T) {
	env := newEnv(t)
	off, _ := env.start(t, Options{})
	on, _ := env.start(t, Options{Profiling: true})
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline"} {
		code, body := get(t, off+path)
		assert.Equal(t, http.StatusNotFound, code, path)
		assert.Contains(t, body, "404 page not found", path)
	}
	code, body := get(t, on+"/debug/pprof/")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "goroutine")
	code, body = get(t, on+"/debug/pprof/goroutine?debug=1")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "goroutine profile:")
	code, _ = get(t, on+"/debug/pprof/heap")
	assert.Equal(t, http.StatusOK, code)
}

func TestConcurrentFollowsAreCapped(t *testing.T) {
	env := newEnv(t)
	base, _ := env.start(t, Options{MaxFollows: 2})
	follow := base + "/containerLogs/default/web/app?follow=true"
	var open []*http.Response
	for range 2 {
		resp, err := http.Get(follow)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		_, err = io.ReadAtLeast(resp.Body, make([]byte, 4), 4) // streaming
		require.NoError(t, err)
		open = append(open, resp)
	}
	resp, err := http.Get(follow)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "5", resp.Header.Get("Retry-After"))
	assert.Equal(t, "too many log streams followed at once (limit 2): retry later, or read the log without follow=true\n", string(body))

	code, text := get(t, base+"/containerLogs/default/web/app")
	assert.Equal(t, http.StatusOK, code, "reading without follow is not capped")
	assert.Equal(t, "one\ntwo\nthree\n", text)

	open[0].Body.Close() // a client leaving frees its slot
	require.Eventually(t, func() bool {
		resp, err := http.Get(follow + "&limitBytes=3")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 10*time.Millisecond)
	open[1].Body.Close()
}

// A client that asks for a big log (or follows one) and stops reading does not pin the handler's
// goroutine, its file or a follow slot: its write deadline expires and the connection is dropped,
// while the client still holds its end open.
func TestAClientThatStopsReadingIsDropped(t *testing.T) {
	env := newEnv(t)
	big, err := os.OpenFile(env.cur, os.O_WRONLY, 0)
	require.NoError(t, err)
	require.NoError(t, big.Truncate(64<<20)) // more than any socket buffers hold
	require.NoError(t, big.Close())
	base, _ := env.start(t, Options{WriteStall: 100 * time.Millisecond, MaxFollows: 1})
	code, _ := get(t, base+"/healthz") // the server's accept loop is up
	require.Equal(t, http.StatusOK, code)
	http.DefaultClient.CloseIdleConnections()
	for _, query := range []string{"", "?follow=true"} {
		t.Run("query="+query, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4096))
			_, err = fmt.Fprintf(conn, "GET /containerLogs/default/web/app%s HTTP/1.1\r\nHost: x\r\n\r\n", query)
			require.NoError(t, err)
			require.Eventually(t, func() bool { return goroutines("(*server).logs") == 1 }, 10*time.Second, time.Millisecond, "the request is being served")
			// Never read: the server's writes block, then time out.
			require.Eventually(t, func() bool { return goroutines("(*server).logs") == 0 && goroutines("net/http.(*conn).serve") == 0 }, 30*time.Second, 10*time.Millisecond,
				"the handler's and the connection's goroutines end although the client still holds the connection")
			if query != "" {
				resp, err := http.Get(base + "/containerLogs/default/web/app?follow=true&limitBytes=3")
				require.NoError(t, err)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				assert.Equal(t, http.StatusOK, resp.StatusCode, "the follow slot was freed")
				http.DefaultClient.CloseIdleConnections()
			}
		})
	}
}

// goroutines counts the goroutines whose stack contains fn.
func goroutines(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			count++
		}
	}
	return count
}

// Stop ends follows that would otherwise stream forever.
func TestStopEndsFollows(t *testing.T) {
	env := newEnv(t)
	base, srv := env.start(t, Options{})
	resp, err := http.Get(base + "/containerLogs/default/web/app?follow=true")
	require.NoError(t, err)
	defer resp.Body.Close()
	_, err = io.ReadAtLeast(resp.Body, make([]byte, 4), 4)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.Stop(ctx), "returns before its deadline: the follow ended")
	_, err = io.ReadAll(resp.Body)
	assert.NoError(t, err, "the stream ends cleanly")
}

// slowloris opens n connections that each send half a request header and then nothing; they are
// closed at cleanup.
func slowloris(t testing.TB, base string, n int) {
	t.Helper()
	for i := range n {
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		require.NoError(t, err, "connection %d", i)
		t.Cleanup(func() { conn.Close() })
		_, err = io.WriteString(conn, "GET /pods HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		require.NoError(t, err)
	}
}

// 800 connections dribbling their headers do not stop /pods answering; ReadHeaderTimeout then
// closes them.
func TestSlowlorisDoesNotStopTheAPI(t *testing.T) {
	env := newEnv(t)
	base, _ := env.start(t, Options{ReadHeaderTimeout: 2 * time.Second})
	slowloris(t, base, 800)
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	for range 20 {
		resp, err := client.Get(base + "/pods")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	// The slow connections are cut after ReadHeaderTimeout: reading one ends (timeout answer or EOF).
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "GET /pods HTTP/1.1\r\n")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = io.ReadAll(conn)
	assert.NoError(t, err, "the server closed the connection (not our 30 s read deadline)")
}

// A keep-alive connection with no next request is closed after IdleTimeout.
func TestIdleConnectionsAreClosed(t *testing.T) {
	env := newEnv(t)
	base, _ := env.start(t, Options{IdleTimeout: 100 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.False(t, resp.Close, "kept alive")
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = r.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "closed by the server, not by our 30 s deadline")
}

// The limits README promises are the defaults node runs with.
func TestDefaultLimits(t *testing.T) {
	s := New(Options{})
	assert.Equal(t, 64<<10, s.http.MaxHeaderBytes)
	assert.Equal(t, 10*time.Second, s.http.ReadHeaderTimeout)
	assert.Equal(t, 2*time.Minute, s.http.IdleTimeout)
	assert.Zero(t, s.http.ReadTimeout, "would cut follows")
	assert.Zero(t, s.http.WriteTimeout, "would cut follows; WriteStall bounds each write instead")
	o := Options{}
	o.setDefaults()
	assert.Equal(t, 10*time.Second, o.WriteStall)
	assert.Equal(t, 16, o.MaxFollows)
	s.cancel()
}
