package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/util/cert"

	"github.com/probeactor/probeactor/internal/sysfault"
)

// targets are the live loopback endpoints every case probes, each shared by both implementations.
type targets struct {
	http, https, h2 *httptest.Server
	h2c             *httptest.Server // HTTP/1.1 and, with prior knowledge, HTTP/2 in cleartext
	httpPort        int
	httpsPort       int
	h2Port          int
	h2cPort         int
	raw             map[string]int // raw HTTP responders by name → port
	grpcPort        int            // health service (see healthServer)
	grpcNoHealth    int            // a gRPC server without the health service
	grpcTLSPort     int            // the health service over TLS (a self-signed certificate)
	closedPort      int            // nothing listens
	hangPort        int            // connects hang (full accept queue)
	silentPort      int            // accepts and never says anything
	closeKinds      *closeRecorder // a TCP target that records how each connection ended
	closeKindsPort  int
}

// stall waits for the client to go away (or 10 s), so a slow target never outlives its case.
func stall(ctx context.Context) {
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func port(t testing.TB, addr net.Addr) int {
	t.Helper()
	return addr.(*net.TCPAddr).Port
}

func quietServer(h http.Handler) *httptest.Server {
	s := httptest.NewUnstartedServer(h)
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // handlers that panic or stall on purpose stay quiet
	return s
}

func newTargets(t *testing.T) *targets {
	t.Helper()
	tg := &targets{raw: map[string]int{}}

	tg.https = quietServer(http.HandlerFunc(echo))
	tg.https.StartTLS()
	t.Cleanup(tg.https.Close)
	tg.httpsPort = port(t, tg.https.Listener.Addr())

	tg.h2 = quietServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/header/big" {
			w.Header().Set("X-Big", strings.Repeat("h", 100<<10))
		}
		echo(w, r)
	}))
	tg.h2.EnableHTTP2 = true
	tg.h2.StartTLS()
	t.Cleanup(tg.h2.Close)
	tg.h2Port = port(t, tg.h2.Listener.Addr())

	tg.h2c = quietServer(tg.mux())
	tg.h2c.Config.Protocols = new(http.Protocols)
	tg.h2c.Config.Protocols.SetHTTP1(true)
	tg.h2c.Config.Protocols.SetUnencryptedHTTP2(true)
	tg.h2c.Start()
	t.Cleanup(tg.h2c.Close)
	tg.h2cPort = port(t, tg.h2c.Listener.Addr())

	tg.http = quietServer(tg.mux())
	tg.http.Start()
	t.Cleanup(tg.http.Close)
	tg.httpPort = port(t, tg.http.Listener.Addr())

	for name, response := range rawResponses {
		tg.raw[name] = rawServer(t, response)
	}
	tg.grpcPort = grpcServer(t, true, false)
	tg.grpcNoHealth = grpcServer(t, false, false)
	tg.grpcTLSPort = grpcServer(t, true, true)
	tg.closedPort = closedPort(t)
	tg.hangPort = hangingPort(t)
	tg.silentPort = rawServer(t, rawResponse{silent: true})
	tg.closeKinds = &closeRecorder{}
	tg.closeKindsPort = tg.closeKinds.listen(t)
	return tg
}

// echo answers 200 with the request as the target saw it: protocol, request URI, Host and every
// header in sorted order.
func echo(w http.ResponseWriter, r *http.Request) {
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "%s %s\nHost: %s\n", r.Proto, r.RequestURI, r.Host)
	for _, k := range names {
		for _, v := range r.Header[k] {
			fmt.Fprintf(w, "%s: %s\n", k, v)
		}
	}
}

