package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Arg is the hidden subcommand of the node binary that runs demo containers.
const Arg = "__demo"

// Main runs `node __demo serve ...`, a demo container. It returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprintln(stderr, "usage: node __demo serve [--http PORT] [--grpc PORT] [--tcp PORT] [script flags]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := serve(ctx, args[1:], stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	return 0
}

// serve runs the demo's servers until ctx ends (SIGTERM or SIGINT in Main) or one of them fails.
// It returns only once every goroutine it started has ended, also when a listener cannot be
// opened after others were: nothing it started outlives it.
func serve(ctx context.Context, args []string, out, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	httpPort := fs.Int("http", 0, "HTTP port (/started, /ready, /healthz); 0 = none")
	grpcPort := fs.Int("grpc", 0, "gRPC health port; 0 = none")
	tcpPort := fs.Int("tcp", 0, "TCP port accepting connections; 0 = none")
	readyFile := fs.String("ready-file", "", "create this file once ready, remove it while not ready (for exec probes)")
	marker := fs.String("fail-marker", "fail-once", "file recording that the liveness failure already happened")
	var sc Script
	fs.DurationVar(&sc.StartAfter, "start-after", 0, "answer /started with 503 before this")
	fs.DurationVar(&sc.UnreadyAt, "unready-at", 0, "become unready at this time")
	fs.DurationVar(&sc.UnreadyFor, "unready-for", 0, "stay unready this long")
	fs.DurationVar(&sc.FailAt, "fail-at", 0, "fail liveness from this time on (once per demo run)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	start := time.Now()
	_, statErr := os.Stat(*marker)
	failedBefore := statErr == nil
	var (
		mu       sync.Mutex
		last     State
		said     bool           // last has been printed
		recorded = failedBefore // the marker holds this run's liveness failure
	)
	state := func() State {
		st := sc.At(time.Since(start), failedBefore)
		mu.Lock()
		defer mu.Unlock()
		if !said || st != last {
			fmt.Fprintf(out, "%s demo: started=%t ready=%t healthy=%t\n", time.Now().Format("15:04:05"), st.Started, st.Ready, st.Healthy)
			last, said = st, true
		}
		if !st.Healthy && !recorded && *marker != "" {
			// Recorded at the first unhealthy answer, also when that is the very first one, so
			// the restarted container stays healthy.
			recorded = os.WriteFile(*marker, []byte("failed once\n"), 0o644) == nil
		}
		return st
	}

	ctx, cancel := context.WithCancel(ctx)
	errs := make(chan error, 3)
	var wg sync.WaitGroup
	var closers []func()
	defer func() { // on every return: stop the servers and the tickers, then wait for them
		cancel()
		for _, c := range closers {
			c()
		}
		wg.Wait()
	}()

	if *httpPort > 0 {
		mux := http.NewServeMux()
		answer := func(ok bool, w http.ResponseWriter, failCode int) {
			if ok {
				_, _ = io.WriteString(w, "ok\n")
				return
			}
			http.Error(w, http.StatusText(failCode), failCode)
		}
		mux.HandleFunc("/started", func(w http.ResponseWriter, _ *http.Request) {
			answer(state().Started, w, http.StatusServiceUnavailable)
		})
		mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) { answer(state().Ready, w, http.StatusServiceUnavailable) })
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
			answer(state().Healthy, w, http.StatusInternalServerError)
		})
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*httpPort)))
		if err != nil {
			return fmt.Errorf("--http=%d: %w", *httpPort, err)
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		wg.Go(func() { errs <- ignoreClosed(srv.Serve(ln)) })
		closers = append(closers, func() { _ = srv.Close() })
	}
	if *grpcPort > 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*grpcPort)))
		if err != nil {
			return fmt.Errorf("--grpc=%d: %w", *grpcPort, err)
		}
		hs := health.NewServer()
		gs := grpc.NewServer()
		healthpb.RegisterHealthServer(gs, hs)
		wg.Go(func() { errs <- gs.Serve(ln) })
		closers = append(closers, gs.Stop)
		wg.Go(func() { // keeps the gRPC health status in line with the script; ends with ctx
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				st := healthpb.HealthCheckResponse_SERVING
				if !state().Healthy {
					st = healthpb.HealthCheckResponse_NOT_SERVING
				}
				hs.SetServingStatus("", st)
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		})
	}
	if *tcpPort > 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*tcpPort)))
		if err != nil {
			return fmt.Errorf("--tcp=%d: %w", *tcpPort, err)
		}
		wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					errs <- ignoreClosed(err)
					return
				}
				_ = c.Close()
			}
		})
		closers = append(closers, func() { _ = ln.Close() })
	}
	if *readyFile != "" {
		wg.Go(func() { // mirrors readiness into a file for exec probes; ends with ctx
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				if state().Ready {
					_ = os.WriteFile(*readyFile, []byte("ready\n"), 0o644)
				} else {
					_ = os.Remove(*readyFile)
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		})
	}
	fmt.Fprintf(out, "%s demo: serving http=%d grpc=%d tcp=%d\n", start.Format("15:04:05"), *httpPort, *grpcPort, *tcpPort)
	state()
	select {
	case <-ctx.Done():
		fmt.Fprintf(out, "%s demo: SIGTERM, shutting down\n", time.Now().Format("15:04:05"))
	case err := <-errs:
		if err != nil {
			return err
		}
	}
	return nil
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
