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
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ShimArg is the hidden subcommand that turns the node binary into a container shim:
// `node __shim <spec JSON>`.
const ShimArg = "__shim"

// shimSpec is what node tells a shim to run. The shim's own environment is the container's.
type shimSpec struct {
	Path string   `json:"path"`
	Args []string `json:"args"` // argv[1:]
	Dir  string   `json:"dir,omitempty"`
	// Socket is the unix socket the shim listens on for node (mode 0600, in a directory only
	// node's user can enter). The shim creates it before it reports "started" and removes it
	// when it exits.
	Socket string `json:"socket"`
	// ReattachTimeout is how long the container outlives node's connection: 0 kills it the moment
	// the connection closes without a KILL (node exited, even by SIGKILL); otherwise the shim
	// waits that long for a node to connect again, then stops the container (SIGTERM, Grace,
	// SIGKILL to everything it forked) and exits.
	ReattachTimeout time.Duration `json:"reattachTimeout,omitempty"`
	Grace           time.Duration `json:"grace,omitempty"` // the pod's grace period
	// LeaseDeadline is the node's cluster lease as the shim starts (Runtime.SetLease): an
	// absolute CLOCK_MONOTONIC time in ns, 0 for none. The shim arms it before it starts the
	// container (and does not start it at all once it has passed); LEASE lines extend it. When it
	// passes, the shim stops the container with Grace, as if told "TERM <Grace>".
	LeaseDeadline int64 `json:"leaseDeadline,omitempty"`
}

// shimMessage is one line the shim writes: "started" or "error" on its status pipe (fd 3, the
// start handshake only), "hello" and "exited" on node's connection.
type shimMessage struct {
	Event string `json:"event"` // "started", "error", "hello", "exited"
	PID   int    `json:"pid,omitempty"`
	// ShimPID (hello) is the shim's own pid: the root of the container's process tree, for its
	// resource usage. A shim of an older node sends none.
	ShimPID int `json:"shimPID,omitempty"`
	// Exited (hello only) says the container's main process has already exited, with ExitCode
	// and Signal; the shim exits once it said so.
	Exited   bool   `json:"exited,omitempty"`
	ExitCode int    `json:"exitCode,omitempty"`
	Signal   int    `json:"signal,omitempty"`
	Message  string `json:"message,omitempty"`
	// Fenced ("exited", and a hello with Exited) says the node's cluster lease ran out and the
	// shim stopped the container for it; on "error", that the lease had run out before the
	// container could start, so it was not started.
	Fenced bool `json:"fenced,omitempty"`
	// Reason is node's own (never sent by a shim): "ContainerStatusUnknown" when the shim was
	// lost without reporting.
	Reason string `json:"-"`
}

// Shim commands, one per line on node's connection.
const (
	shimTerm = "TERM" // SIGTERM to the container's process group; "TERM <grace ns>": and SIGKILL after grace
	shimKill = "KILL" // SIGKILL to the container and everything it forked
	// "LEASE <deadline ns> <grace ns>": the node's cluster lease runs until deadline
	// (CLOCK_MONOTONIC); then the shim stops the container (SIGTERM, SIGKILL after grace). Only a
	// later deadline counts; none cancels a stop the lease began.
	shimLease = "LEASE"
)

// shimWriteTimeout bounds one report on node's connection: a node that does not read is treated
// as gone.
const shimWriteTimeout = 5 * time.Second

