package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

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
		http: &http.Client{
			Timeout: Timeout,
			Transport: &http.Transport{
				Proxy:                  nil,
				DialContext:            resetDialer(0),
				DisableKeepAlives:      true,
				DisableCompression:     true,
				MaxResponseHeaderBytes: probes.DefaultMaxResponseHeaderBytes,
			},
		},
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
	tcp := resetDialer(Timeout)
	for i := range pods {
		url := c.httpURL + strconv.Itoa(i)
		wg.Add(2)
		buf := make([]byte, probes.MaxOutputLength)
		go loop(func() bool { return c.get(url, buf) })
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

// get is one HTTP probe: GET with kubelet's User-Agent and Accept, the body read up to the limit.
func (c *bareClient) get(url string, buf []byte) bool {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	req.Header.Set("User-Agent", probes.UserAgent)
	req.Header.Set("Accept", "*/*")
	res, err := c.http.Do(req)
	if err != nil {
		return false
	}
	_, err = io.ReadFull(res.Body, buf)
	_ = res.Body.Close()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return false
	}
	return res.StatusCode >= 200 && res.StatusCode < 400
}

// resetDialer dials as node's probes do: the connection is reset on close, leaving no TIME_WAIT on
// either side (1,000 connections a second would otherwise fill the ephemeral ports).
func resetDialer(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return resetConn{conn.(*net.TCPConn)}, nil
	}
}

type resetConn struct{ *net.TCPConn }

func (c resetConn) Close() error {
	_ = c.SetLinger(0)
	return c.TCPConn.Close()
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
