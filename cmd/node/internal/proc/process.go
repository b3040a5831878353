package proc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// processSpec is one container instance to start.
type processSpec struct {
	Path string   // executable (looked up in the container's PATH by the shim)
	Args []string // argv[1:]
	Env  []string
	Dir  string
	Log  *os.File // stdout and stderr
}

// process is node's handle on one running shim (and so one container instance).
type process struct {
	cmd     *exec.Cmd
	control io.WriteCloser
	pid     int // the container's main process (not the shim)

	mu     sync.Mutex
	closed bool

	done chan struct{} // closed once the shim has been reaped; exit is then valid
	exit shimMessage
}

// errShimLost means the shim died without reporting (it was killed from outside).
var errShimLost = errors.New("container shim exited without reporting")

// startProcess starts a shim running spec and waits until the container is running (or failed to
// start: that error is returned and nothing is left running). shim is the command line that runs
// ShimMain (e.g. [node, __shim]).
func startProcess(shim []string, spec processSpec) (*process, error) {
	b, err := json.Marshal(shimSpec{Path: spec.Path, Args: spec.Args, Dir: spec.Dir})
	if err != nil {
		return nil, fmt.Errorf("encode shim spec: %w", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("status pipe: %w", err)
	}
	defer statusW.Close() // the shim holds its own copy
	cmd := exec.Command(shim[0], append(append([]string{}, shim[1:]...), string(b))...)
	cmd.Env = spec.Env
	cmd.Stdout, cmd.Stderr = spec.Log, spec.Log
	cmd.ExtraFiles = []*os.File{statusW}
	// Its own process group: a Ctrl-C meant for node must not reach the containers directly;
	// node stops them itself, with their grace periods.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	control, err := cmd.StdinPipe()
	if err != nil {
		statusR.Close()
		return nil, fmt.Errorf("control pipe: %w", err)
	}
	if err := cmd.Start(); err != nil {
		statusR.Close()
		return nil, fmt.Errorf("start shim: %w", err)
	}
	statusW.Close()
	p := &process{cmd: cmd, control: control, done: make(chan struct{})}
	lines := bufio.NewScanner(statusR)
	first, ok := readMessage(lines)
	if !ok || first.Event != "started" {
		_ = control.Close()
		_ = cmd.Wait()
		statusR.Close()
		if ok && first.Event == "error" {
			return nil, errors.New(first.Message)
		}
		return nil, errShimLost
	}
	p.pid = first.PID
	go func() { // ends when the shim exits (its status pipe closes)
		defer statusR.Close()
		last, ok := readMessage(lines)
		for ok && last.Event != "exited" {
			last, ok = readMessage(lines)
		}
		_ = cmd.Wait()
		if !ok {
			last = shimMessage{Event: "exited", ExitCode: 137, Signal: int(syscall.SIGKILL), Message: errShimLost.Error()}
		}
		p.exit = last
		p.mu.Lock()
		p.closed = true
		_ = control.Close()
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
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
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	_, _ = io.WriteString(p.control, cmd+"\n")
}

// terminate sends SIGTERM to the container's process group.
func (p *process) terminate() { p.send(shimTerm) }

// kill SIGKILLs the container and everything it forked.
func (p *process) kill() { p.send(shimKill) }