// ShimMain runs the shim and never returns. args are the arguments after ShimArg.
//
// The shim is the only process that knows the container's process tree, so it is the one that
// guarantees nothing survives:
//   - it is a child subreaper, so anything the container forks and orphans is re-parented to it;
//   - the container runs in its own process group with stdin /dev/null and stdout/stderr a pipe the
//     shim copies to the log file (its own stdout); output the log cannot take (disk full, I/O error)
//     is dropped, so a running container never sees its log fail — containerd's shim does the same;
//   - node controls it through a unix socket (spec.Socket): TERM and KILL lines in, a "hello" (the
//     container's pid, and its exit status if it already ended) on every connection and "exited"
//     out. One connection at a time: a new one replaces the old. When the connection closes
//     without a KILL — node exited, even by SIGKILL, or detached — the container is killed at
//     once (spec.ReattachTimeout 0), or keeps running while the shim waits ReattachTimeout for a
//     node to connect again, and is then stopped (SIGTERM, spec.Grace, SIGKILL). Until the first
//     node connects, that node's end of the shim's stdin stands for the connection;
//   - node's cluster lease (spec.LeaseDeadline, then "LEASE <deadline> <grace>" lines: an absolute
//     CLOCK_MONOTONIC deadline, only ever extended) is the shim's own: with a deadline already
//     passed the container is not started (an "error" with Fenced); when it passes, whether a node
//     is connected or not, the shim stops the container as a TERM with the lease's grace would
//     (SIGTERM to the group, SIGKILL to the group and every descendant once the grace has passed
//     since the deadline; a kill already under way keeps the earlier of its SIGKILL deadline and
//     this one) and reports the exit with Fenced. A renewal after that does not cancel the stop. Nothing goes to the
//     container's log;
//   - when the container's main process exits, the shim kills what is left of the group and every
//     other descendant (kubelet: a container's processes die with its PID 1), reaps them all,
//     reports the exit status to the node connected (or the next one to connect within the
//     window) and exits;
//   - SIGTERM, SIGINT or SIGHUP to the shim itself kill the container's tree.
//
// Those rules are shimCore's; this file is the shell that carries them out.
func ShimMain(args []string) {
	status := os.NewFile(3, "status")
	report := func(m shimMessage) {
		b, _ := json.Marshal(m)
		_, _ = status.Write(append(b, '\n'))
	}
	fail := func(format string, a ...any) {
		report(shimMessage{Event: "error", Message: fmt.Sprintf(format, a...)})
		os.Exit(2)
	}
	if len(args) != 1 {
		fail("usage: %s <spec>", ShimArg)
	}
	unix.CloseOnExec(3) // the container must not inherit the status pipe
	var spec shimSpec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		fail("bad spec: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fail("set child subreaper: %v", err)
	}
	// Signals to the shim itself (someone killing it by hand) take the container down with it.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGCHLD)

	// The socket exists before the container does: once node hears "started" it can connect.
	// Go opens it close-on-exec, so the container does not inherit it (nor any connection).
	listener, err := listenSocket(spec.Socket)
	if err != nil {
		fail("%v", err)
	}
	// Pdeathsig fires when the thread that forked the child exits: keep this goroutine on its thread
	// for the life of the shim so only the shim's own death can trigger it.
	runtime.LockOSThread()
	output, outputW, err := os.Pipe()
	if err != nil {
		_ = os.Remove(spec.Socket)
		fail("output pipe: %v", err)
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Stdout, cmd.Stderr = outputW, outputW
	// Pdeathsig is a second line of defence should the shim itself be SIGKILLed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// The lease is armed from here on (run's timer): a container is never started once the
	// node's lease has run out, and runs from its first instant under it.
	core := newShimCore(spec)
	if !core.mayStart(monoNow()) {
		_ = os.Remove(spec.Socket)
		report(shimMessage{Event: "error", Fenced: true, Message: "the node's cluster lease ran out before the container started"})
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		_ = os.Remove(spec.Socket)
		fail("%v", err)
	}
	_ = outputW.Close() // the container holds the write end now: EOF once all of it has exited
	logged := make(chan struct{})
	go func() { // ends at EOF: when every process of the container has exited
		defer close(logged)
		copyLog(os.Stdout, output)
	}()
	s := &shim{core: core, pid: cmd.Process.Pid, socket: spec.Socket, listener: listener, logged: logged,
		accepted: make(chan *net.UnixConn), lines: make(chan connLine), closed: make(chan *net.UnixConn, 1)}
	report(shimMessage{Event: "started", PID: s.pid})
	_ = status.Close() // the handshake is over: everything else goes over the socket

	go s.accept()
	stdinEOF := make(chan struct{})
	go func() { // ends at EOF: the first node closed its end (it connected, or it died)
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stdinEOF)
	}()
	os.Exit(s.run(sigs, stdinEOF))
}

