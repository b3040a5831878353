package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Manifest is the workload as node reads it: pods pod-NNN, each one `sleep` container with an HTTP
// readiness probe (GET /ready/N on httpPort) and a TCP liveness probe (tcpPort), both at period 1 s
// and timeout 1 s. Liveness tolerates 1,000 failures: a probe slowed down by a busy machine must
// not restart a container (a restart makes the run invalid; it is counted, not hidden).
func Manifest(pods, httpPort, tcpPort int) []byte {
	var m bytes.Buffer
	for i := range pods {
		fmt.Fprintf(&m, `---
apiVersion: v1
kind: Pod
metadata: {name: pod-%03[1]d}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    command: ["sleep", "1000000"]
    readinessProbe: {httpGet: {host: 127.0.0.1, port: %[2]d, path: %[3]s%[1]d}, periodSeconds: 1, timeoutSeconds: 1}
    livenessProbe: {tcpSocket: {host: 127.0.0.1, port: %[4]d}, periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 1000}
`, i, httpPort, ReadyPrefix, tcpPort)
	}
	return m.Bytes()
}

// nodeProc is a running `node run`.
type nodeProc struct {
	cmd    *exec.Cmd
	api    string
	stderr *tailBuffer
	done   chan struct{}
	err    error
}

// startNode runs bin with the manifest at path, a fresh root under dir, the API on a free loopback
// port; profiling adds --profiling.
func startNode(bin, dir, path string, profiling bool) (*nodeProc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	// node's own defaults otherwise, as an operator runs it.
	args := []string{"run", "-f", path, "--listen", addr, "--root-dir", filepath.Join(dir, "root")}
	if profiling {
		args = append(args, "--profiling")
	}
	n := &nodeProc{cmd: exec.Command(bin, args...), api: "http://" + addr, stderr: &tailBuffer{max: 64 << 10}, done: make(chan struct{})}
	n.cmd.Stdout = io.Discard // events
	n.cmd.Stderr = n.stderr
	// Should nodebench die, node dies too, and its shims stop the containers after --reattach-timeout.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { n.err = n.cmd.Wait(); close(n.done) }() // ends when node exits
	return n, nil
}

func (n *nodeProc) exited() bool {
	select {
	case <-n.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits for node (60 s, then SIGKILL).
func (n *nodeProc) stop() error {
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(60 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
		return fmt.Errorf("node did not stop within 60 s of SIGTERM")
	}
	return n.err
}

var apiClient = &http.Client{Timeout: 10 * time.Second}

func (n *nodeProc) get(path string) ([]byte, error) {
	res, err := apiClient.Get(n.api + path)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", path, res.Status)
	}
	return b, err
}

// podsState summarises /pods: pods listed, containers running and ready, restarts.
type podsState struct {
	listed, ready, restarts int
}

func (n *nodeProc) pods() (podsState, error) {
	b, err := n.get("/pods")
	if err != nil {
		return podsState{}, err
	}
	var list v1.PodList
	if err := json.Unmarshal(b, &list); err != nil {
		return podsState{}, err
	}
	return summarise(list.Items), nil
}

func summarise(pods []v1.Pod) podsState {
	var s podsState
	for _, p := range pods {
		s.listed++
		for _, c := range p.Status.ContainerStatuses {
			if c.Ready && c.State.Running != nil {
				s.ready++
			}
			s.restarts += int(c.RestartCount)
		}
	}
	return s
}

// awaitReady polls /pods until every pod's container runs and is ready.
func (n *nodeProc) awaitReady(pods int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last podsState
	var lastErr error
	for time.Now().Before(deadline) {
		if n.exited() {
			return fmt.Errorf("node exited: %v\nstderr tail:\n%s", n.err, n.stderr)
		}
		last, lastErr = n.pods()
		if lastErr == nil && last.listed == pods && last.ready == pods {
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("not every container ready within %v: %+v (last error %v)\nstderr tail:\n%s", timeout, last, lastErr, n.stderr)
}

// probeTotals sums node's prober_probe_total: all probes, and those whose result is not successful.
func (n *nodeProc) probeTotals() (all, unsuccessful float64, err error) {
	b, err := n.get("/metrics")
	if err != nil {
		return 0, 0, err
	}
	return ProbeTotals(b)
}

// ProbeTotals sums prober_probe_total in a Prometheus text exposition: all series, and those whose
// result label is not "successful".
func ProbeTotals(exposition []byte) (all, unsuccessful float64, err error) {
	sc := bufio.NewScanner(bytes.NewReader(exposition))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "prober_probe_total{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, perr := strconv.ParseFloat(line[i+1:], 64)
		if perr != nil {
			return 0, 0, fmt.Errorf("%q: %w", line, perr)
		}
		all += v
		if !strings.Contains(line, `result="successful"`) {
			unsuccessful += v
		}
	}
	return all, unsuccessful, sc.Err()
}

// saveProfile GETs path from node's API into file.
func (n *nodeProc) saveProfile(path, file string) error {
	c := &http.Client{Timeout: 10 * time.Minute}
	res, err := c.Get(n.api + path)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, res.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	mu  sync.Mutex
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
