package proc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// processSpec is one container instance to start.
type processSpec struct {
	Path string   // executable (looked up in the container's PATH by the shim)
	Args []string // argv[1:]
	Env  []string
	Dir  string
	Log  *os.File // stdout and stderr

	Socket          string        // the shim's control socket
	ReattachTimeout time.Duration // how long the container outlives node's connection
	Grace           time.Duration // the pod's grace period, for the shim's own stop
	LeaseDeadline   int64         // node's cluster lease (CLOCK_MONOTONIC ns) as the shim starts; 0: none
}

// process is node's handle on one shim (and so one container instance), over the shim's socket.
// It is either started (the shim is node's child: node also reaps it) or attached (a shim an
// earlier node started: its exit is known only from its "exited" report).
type process struct {
	conn *net.UnixConn
	cmd  *exec.Cmd // started only
	pid  int       // the container's main process (not the shim)
	shim int       // the shim's pid (0: an older shim did not say)

	mu       sync.Mutex
	closed   bool
	detached bool
	lease    lease         // the latest lease asked for (renewLease)
	renewed  chan struct{} // (1) a newer lease waits for sendLeases; nil until the first renewal

	wmu sync.Mutex // one command line at a time on conn (not mu: a blocked write must not hold it)

	done chan struct{} // closed once the exit is known (and a started shim reaped), or on detach
	exit shimMessage   // valid once done is closed; Event "detached" after detach
}

// ReasonContainerStatusUnknown is kubelet's reason for a container whose end nobody saw.
const ReasonContainerStatusUnknown = "ContainerStatusUnknown"

// errShimLost means the shim died without reporting (it was killed from outside).
var errShimLost = errors.New("container shim exited without reporting")

// helloTimeout bounds the wait for a shim's hello once connected.
const helloTimeout = 10 * time.Second

// startProcess starts a shim running spec and waits until the container is running (or failed to
// start: that error is returned and nothing is left running) and node is connected to the shim.
// shim is the command line that runs ShimMain (e.g. [node, __shim]).
func startProcess(shim []string, spec processSpec) (*process, error) {
	b, err := json.Marshal(shimSpec{Path: spec.Path, Args: spec.Args, Dir: spec.Dir,
		Socket: spec.Socket, ReattachTimeout: spec.ReattachTimeout, Grace: spec.Grace, LeaseDeadline: spec.LeaseDeadline})
	if err != nil {
		return nil, fmt.Errorf("encode shim spec: %w", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("status pipe: %w", err)
	}
	defer statusR.Close()
	defer statusW.Close() // the shim holds its own copy
	cmd := exec.Command(shim[0], append(append([]string{}, shim[1:]...), string(b))...)
	cmd.Env = spec.Env
	cmd.Stdout, cmd.Stderr = spec.Log, spec.Log
	cmd.ExtraFiles = []*os.File{statusW}
	// Its own session: a Ctrl-C meant for node, or the hangup of node's terminal, must not reach
	// the shim or the containers; node stops them itself, with their grace periods, or leaves them
	// to the next node.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Until node is connected, its end of the shim's stdin is the connection: should node die
	// before it connects, the shim sees end-of-file.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("control pipe: %w", err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start shim: %w", err)
	}
	statusW.Close()
	first, ok := readMessage(bufio.NewScanner(statusR))
	if !ok || first.Event != "started" {
		_ = stdin.Close()
		_ = cmd.Wait()
		if ok && first.Event == "error" && first.Fenced {
			return nil, errFenced
		}
		if ok && first.Event == "error" {
			return nil, errors.New(first.Message)
		}
		return nil, errShimLost
	}
	conn, err := dialSocket(spec.Socket)
	var hello shimMessage
	var lines *bufio.Scanner
	if err == nil {
		lines, hello, err = readHello(conn)
	}
	if err != nil {
		// Node cannot control it: take it down (the shim kills the container's tree on SIGTERM).
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = stdin.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("connect to the container shim: %w", err)
	}
	p := &process{conn: conn, cmd: cmd, pid: first.PID, shim: cmd.Process.Pid, done: make(chan struct{}),
		lease: lease{deadline: spec.LeaseDeadline, grace: spec.Grace}}
	reaped := make(chan struct{})
	go func() { // ends when the shim exits (after a Detach, that may be long after)
		_ = cmd.Wait()
		close(reaped)
	}()
	go p.watch(lines, hello, reaped) // ends when the connection does
	return p, nil
}

