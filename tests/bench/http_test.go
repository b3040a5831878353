package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probeactor/probeactor/internal/bareprobe"
	"github.com/probeactor/probeactor/probes"
	"github.com/probeactor/probeactor/tests/conformance"
)

// targetEnv makes the test binary serve the HTTP probe target instead of running tests (the
// benchmark starts it as a child process, so that getrusage(RUSAGE_SELF) counts only the prober).
const targetEnv = "PROBEACTOR_BENCH_HTTP_TARGET"

// targetPath is what the probes GET; the target answers 200 "ok" to it.
const targetPath = "/healthz"

// serveTarget is the child process: an HTTP server on 127.0.0.1 that prints its port on stdout
// and exits when its stdin closes (the benchmark ended, or died).
func serveTarget() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe target: listen:", err)
		os.Exit(1)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != targetPath {
				http.NotFound(w, r)
				return
			}
			_, _ = io.WriteString(w, "ok")
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          nil,
	}
	go func() { _ = srv.Serve(ln) }() // ends with the process
	fmt.Printf("PORT %d\n", ln.Addr().(*net.TCPAddr).Port)
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// target is the running child process.
type target struct {
	port  int
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startTarget(b *testing.B) *target {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatalf("probe target: %v", err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), targetEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatalf("probe target: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatalf("probe target: %v", err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("probe target: start %s: %v", self, err)
	}
	t := &target{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err == nil {
		t.port, err = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "PORT ")))
	}
	if err != nil {
		t.stop()
		b.Fatalf("probe target: no port (%q): %v", line, err)
	}
	return t
}

func (t *target) stop() {
	_ = t.stdin.Close() // the target exits on EOF
	done := make(chan struct{})
	go func() { _ = t.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = t.cmd.Process.Kill()
		<-done
	}
}

func httpProbe(port int) *v1.Probe {
	return &v1.Probe{
		ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
			Host: "127.0.0.1", Port: intstr.FromInt(port), Path: targetPath, Scheme: v1.URISchemeHTTP}},
		TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1,
		FailureThreshold: 1000, // a slow probe on a loaded machine must not restart the container
	}
}

// httpCounter counts what the probes observed besides the lateness grid.
type httpCounter struct {
	failed atomic.Int64 // probes that did not succeed (the target always answers 200)
}

func BenchmarkProbeLoopHTTP(b *testing.B) {
	tg := startTarget(b)
	defer tg.stop()
	names := []string{"bare"}
	for _, im := range impls {
		names = append(names, im.name)
	}
	for _, n := range sizes(b, "PROBEACTOR_BENCH_HTTP_WORKERS", []int{500, 2000}) {
		for _, name := range names {
			b.Run(fmt.Sprintf("impl=%s/workers=%d", name, n), func(b *testing.B) {
				var start func(conformance.Env) (conformance.Driver, error)
				for _, im := range impls {
					if im.name == name {
						start = im.start
					}
				}
				benchHTTP(b, name, start, n, tg.port)
			})
		}
	}
}

// benchHTTP measures n workers probing the target with real HTTP GETs (period 1 s), like
// BenchmarkProbeLoop: through an implementation's Driver with the real probes.Prober, or, for bare,
// one goroutine and ticker per worker doing the same GET with net/http and nothing else.
func benchHTTP(b *testing.B, name string, start func(conformance.Env) (conformance.Driver, error), n, port int) {
	grid := newLatencyGrid(n)
	var cnt httpCounter
	spec := httpProbe(port)
	fixtures := podsWith(n, 0, "h", spec)
	before := memInUse()

	statusFirst := benchStatusFirst(b)
	setupStart, stopSetupProfile := time.Now(), startCPUProfile(b, profileName("http-"+name, n)+"-setup")
	var stop func()
	if start == nil {
		stop = runBare(n, port, grid, &cnt)
	} else {
		prober := probes.New(nil)
		d, err := start(conformance.Env{
			Prober: func(ctx context.Context, spec *v1.Probe, t probes.Target) (probes.Outcome, error) {
				grid.observe(t, time.Now())
				out, err := prober.Probe(ctx, spec, t)
				if err != nil || out.Result != probes.Success {
					cnt.failed.Add(1)
				}
				return out, err
			},
			Runtime:      newRuntime(),
			Rand:         rand.Float64,
			JitterWindow: benchJitterWindow(b),
		})
		if err != nil {
			b.Fatal(err)
		}
		stop = d.Stop
		feed(b, d, fixtures, statusFirst)
	}
	defer stop()
	measureLoop(b, profileName("http-"+name, n), n, grid, before, setupStart, stopSetupProfile, fixtures, httpWindow)
	b.ReportMetric(float64(cnt.failed.Load()), "failed-probes")
}

// runBare is the physical floor of a Go HTTP prober: per worker one goroutine and one ticker,
// started with the same jitter, doing the same GET (kubelet's headers, a fresh connection closed
// with a reset, the same 1 s timeout and 10 KiB body limit) with one shared net/http client, and
// nothing else. It returns the function that stops the goroutines and waits for them.
func runBare(n, port int, grid *latencyGrid, cnt *httpCounter) func() {
	client := bareprobe.NewClient(time.Second)
	url := fmt.Sprintf("http://127.0.0.1:%d%s", port, targetPath)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		id := probes.Target{ContainerID: string(workerID(i))}
		go func() {
			defer wg.Done()
			j := time.NewTimer(time.Duration(rand.Float64() * float64(loopPeriod)))
			select {
			case <-j.C:
			case <-quit:
				j.Stop()
				return
			}
			tk := time.NewTicker(loopPeriod)
			defer tk.Stop()
			buf := make([]byte, probes.MaxOutputLength+1)
			for {
				grid.observe(id, time.Now())
				if !bareprobe.Get(client, url, buf) {
					cnt.failed.Add(1)
				}
				select {
				case <-tk.C:
				case <-quit:
					return
				}
			}
		}()
	}
	return func() {
		close(quit)
		wg.Wait()
		client.CloseIdleConnections()
	}
}