func (tg *targets) mux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("/", echo)
	m.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.PathValue("code"))
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "status body")
	})
	m.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("b", 20<<10))
	})
	m.HandleFunc("/big500", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, strings.Repeat("e", 20<<10))
	})
	m.HandleFunc("/header/big", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("h", 100<<10))
		_, _ = io.WriteString(w, "big header")
	})
	m.HandleFunc("/header/ok", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Fair", strings.Repeat("h", 32<<10))
		_, _ = io.WriteString(w, "fair header")
	})
	m.HandleFunc("/slow/headers", func(_ http.ResponseWriter, r *http.Request) { stall(r.Context()) })
	m.HandleFunc("/slow/body", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		stall(r.Context())
	})
	m.HandleFunc("/panic", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	redirect := func(path, to string, code int) {
		m.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, code) })
	}
	redirect("/redirect/same", "/status/200", http.StatusFound)
	redirect("/redirect/301", "/status/204", http.StatusMovedPermanently)
	redirect("/redirect/307-to-500", "/status/500", http.StatusTemporaryRedirect)
	redirect("/redirect/308-to-404", "/status/404", http.StatusPermanentRedirect)
	redirect("/redirect/other-host", "http://localhost:"+strconv.Itoa(tg.httpPort)+"/", http.StatusFound)
	redirect("/redirect/other-port", "https://127.0.0.1:"+strconv.Itoa(tg.httpsPort)+"/from-redirect", http.StatusFound)
	redirect("/redirect/loop", "/redirect/loop", http.StatusFound)
	m.HandleFunc("/redirect/no-location", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusFound)
		_, _ = io.WriteString(w, "moved somewhere")
	})
	return m
}

// rawResponse is what a raw HTTP responder does after reading a request head.
type rawResponse struct {
	write  string // bytes to send
	reset  bool   // then close with RST
	silent bool   // accept and say nothing until the client leaves
	linger bool   // then keep the connection open until the client closes it
}

var rawResponses = map[string]rawResponse{
	"garbage":           {write: "garbage\r\n\r\n"},
	"http10":            {write: "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello from 1.0"},
	"http10-404":        {write: "HTTP/1.0 404 Not Found\r\n\r\nnope"},
	"no-length":         {write: "HTTP/1.1 200 OK\r\n\r\nuntil close"},
	"short-body":        {write: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789abcdef"},
	"short-body-500":    {write: "HTTP/1.1 500 Oops\r\nContent-Length: 100\r\n\r\nshort"},
	"chunk-cut":         {write: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"},
	"chunked":           {write: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"},
	"cut-after-limit":   {write: "HTTP/1.1 200 OK\r\nContent-Length: 20000\r\n\r\n" + strings.Repeat("y", 12000)},
	"reset-mid-body":    {write: "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789", reset: true},
	"close-no-response": {},
	"reset-no-response": {reset: true},
	"bad-status-code":   {write: "HTTP/1.1 abc OK\r\n\r\n"},
	"status-599":        {write: "HTTP/1.1 599 Whatever\r\nContent-Length: 2\r\n\r\nok"},
	// An HTTP/1.1 server's answer to h2c's preface ("PRI * HTTP/2.0"), the connection left open: an
	// HTTP/1.1-only server would also close it, and then whether the client's write or its read fails
	// first (two different errors) is a race in both implementations.
	"http11-to-preface": {write: "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", linger: true},
}

// rawServer serves r on a loopback port until the test ends.
func rawServer(t *testing.T, r rawResponse) int {
	t.Helper()
	return serveTCP(t, func(c net.Conn) {
		if r.silent {
			_, _ = io.Copy(io.Discard, c)
			return
		}
		readHead(c)
		_, _ = io.WriteString(c, r.write)
		if r.reset {
			_ = c.(*net.TCPConn).SetLinger(0)
		}
		if r.linger {
			_, _ = io.Copy(io.Discard, c) // until the client closes (or readHead's deadline passes)
		}
	})
}

// serveTCP runs handle for every connection to a new loopback port until the test ends; at the end
// the listener and every connection are closed and the handlers waited for.
func serveTCP(t *testing.T, handle func(net.Conn)) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	wg.Add(1)
	go func() { // ends when the listener is closed
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() { // ends when handle returns (at the latest once the connection is closed)
				defer wg.Done()
				defer func() {
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
					_ = c.Close()
				}()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return port(t, ln.Addr())
}

// readHead reads a request head (up to the blank line), or until the connection fails.
func readHead(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var tail []byte
	buf := make([]byte, 1024)
	for !strings.Contains(string(tail), "\r\n\r\n") {
		n, err := c.Read(buf)
		tail = append(tail, buf[:n]...)
		if err != nil {
			return
		}
	}
}

// closedPort returns a loopback port that refuses connects (sysfault.RefusingPort: held, so no
// other test process can start listening on it meanwhile).
func closedPort(t *testing.T) int {
	t.Helper()
	port, closePort, err := sysfault.RefusingPort()
	require.NoError(t, err)
	t.Cleanup(closePort)
	return port
}

// hangingPort returns a loopback port whose connects hang (sysfault.HangingPort).
func hangingPort(t *testing.T) int {
	t.Helper()
	port, closePort, err := sysfault.HangingPort()
	require.NoError(t, err)
	t.Cleanup(closePort)
	return port
}

// healthServer answers Check by service name: "" SERVING, "not-serving", "unknown-status" and
// "service-unknown" with those statuses, "slow" only once the deadline has passed, "internal" with
// an Internal error, anything else NotFound (as grpc's own health server does).
type healthServer struct {
	healthpb.UnimplementedHealthServer
}

func (healthServer) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	statuses := map[string]healthpb.HealthCheckResponse_ServingStatus{
		"":                healthpb.HealthCheckResponse_SERVING,
		"not-serving":     healthpb.HealthCheckResponse_NOT_SERVING,
		"unknown-status":  healthpb.HealthCheckResponse_UNKNOWN,
		"service-unknown": healthpb.HealthCheckResponse_SERVICE_UNKNOWN,
	}
	switch req.GetService() {
	case "slow":
		stall(ctx)
		if ctx.Err() == nil {
			return nil, status.Error(codes.Unavailable, "stalled for 10 s")
		}
		// As grpc-go's own handlers do: the server may see the deadline pass before the client
		// does, and then its answer, not the client's timer, ends the call.
		return nil, status.FromContextError(ctx.Err()).Err()
	case "internal":
		return nil, status.Error(codes.Internal, "health store is on fire")
	default:
	}
	st, ok := statuses[req.GetService()]
	if !ok {
		return nil, status.Error(codes.NotFound, "unknown service")
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

// grpcServer serves gRPC on a loopback port, with or without the health service, in plaintext or
// over TLS with a self-signed certificate for 127.0.0.1.
func grpcServer(t *testing.T, withHealth, overTLS bool) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var opts []grpc.ServerOption
	if overTLS {
		certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
		require.NoError(t, err)
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		require.NoError(t, err)
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}})))
	}
	s := grpc.NewServer(opts...)
	if withHealth {
		healthpb.RegisterHealthServer(s, healthServer{})
	}
	done := make(chan struct{})
	go func() { // ends when the server stops
		defer close(done)
		_ = s.Serve(ln)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
	return port(t, ln.Addr())
}