// attachProcess connects to the shim an earlier node started at socket and returns the process
// and the shim's hello: if hello.Exited, the container's main process has exited (its status in
// hello) and the process is done already.
func attachProcess(socket string) (*process, shimMessage, error) {
	conn, err := dialSocket(socket)
	if err != nil {
		return nil, shimMessage{}, err
	}
	lines, hello, err := readHello(conn)
	if err != nil {
		return nil, shimMessage{}, err
	}
	p := &process{conn: conn, pid: hello.PID, shim: hello.ShimPID, done: make(chan struct{})}
	reaped := make(chan struct{})
	close(reaped)                    // not node's child: its parent reaps it
	go p.watch(lines, hello, reaped) // ends when the connection does
	return p, hello, nil
}

// readHello reads the shim's first report on conn.
func readHello(conn *net.UnixConn) (*bufio.Scanner, shimMessage, error) {
	_ = conn.SetReadDeadline(time.Now().Add(helloTimeout))
	lines := bufio.NewScanner(conn)
	hello, ok := readMessage(lines)
	_ = conn.SetReadDeadline(time.Time{})
	if !ok || hello.Event != "hello" {
		_ = conn.Close()
		if err := lines.Err(); err != nil {
			return nil, shimMessage{}, fmt.Errorf("no hello from the container shim: %w", err)
		}
		return nil, shimMessage{}, errors.New("no hello from the container shim")
	}
	return lines, hello, nil
}

// watch waits for the exit: the "exited" report (or hello's, when the main process had exited
// already), or the connection's end without one — then the shim is gone and so, as far as node
// can tell, is the container. A started shim is reaped before done closes.
func (p *process) watch(lines *bufio.Scanner, hello shimMessage, reaped <-chan struct{}) {
	last, ok := hello, hello.Exited
	for !ok {
		var more bool
		if last, more = readMessage(lines); !more {
			break
		}
		ok = last.Event == "exited"
	}
	p.mu.Lock()
	p.closed = true
	detached := p.detached
	p.mu.Unlock()
	_ = p.conn.Close()
	if detached {
		p.exit = shimMessage{Event: "detached"}
		close(p.done)
		return
	}
	if !ok {
		last = shimMessage{ExitCode: 137, Signal: int(syscall.SIGKILL), Reason: ReasonContainerStatusUnknown, Message: errShimLost.Error()}
		if p.cmd != nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM) // should it still live, it takes the container down
		}
	}
	last.Event = "exited"
	<-reaped
	p.exit = last
	close(p.done)
}

func readMessage(sc *bufio.Scanner) (shimMessage, bool) {
	for sc.Scan() {
		var m shimMessage
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			return m, true
		}
	}
	return shimMessage{}, false
}

// send writes a control command; it is a no-op once the shim is gone.
func (p *process) send(cmd string) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return
	}
	// A shim that does not read blocks this write, never p.mu: closing the connection (its end,
	// Detach) ends it.
	_, _ = io.WriteString(p.conn, cmd+"\n")
}

// terminate sends SIGTERM to the container's process group.
func (p *process) terminate(grace time.Duration) {
	p.send(shimTerm + " " + strconv.FormatInt(int64(grace), 10))
}

// kill SIGKILLs the container and everything it forked.
func (p *process) kill() { p.send(shimKill) }

// detach closes node's connection without a KILL: the container runs on under its shim, which
// waits for the next node (or kills it at once with no re-attach window). done closes with Event
// "detached". A started shim is still reaped when it exits.
func (p *process) detach() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed, p.detached = true, true
	_ = p.conn.Close()
}
