package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/probeactor/probeactor/internal/bareprobe"
	"github.com/probeactor/probeactor/probes"
)

// Period and Timeout are every probe's, in both probers.
const (
	Period  = time.Second
	Timeout = time.Second
)

// bareClient is the floor of a Go prober: per probe one goroutine and one ticker, the same GET or
// TCP connect as node's probes, and nothing else.
type bareClient struct {
	http           *http.Client
	httpURL        string // up to the pod index
	tcpAddr        string
	failed, probed atomic.Int64
}

func newBareClient(httpAddr, tcpAddr string) *bareClient {
	return &bareClient{
		http:    bareprobe.NewClient(Timeout),
		httpURL: "http://" + httpAddr + ReadyPrefix,
		tcpAddr: tcpAddr,
	}
}

// run starts pods × (HTTP, TCP) probe goroutines, each starting at a random phase within the
// period, and returns the function that stops them and waits for them. Every goroutine ends on
// stop.
func (c *bareClient) run(pods int) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	loop := func(probe func() bool) {
		defer wg.Done()
		j := time.NewTimer(rand.N(Period))
		select {
		case <-j.C:
		case <-quit:
			j.Stop()
			return
		}
		tk := time.NewTicker(Period)
		defer tk.Stop()
		for {
			if !probe() {
				c.failed.Add(1)
			}
			c.probed.Add(1)
			select {
			case <-tk.C:
			case <-quit:
				return
			}
		}
	}
	tcp := bareprobe.ResetDialer(Timeout)
	for i := range pods {
		url := c.httpURL + strconv.Itoa(i)
		wg.Add(2)
		buf := make([]byte, probes.MaxOutputLength)
		go loop(func() bool { return bareprobe.Get(c.http, url, buf) })
		go loop(func() bool {
			conn, err := tcp(context.Background(), "tcp", c.tcpAddr)
			if err != nil {
				return false
			}
			_ = conn.Close()
			return true
		})
	}
	return func() {
		close(quit)
		wg.Wait()
		c.http.CloseIdleConnections()
	}
}

// runBare is `nodebench bare -pods N -http ADDR -tcp ADDR`: it probes until its stdin closes, then
// prints "probed=N failed=M".
func runBare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pods := fs.Int("pods", 500, "pods: one HTTP and one TCP probe each")
	httpAddr := fs.String("http", "", "the target's HTTP address")
	tcpAddr := fs.String("tcp", "", "the target's TCP address")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the window here")
	after := fs.Duration("profile-after", 0, "the window starts this long after the start")
	window := fs.Duration("profile-for", 0, "the window's length")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c := newBareClient(*httpAddr, *tcpAddr)
	stop := c.run(*pods)
	fmt.Fprintln(stdout, "RUNNING")
	profiled := make(chan error, 1)
	if *profile != "" {
		go func() { profiled <- profileWindow(*profile, *after, *window) }() // ends after its window
	} else {
		profiled <- nil
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop()
	if err := <-profiled; err != nil {
		fmt.Fprintln(stderr, "bare: CPU profile:", err)
		return 1
	}
	fmt.Fprintf(stdout, "probed=%d failed=%d\n", c.probed.Load(), c.failed.Load())
	return 0
}

// profileWindow writes a CPU profile of the window [after, after+window) from now into file.
func profileWindow(file string, after, window time.Duration) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	time.Sleep(after)
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	time.Sleep(window)
	pprof.StopCPUProfile()
	return f.Close()
}
