package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ReadyPrefix is what the readiness probes GET, followed by the pod's index.
const ReadyPrefix = "/ready/"

// CountPath answers the target's counters: "http=N tcp=M".
const CountPath = "/count"

// target is the probes' far end: an HTTP server (200 "ok" to /ready/N) and a TCP listener (accept,
// close), counting what reached them.
type target struct {
	http, tcp atomic.Int64
}

func (t *target) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, ReadyPrefix):
		t.http.Add(1)
		_, _ = io.WriteString(w, "ok")
	case r.URL.Path == CountPath:
		fmt.Fprintf(w, "http=%d tcp=%d\n", t.http.Load(), t.tcp.Load())
	default:
		http.NotFound(w, r)
	}
}

// serveTarget is `nodebench target`: it listens on two loopback ports, prints "PORTS <http> <tcp>"
// and serves until its stdin closes.
func serveTarget(stdout, stderr io.Writer) int {
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(stderr, "target:", err)
		return 1
	}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = hl.Close()
		fmt.Fprintln(stderr, "target:", err)
		return 1
	}
	_, stop := serve(hl, tl)
	fmt.Fprintf(stdout, "PORTS %d %d\n", hl.Addr().(*net.TCPAddr).Port, tl.Addr().(*net.TCPAddr).Port)
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop()
	return 0
}

// serve answers HTTP on hl and accepts (and closes) connections on tl until stop, which closes
// both listeners and waits for the goroutines it started.
func serve(hl, tl net.Listener) (t *target, stop func()) {
	t = &target{}
	srv := &http.Server{Handler: t, ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	wg.Add(2)
	// Both end with stop: Serve once srv is closed, the accept loop once tl is.
	go func() { defer wg.Done(); _ = srv.Serve(hl) }()
	go func() {
		defer wg.Done()
		for {
			c, err := tl.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue // e.g. a connection reset before it was accepted
			}
			t.tcp.Add(1)
			_ = c.Close()
		}
	}()
	return t, func() {
		_ = srv.Close()
		_ = tl.Close()
		wg.Wait()
	}
}

// child is a role of this binary running as a child process, stopped by closing its stdin.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startChild runs this binary as role with args; the child dies with us (Pdeathsig).
func startChild(role string, args ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, append([]string{role}, args...)...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s %s: %w", self, role, err)
	}
	return &child{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}, nil
}

// line reads the child's next line of stdout.
func (c *child) line() (string, error) {
	s, err := c.out.ReadString('\n')
	return strings.TrimSpace(s), err
}

// stop closes the child's stdin, returns what it printed last and waits for it (5 s, then SIGKILL).
func (c *child) stop() (string, error) {
	_ = c.stdin.Close()
	last, _ := c.out.ReadString('\n') // its final line, or EOF
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }() // ends once the child is reaped
	select {
	case err := <-done:
		return strings.TrimSpace(last), err
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		return strings.TrimSpace(last), <-done
	}
}

// targetProc is the running target and its ports.
type targetProc struct {
	*child
	httpPort, tcpPort int
}

func startTarget() (*targetProc, error) {
	c, err := startChild("target")
	if err != nil {
		return nil, err
	}
	l, err := c.line()
	var h, t int
	if err == nil {
		_, err = fmt.Sscanf(l, "PORTS %d %d", &h, &t)
	}
	if err != nil {
		_, _ = c.stop()
		return nil, fmt.Errorf("target: no ports (%q): %w", l, err)
	}
	return &targetProc{child: c, httpPort: h, tcpPort: t}, nil
}

// counts reads the target's counters.
func (t *targetProc) counts() (httpN, tcpN int64, err error) {
	res, err := http.Get("http://127.0.0.1:" + strconv.Itoa(t.httpPort) + CountPath)
	if err != nil {
		return 0, 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, 0, err
	}
	_, err = fmt.Sscanf(string(b), "http=%d tcp=%d", &httpN, &tcpN)
	return httpN, tcpN, err
}