// shim is the shell of ShimMain's loop around its shimCore: the container's process, node's
// connection, the timers the core's deadlines ask for. Only run touches it.
type shim struct {
	core     *shimCore
	pid      int // the container's main process, also its process group
	socket   string
	listener *net.UnixListener
	logged   <-chan struct{} // closed once all the container's output is in the log
	ws       unix.WaitStatus

	accepted chan *net.UnixConn // from accept
	lines    chan connLine      // from each connection's reader
	closed   chan *net.UnixConn // a connection's reader hit the end (buffered, so readers never block)

	conn                *net.UnixConn // node's connection, nil while none is attached
	window, kill, lease deadlineTimer
	exit                bool // the core said Exit
	listenerClosed      bool
}

// deadlineTimer is a timer armed for one of the core's deadlines (CLOCK_MONOTONIC ns).
type deadlineTimer struct {
	c  <-chan time.Time // nil while disarmed
	at int64
}

// set arms t for at when on and at differs from what it is armed for, and disarms it when off.
func (t *deadlineTimer) set(on bool, at int64) {
	switch {
	case !on:
		t.c = nil
	case t.c == nil || t.at != at:
		t.c, t.at = time.After(time.Duration(max(at-monoNow(), 0))), at
	}
}

// connLine is one line node sent on conn.
type connLine struct {
	conn *net.UnixConn
	line string
}

// accept hands every new connection to run; it ends when the listener is closed.
func (s *shim) accept() {
	for {
		c, err := s.listener.AcceptUnix()
		if err != nil {
			return
		}
		s.accepted <- c // run reads this until it exits; then the process ends with it
	}
}

// read forwards conn's lines; it ends when conn is closed (by node or by run).
func (s *shim) read(c *net.UnixConn) {
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		s.lines <- connLine{conn: c, line: strings.TrimSpace(sc.Text())}
	}
	s.closed <- c
}

// exitMessage is the main process's exit as reported to node.
func (s *shim) exitMessage(event string) shimMessage {
	done := s.core.mainDone
	m := shimMessage{Event: event, PID: s.pid, Exited: done && event == "hello", Fenced: done && s.core.fenced}
	if event == "hello" {
		m.ShimPID = os.Getpid()
	}
	switch {
	case !done:
	case s.ws.Exited():
		m.ExitCode = s.ws.ExitStatus()
	case s.ws.Signaled():
		m.Signal = int(s.ws.Signal())
		m.ExitCode = 128 + int(s.ws.Signal())
	}
	return m
}

// do carries out what the core decided; c is the connection just accepted, if any.
func (s *shim) do(e shimEffects, c *net.UnixConn) {
	if e.Reject {
		_ = c.Close()
	}
	if e.Attach {
		if s.conn != nil {
			_ = s.conn.Close() // a new node replaces the old; its reader's end is ignored
		}
		s.conn = c
		go s.read(c) // ends when c is closed
	}
	if e.Detach && s.conn != nil {
		_ = s.conn.Close()
		s.conn = nil
	}
	if e.Term {
		_ = unix.Kill(-s.pid, unix.SIGTERM)
	}
	if e.KillTree {
		killTree(s.pid)
	}
	if e.CloseListener && !s.listenerClosed {
		s.listenerClosed = true
		_ = s.listener.Close()
		_ = os.Remove(s.socket)
	}
	if e.Finish {
		s.finish()
	}
	if e.Send != "" {
		b, _ := json.Marshal(s.exitMessage(e.Send))
		_ = s.conn.SetWriteDeadline(time.Now().Add(shimWriteTimeout))
		_, err := s.conn.Write(append(b, '\n'))
		s.do(s.core.sent(err == nil, monoNow()), nil) // a failed write: node is gone
	}
	s.exit = s.exit || e.Exit
}

