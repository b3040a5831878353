package proc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// GuardArg is the hidden subcommand that turns the node binary into the exec-probe guard:
// `node __probe-guard`.
const GuardArg = "__probe-guard"

// GuardMain runs the exec-probe guard and never returns. It reads "+PGID" (an exec probe's process
// group started) and "-PGID" (it is gone) lines on stdin. At end-of-file — node closed it, or node
// died, even by SIGKILL, since node holds the only write end — it SIGKILLs every group still
// listed and exits. Pdeathsig kills a probe command when node dies; the guard kills what the
// command forked.
func GuardMain() {
	live := map[int]bool{}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			live[pgid] = true
		case '-':
			delete(live, pgid)
		default:
		}
	}
	for pgid := range live {
		_ = unix.Kill(-pgid, unix.SIGKILL)
	}
	os.Exit(0)
}

// guard is node's side of the exec-probe guard: one helper process, started on the first exec
// probe and ended by close. If it cannot be started or written to, exec probes still run; only
// Pdeathsig then protects against node's death.
type guard struct {
	exe string // the node binary
	log hclog.Logger

	mu     sync.Mutex
	cmd    *exec.Cmd
	w      io.WriteCloser
	live   map[int]bool // the groups the helper was told of and not yet released
	broken bool         // failed or closed: watch is a no-op
}

// watch registers an exec probe's process group; the returned release unregisters it.
func (g *guard) watch(pgid int) (release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.broken {
		return func() {}
	}
	if g.cmd == nil {
		if err := g.start(); err != nil {
			g.broken = true
			g.log.Warn("exec-probe guard not started; a SIGKILLed node may leave what a probe command forked", "error", err)
			return func() {}
		}
	}
	if !g.send('+', pgid) {
		return func() {}
	}
	if g.live == nil {
		g.live = map[int]bool{}
	}
	g.live[pgid] = true
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		delete(g.live, pgid)
		if !g.broken {
			g.send('-', pgid)
		}
	}
}

// watching reports whether the helper was told of pgid and it was not released since: a group
// registered before close is killed by it; one that starts after close runs unguarded.
func (g *guard) watching(pgid int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.live[pgid]
}

// start runs the helper in its own process group (a terminal's Ctrl-C must not end it before
// node). Called with mu held.
func (g *guard) start() error {
	cmd := exec.Command(g.exe, GuardArg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	g.cmd, g.w = cmd, w
	return nil
}

// send writes one line; a failure marks the guard broken. Called with mu held.
func (g *guard) send(op byte, pgid int) bool {
	if _, err := fmt.Fprintf(g.w, "%c%d\n", op, pgid); err != nil {
		g.broken = true
		g.log.Warn("exec-probe guard is gone; a SIGKILLed node may leave what a probe command forked", "error", err)
		return false
	}
	return true
}

// close ends the helper (it kills any group still registered) and reaps it; if ctx ends first it
// returns ctx's error and the helper, which exits at the end-of-file it was sent, is reaped in the
// background.
func (g *guard) close(ctx context.Context) error {
	g.mu.Lock()
	cmd, w := g.cmd, g.w
	g.broken = true
	g.cmd = nil
	g.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = w.Close()
	reaped := make(chan struct{})
	go func() { // ends once the helper has exited: at once after the end-of-file
		defer close(reaped)
		_ = cmd.Wait()
	}()
	select {
	case <-reaped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("exec-probe guard not reaped: %w", ctx.Err())
	}
}