// closeRecorder is a TCP target that records, per accepted connection, how the client ended it:
// "EOF" (FIN) or "reset" (RST).
type closeRecorder struct {
	mu    sync.Mutex
	kinds []string
	seen  chan struct{}
}

func (r *closeRecorder) listen(t *testing.T) int {
	t.Helper()
	r.seen = make(chan struct{}, 16)
	return serveTCP(t, func(c net.Conn) {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.Copy(io.Discard, c)
		kind := "EOF"
		if errors.Is(err, syscall.ECONNRESET) {
			kind = "reset"
		} else if err != nil {
			kind = err.Error()
		}
		r.mu.Lock()
		r.kinds = append(r.kinds, kind)
		r.mu.Unlock()
		r.seen <- struct{}{}
	})
}

// next waits for the next connection's end and returns how it ended.
func (r *closeRecorder) next(t *testing.T) string {
	t.Helper()
	select {
	case <-r.seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the target never saw the probe's connection end")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.kinds[0]
	r.kinds = r.kinds[1:]
	return k
}

// pendingDials observes connects to port still in progress (SYN_SENT in /proc/net/tcp): the returned
// function reports whether the attempt left one more than there was before it, waiting up to 2 s
// for a cancelled dial to be torn down.
func pendingDials(port int) func(t *testing.T, tg *targets) func() string {
	count := func(t *testing.T) int {
		b, err := os.ReadFile("/proc/net/tcp")
		require.NoError(t, err)
		n := 0
		suffix := fmt.Sprintf(":%04X", port)
		for _, l := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(l)
			if len(f) > 3 && f[3] == "02" && strings.HasSuffix(f[2], suffix) {
				n++
			}
		}
		return n
	}
	return func(t *testing.T, _ *targets) func() string {
		before := count(t)
		return func() string {
			deadline := time.Now().Add(2 * time.Second)
			for count(t) > before {
				if time.Now().After(deadline) {
					return "the dial goes on"
				}
				time.Sleep(20 * time.Millisecond) // polling the kernel's socket table, not an actor
			}
			return "the dial ended"
		}
	}
}
