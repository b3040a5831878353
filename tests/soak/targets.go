package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// targetServer answers every slot's probes as the schedule says at the moment of the probe: one
// HTTP server (/ready/N, /live/N), one gRPC health server (services ready-N, live-N), a listener per
// TCP slot and target that is open while the target is up, and a file per exec slot and target
// that exists while it is up.
type targetServer struct {
	sched   *Schedule
	start   time.Time
	execDir string

	http   *http.Server
	grpc   *grpc.Server
	tcp    map[string]*tcpTarget // "ready-N" / "live-N"
	files  map[string]bool       // exec files present
	errors atomic.Int64          // TCP listeners that could not be reopened (a port taken meanwhile)

	quit    chan struct{}
	toggler sync.WaitGroup // the goroutine that follows the schedule
	wg      sync.WaitGroup // servers and accept loops
}

// tcpTarget is one TCP slot's ready or live port; only the toggler goroutine touches it.
type tcpTarget struct {
	port int
	ln   net.Listener
}

func (ts *targetServer) elapsed() time.Duration { return time.Since(ts.start) }

// up is the schedule's answer for "ready-N" or "live-N" now.
func (ts *targetServer) up(what string, slot int) bool {
	if what == "ready" {
		return ts.sched.Ready(slot, ts.elapsed())
	}
	return ts.sched.Live(slot, ts.elapsed())
}

// parseTarget splits "ready-12" (or "ready/12") into its parts.
func (ts *targetServer) parseTarget(s string, sep string) (string, int, bool) {
	what, n, ok := strings.Cut(s, sep)
	if !ok || (what != "ready" && what != "live") {
		return "", 0, false
	}
	slot, err := strconv.Atoi(n)
	if err != nil || slot < 0 || slot >= len(ts.sched.Slots) {
		return "", 0, false
	}
	return what, slot, true
}

// startTargets starts every target; its start is the run's time zero (node starts right after).
func startTargets(sched *Schedule, execDir string) (*targetServer, Targets, error) {
	ts := &targetServer{sched: sched, start: time.Now(), execDir: execDir, tcp: map[string]*tcpTarget{}, files: map[string]bool{}, quit: make(chan struct{})}
	t := Targets{TCPReady: map[int]int{}, TCPLive: map[int]int{}, ExecDir: execDir}
	fail := func(err error) (*targetServer, Targets, error) {
		ts.Close()
		return nil, Targets{}, err
	}

	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	t.HTTPPort = httpLn.Addr().(*net.TCPAddr).Port
	ts.http = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		what, slot, ok := ts.parseTarget(strings.TrimPrefix(r.URL.Path, "/"), "/")
		switch {
		case !ok:
			http.NotFound(w, r)
		case ts.up(what, slot):
			_, _ = w.Write([]byte("ok\n"))
		default:
			http.Error(w, what+" target down by schedule", http.StatusServiceUnavailable)
		}
	})}
	ts.wg.Add(1)
	go func() { defer ts.wg.Done(); _ = ts.http.Serve(httpLn) }() // ends with Close

	grpcLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	t.GRPCPort = grpcLn.Addr().(*net.TCPAddr).Port
	ts.grpc = grpc.NewServer()
	healthpb.RegisterHealthServer(ts.grpc, healthServer{ts: ts})
	ts.wg.Add(1)
	go func() { defer ts.wg.Done(); _ = ts.grpc.Serve(grpcLn) }() // ends with Close

	// A TCP target's port is closed while the target is down, and must be free to reopen: outside
	// the ephemeral range, where the probes' own connections (node's) would take it meanwhile.
	port, lastPort, err := stablePorts()
	if err != nil {
		return fail(err)
	}
	for i := range sched.Slots {
		if sched.Slots[i].Kind != TCP {
			continue
		}
		for _, what := range []string{"ready", "live"} {
			tt := &tcpTarget{}
			for tt.ln == nil {
				if port > lastPort {
					return fail(fmt.Errorf("no free TCP port left below the ephemeral range (%d)", lastPort+1))
				}
				tt.port = port
				port++
				_ = tt.set(true, &ts.wg) // a port in use: try the next
			}
			ts.tcp[fmt.Sprintf("%s-%d", what, i)] = tt
			if what == "ready" {
				t.TCPReady[i] = tt.port
			} else {
				t.TCPLive[i] = tt.port
			}
		}
	}
	if err := os.MkdirAll(execDir, 0o755); err != nil {
		return fail(err)
	}
	ts.toggle()
	ts.toggler.Add(1)
	go func() { // the TCP and exec targets follow the schedule; ends with Close
		defer ts.toggler.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ts.quit:
				return
			case <-tick.C:
				ts.toggle()
			}
		}
	}()
	return ts, t, nil
}

// toggle opens or closes TCP listeners and creates or removes exec files as the schedule says now.
func (ts *targetServer) toggle() {
	for name, tt := range ts.tcp {
		what, slot, _ := ts.parseTarget(name, "-")
		if err := tt.set(ts.up(what, slot), &ts.wg); err != nil {
			ts.errors.Add(1)
		}
	}
	for i := range ts.sched.Slots {
		if ts.sched.Slots[i].Kind != Exec {
			continue
		}
		for _, what := range []string{"ready", "live"} {
			name := fmt.Sprintf("%s-%d", what, i)
			up := ts.up(what, i)
			if present, known := ts.files[name]; known && present == up {
				continue
			}
			path := filepath.Join(ts.execDir, name)
			var err error
			if up {
				err = os.WriteFile(path, []byte("up\n"), 0o644)
			} else if err = os.Remove(path); errors.Is(err, os.ErrNotExist) {
				err = nil
			}
			if err == nil {
				ts.files[name] = up
			}
		}
	}
}

// stablePorts is the range TCP targets take their ports from: from 20000 up to the start of the
// kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range).
func stablePorts() (first, last int, err error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("ip_local_port_range %q", b)
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 0, 0, fmt.Errorf("ip_local_port_range %q: %w", b, err)
	}
	first = 20000
	if low <= first+1000 {
		first = 1024
	}
	return first, low - 1, nil
}

// set opens (on its port) or closes the listener. An
// open listener accepts and closes every connection on a goroutine that ends when it is closed.
func (tt *tcpTarget) set(up bool, wg *sync.WaitGroup) error {
	switch {
	case up && tt.ln == nil:
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(tt.port)))
		if err != nil {
			return err
		}
		tt.ln, tt.port = ln, ln.Addr().(*net.TCPAddr).Port
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
			}
		}()
	case !up && tt.ln != nil:
		_ = tt.ln.Close()
		tt.ln = nil
	}
	return nil
}

// Close stops every target and waits for their goroutines.
func (ts *targetServer) Close() {
	select {
	case <-ts.quit:
	default:
		close(ts.quit)
	}
	if ts.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = ts.http.Shutdown(ctx)
		cancel()
	}
	if ts.grpc != nil {
		ts.grpc.Stop()
	}
	ts.toggler.Wait() // the listeners are ours alone now
	for _, tt := range ts.tcp {
		_ = tt.set(false, &ts.wg) // closing returns no error
	}
	ts.wg.Wait()
}

// healthServer is the gRPC health service of every gRPC slot.
type healthServer struct {
	healthpb.UnimplementedHealthServer
	ts *targetServer
}

func (h healthServer) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	what, slot, ok := h.ts.parseTarget(req.GetService(), "-")
	if !ok {
		return nil, status.Errorf(codes.NotFound, "unknown service %q", req.GetService())
	}
	if h.ts.up(what, slot) {
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING}, nil
}
