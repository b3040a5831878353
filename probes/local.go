package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// LocalOptions is the environment of a command run by RunLocal.
type LocalOptions struct {
	// Env is the complete environment ("NAME=value"); nil inherits this process's environment.
	Env []string
	// Dir is the working directory; "" is this process's.
	Dir string
	// Guard, when set, is told the command's process group id right after it starts; the function
	// it returns is called once the group has been killed and the command reaped. Pdeathsig kills
	// only the command itself if this process dies; a guard (another process told which groups are
	// live) can take the whole group down then — the node runtime has one.
	Guard func(pgid int) (release func())

	// start replaces (*exec.Cmd).Start in tests (a fork that fails with EAGAIN, ENOMEM, ...).
	start func(*exec.Cmd) error
}

// ioGrace bounds how long RunLocal waits for the command's output pipes to close once its process
// has exited or been killed (a descendant outside the process group may hold them open).
const ioGrace = 100 * time.Millisecond

// exitCodeError is a non-zero exit status synthesized for a command that could not be started
// (127: not found, 126: not executable), as a shell or container runtime would report it.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string { return fmt.Sprintf("%v (exit code %d)", e.err, e.code) }
func (e *exitCodeError) Unwrap() error { return e.err }
func (e *exitCodeError) ExitCode() int { return e.code }

// RunLocal runs cmd as a local process in its own process group and writes its stdout, then its
// stderr, to out; each stream is kept up to MaxOutputLength bytes and the rest is read and discarded
// (a flooding command costs CPU, never memory, and is never blocked).
//
// When ctx ends first the whole process group is killed with SIGKILL and the command is reaped before
// RunLocal returns; the error then wraps ErrCommandTimedOut (deadline, with kubelet's text
// `command timed out: "<cmd>" timed out after <timeout>`) or ctx.Err() (cancellation). After the
// command exits, whatever it left running in its process group is killed too, so a probe never
// leaves processes behind. Grandchildren are reparented to init (or the nearest subreaper), which
// reaps them. On Linux the command is also SIGKILLed by the kernel if this process dies first
// (Pdeathsig; the command itself — what it forked only with LocalOptions.Guard).
//
// Returns nil for exit status 0, an error with an ExitCode() int method for a non-zero status
// (127/126 when the program cannot be found/executed, its message then written to out), and any
// other error when the command could not be started (for want of a process slot, memory or
// descriptors — EAGAIN, ENOMEM, EMFILE, ENFILE — the error wraps that errno).
func RunLocal(ctx context.Context, cmd []string, opts LocalOptions, out io.Writer) error {
	if len(cmd) == 0 {
		return errors.New("run local command: empty command")
	}
	timeout, ok := ctx.Value(probeTimeoutKey{}).(time.Duration)
	if dl, hasDeadline := ctx.Deadline(); !ok && hasDeadline {
		timeout = time.Until(dl).Round(10 * time.Millisecond)
	}
	var stdout, stderr limitWriter
	c := exec.Command(cmd[0], cmd[1:]...) //nolint:gosec // running the probe's command is the point
	c.Env = opts.Env
	c.Dir = opts.Dir
	c.Stdout = &stdout
	c.Stderr = &stderr
	c.SysProcAttr = newProcessGroupAttr()
	c.WaitDelay = ioGrace
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("run local command %q: %w", strings.Join(cmd, " "), err)
	}
	// On Linux the command gets Pdeathsig, which the kernel sends when the thread that forked it
	// exits (golang/go#27505); the Go runtime ends a thread when a goroutine exits locked to it.
	// Keeping this goroutine on its thread until the command is reaped means only the death of this
	// process fires it. The wait already holds a thread, so this costs none extra.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := (*exec.Cmd).Start
	if opts.start != nil {
		start = opts.start
	}
	if err := start(c); err != nil {
		code := 0
		switch {
		case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
			code = 127
		case errors.Is(err, fs.ErrPermission):
			code = 126
		default:
			return fmt.Errorf("start %q: %w", strings.Join(cmd, " "), err)
		}
		_, _ = io.WriteString(out, err.Error())
		return &exitCodeError{code: code, err: err}
	}
	pgid := c.Process.Pid
	if opts.Guard != nil {
		defer opts.Guard(pgid)() // after the group is killed below
	}

	// The watchdog is the only other goroutine; it ends when Wait returns or once it has killed the
	// group, and RunLocal waits for it before returning.
	waited := make(chan struct{})
	watchdogDone := make(chan struct{})
	timedOut := false
	go func() {
		defer close(watchdogDone)
		select {
		case <-ctx.Done():
			killProcessGroup(pgid)
			timedOut = true
		case <-waited:
		}
	}()
	werr := c.Wait()
	close(waited)
	<-watchdogDone
	killProcessGroup(pgid) // leftovers of a command that exited on its own (ESRCH when none)

	_, _ = out.Write(stdout.buf)
	_, _ = out.Write(stderr.buf)

	if timedOut {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%w: %q timed out after %s", ErrCommandTimedOut, strings.Join(cmd, " "), timeout)
		}
		return fmt.Errorf("run local command %q: %w", strings.Join(cmd, " "), ctx.Err())
	}
	if errors.Is(werr, exec.ErrWaitDelay) {
		// The process exited 0 but a descendant kept its output open past ioGrace (it has just been
		// killed, or escaped the group); the exit status is the verdict.
		return nil
	}
	return werr
}

// probeTimeoutKey carries an exec probe's configured timeout to RunLocal, so that its timeout error
// names the probe's timeout exactly (kubelet's text) rather than the time left when it started.
type probeTimeoutKey struct{}

// LocalRunner is a CommandRunner that runs commands as local processes with RunLocal. Resolve, when
// set, supplies the environment and working directory for a container ID (the node runtime maps its
// local-process containers this way); its error means the command could not be run.
type LocalRunner struct {
	Resolve func(containerID string) (LocalOptions, error)
}

// RunInContainer implements CommandRunner.
func (r LocalRunner) RunInContainer(ctx context.Context, containerID string, cmd []string, out io.Writer) error {
	var opts LocalOptions
	if r.Resolve != nil {
		var err error
		if opts, err = r.Resolve(containerID); err != nil {
			return fmt.Errorf("resolve container %q: %w", containerID, err)
		}
	}
	return RunLocal(ctx, cmd, opts, out)
}