// run is the shim's loop; it returns the shim's exit code.
func (s *shim) run(sigs <-chan os.Signal, stdinEOF <-chan struct{}) int {
	defer func() {
		s.do(shimEffects{CloseListener: true}, nil)
		if s.conn != nil {
			_ = s.conn.Close()
		}
	}()
	for !s.exit {
		s.window.set(s.core.window, s.core.windowAt)
		s.kill.set(s.core.killing, s.core.killAt)
		s.lease.set(s.core.leaseArmed, s.core.lease)
		select {
		case c := <-s.accepted:
			s.do(s.core.accepted(), c)
		case l := <-s.lines:
			if l.conn == s.conn { // else from a replaced connection
				s.do(s.core.line(l.line, monoNow()), nil)
			}
		case c := <-s.closed:
			if c == s.conn {
				s.do(s.core.dropped(monoNow()), nil)
			}
		case <-stdinEOF:
			stdinEOF = nil
			s.do(s.core.stdinEOF(monoNow()), nil)
		case <-s.window.c:
			s.window.c = nil
			s.do(s.core.windowDue(monoNow()), nil)
		case <-s.lease.c:
			s.lease.c = nil
			s.applyPendingLines() // a renewal already on its way counts before the deadline is judged
			s.do(s.core.leaseDue(monoNow()), nil)
		case <-s.kill.c:
			s.kill.c = nil
			s.do(s.core.killDue(), nil)
		case sig := <-sigs:
			if sig != syscall.SIGCHLD {
				s.do(s.core.signal(), nil)
			}
		}
		if !s.exit && !s.core.mainDone && reapUntil(s.pid, &s.ws) {
			s.do(s.core.mainExited(), nil)
		}
	}
	return 0
}

// applyPendingLines carries out the lines of the current connection that are already waiting,
// without blocking.
func (s *shim) applyPendingLines() {
	for {
		select {
		case l := <-s.lines:
			if l.conn == s.conn {
				s.do(s.core.line(l.line, monoNow()), nil)
			}
		default:
			return
		}
	}
}

// finish runs once the main process has exited: nothing else of the container may survive it,
// and its last output must be in the log before anyone hears of the exit.
func (s *shim) finish() {
	killTree(s.pid)
	for {
		var other unix.WaitStatus
		if _, err := unix.Wait4(-1, &other, 0, nil); errors.Is(err, unix.ECHILD) {
			break
		} else if err != nil && !errors.Is(err, unix.EINTR) {
			break
		}
		killTree(s.pid) // a reaped parent may have re-parented more orphans to us
	}
	// Everything that could write is dead (bounded, should an escaped process still hold the pipe).
	select {
	case <-s.logged:
	case <-time.After(logDrainGrace):
	}
}

// logDrainGrace bounds how long an exiting shim waits for the container's last output.
const logDrainGrace = time.Second

// copyLog copies the container's output to the log until EOF. A write the log refuses drops that
// output and the copy goes on (a later write may succeed again, e.g. once the disk has room): the
// container is never blocked or failed by its log.
func copyLog(log io.Writer, output io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := output.Read(buf)
		if n > 0 {
			_, _ = log.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// reapUntil reaps every exited child without blocking and reports whether main was among them.
func reapUntil(main int, ws *unix.WaitStatus) bool {
	for {
		var s unix.WaitStatus
		pid, err := unix.Wait4(-1, &s, unix.WNOHANG, nil)
		if err != nil || pid <= 0 {
			return false
		}
		if pid == main {
			*ws = s
			return true
		}
	}
}

// killTree SIGKILLs the container's process group and every descendant of the shim.
func killTree(pgid int) {
	_ = unix.Kill(-pgid, unix.SIGKILL)
	for _, pid := range descendants(os.Getpid()) {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

// descendants lists every process below root, from /proc.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentPID(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentPID reads field 4 of /proc/<pid>/stat (after the parenthesised command name).
func parentPID(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}

// RunHelper makes this process the runtime's helper that args (os.Args) name: the container shim
// (ShimArg) or the exec-probe guard (GuardArg); it never returns then. Otherwise it returns at
// once. The node binary calls it first in main, and every test binary that runs a Runtime over
// itself calls it first in TestMain.
func RunHelper(args []string) {
	if len(args) < 2 {
		return
	}
	switch args[1] {
	case ShimArg:
		ShimMain(args[2:])
	case GuardArg:
		GuardMain()
	}
}
