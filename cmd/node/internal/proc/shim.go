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
	if spec.LeaseDeadline != 0 && monoNow() >= spec.LeaseDeadline {
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
	s := &shim{spec: spec, pid: cmd.Process.Pid, listener: listener, logged: logged,
		accepted: make(chan *net.UnixConn), lines: make(chan connLine), closed: make(chan *net.UnixConn, 1),
		lease: spec.LeaseDeadline, leaseGrace: spec.Grace}
	if s.lease != 0 {
		s.armLease()
	}
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

// shim is the state of ShimMain's loop. Only run touches it.
type shim struct {
	spec     shimSpec
	pid      int // the container's main process, also its process group
	listener *net.UnixListener
	logged   <-chan struct{} // closed once all the container's output is in the log

	accepted chan *net.UnixConn // from accept
	lines    chan connLine      // from each connection's reader
	closed   chan *net.UnixConn // a connection's reader hit the end (buffered, so readers never block)

	conn          *net.UnixConn // node's connection, nil while none is attached
	everConnected bool
	nodeLost      bool // a node's connection closed (or the first node died before connecting)
	mainDone      bool
	ws            unix.WaitStatus
	signalled     bool             // SIGTERM/INT/HUP: the container is being taken down for good
	expired       bool             // the re-attach window passed: no node is let in any more
	window        <-chan time.Time // the re-attach window, while no node is attached
	grace         <-chan time.Time // a kill under way: fires at killAt, then the SIGKILL
	killAt        int64            // CLOCK_MONOTONIC ns of the SIGKILL grace stands for

	lease      int64            // node's cluster lease: CLOCK_MONOTONIC deadline in ns; 0: none
	leaseGrace time.Duration    // the grace period of the stop the lease's end begins
	leaseTimer <-chan time.Time // fires at the lease's deadline or before (then it is re-armed)
	fenced     bool             // the lease ran out: the container is being stopped for good
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

// send writes one report on the current connection; a failure drops the connection.
func (s *shim) send(m shimMessage) bool {
	b, _ := json.Marshal(m)
	_ = s.conn.SetWriteDeadline(time.Now().Add(shimWriteTimeout))
	if _, err := s.conn.Write(append(b, '\n')); err != nil {
		s.drop()
		return false
	}
	return true
}

// exitMessage is the main process's exit as reported to node.
func (s *shim) exitMessage(event string) shimMessage {
	m := shimMessage{Event: event, PID: s.pid, Exited: s.mainDone && event == "hello", Fenced: s.mainDone && s.fenced}
	switch {
	case !s.mainDone:
	case s.ws.Exited():
		m.ExitCode = s.ws.ExitStatus()
	case s.ws.Signaled():
		m.Signal = int(s.ws.Signal())
		m.ExitCode = 128 + int(s.ws.Signal())
	}
	return m
}

// drop forgets node's connection (closed by node, or failed) and applies the re-attach rule.
func (s *shim) drop() {
	_ = s.conn.Close()
	s.conn = nil
	s.detached()
}

// detached: no node is attached any more (or the first died before it connected).
func (s *shim) detached() {
	s.nodeLost = true
	switch {
	case s.spec.ReattachTimeout > 0:
		s.window = time.After(s.spec.ReattachTimeout)
	case s.mainDone:
		s.window = time.After(0) // nobody will come to hear the exit
	default:
		killTree(s.pid) // the container dies with node's connection
	}
}

// run is the shim's loop; it returns the shim's exit code.
func (s *shim) run(sigs <-chan os.Signal, stdinEOF <-chan struct{}) int {
	defer func() {
		_ = s.listener.Close()
		_ = os.Remove(s.spec.Socket)
		if s.conn != nil {
			_ = s.conn.Close()
		}
	}()
	for {
		select {
		case c := <-s.accepted:
			if s.expired {
				_ = c.Close()
				break
			}
			if s.conn != nil {
				_ = s.conn.Close() // a new node replaces the old; its reader's end is ignored
			}
			s.conn, s.everConnected, s.window = c, true, nil
			go s.read(c) // ends when c is closed
			if s.send(s.exitMessage("hello")) && s.mainDone {
				return 0 // the exit is reported
			}
		case l := <-s.lines:
			if l.conn != s.conn {
				break // from a replaced connection
			}
			s.command(l.line)
		case c := <-s.closed:
			if c == s.conn {
				s.drop()
			}
		case <-stdinEOF:
			stdinEOF = nil
			if !s.everConnected {
				s.detached() // the first node died before it connected
			}
		case <-s.window:
			s.window = nil
			if s.mainDone {
				return 0 // nobody came to hear the exit
			}
			// No node came back: stop the container as node would have, and let no node in.
			s.expired = true
			_ = s.listener.Close()
			_ = os.Remove(s.spec.Socket)
			_ = unix.Kill(-s.pid, unix.SIGTERM)
			s.killBy(monoNow() + int64(s.spec.Grace))
		case <-s.leaseTimer:
			s.leaseTimer = nil
			s.applyPendingLines() // a renewal already on its way counts before the deadline is judged
			if s.lease-monoNow() > 0 {
				s.armLease() // early (or extended meanwhile): wait for the rest
				break
			}
			s.fence()
		case <-s.grace:
			s.grace = nil
			killTree(s.pid)
		case sig := <-sigs:
			if sig != syscall.SIGCHLD {
				s.signalled = true
				killTree(s.pid)
				if s.mainDone {
					return 0 // a shim keeping an exit for the next node is told to go
				}
			}
		}
		if !s.mainDone && reapUntil(s.pid, &s.ws) {
			s.mainDone = true
			s.finish()
			if s.conn != nil && s.send(s.exitMessage("exited")) {
				return 0
			}
			if s.spec.ReattachTimeout <= 0 && s.nodeLost || s.expired || s.signalled {
				return 0
			}
			// Keep the exit for the next node within the window (or for the first one).
		}
	}
}

// command carries out one line node sent.
func (s *shim) command(line string) {
	cmd, arg, _ := strings.Cut(line, " ")
	switch cmd {
	case shimTerm:
		_ = unix.Kill(-s.pid, unix.SIGTERM)
		// The shim keeps the kill's deadline itself, so a node that dies during a grace period
		// does not stretch it (node arms its own SIGKILL as well).
		if grace, err := strconv.ParseInt(arg, 10, 64); err == nil && grace >= 0 {
			s.killBy(monoNow() + grace)
		}
	case shimKill:
		killTree(s.pid)
	case shimLease:
		d, g, _ := strings.Cut(arg, " ")
		deadline, err1 := strconv.ParseInt(d, 10, 64)
		grace, err2 := strconv.ParseInt(g, 10, 64)
		if err1 != nil || err2 != nil || deadline <= 0 || grace < 0 || deadline <= s.lease || s.fenced {
			return // malformed; not later than the lease held (only ever extended); or too late
		}
		s.lease, s.leaseGrace = deadline, time.Duration(grace)
		if s.leaseTimer == nil && !s.fenced {
			s.armLease() // the first lease (an armed timer re-arms itself when it fires early)
		}
	default:
	}
}

// applyPendingLines carries out the lines of the current connection that are already waiting,
// without blocking.
func (s *shim) applyPendingLines() {
	for {
		select {
		case l := <-s.lines:
			if l.conn == s.conn {
				s.command(l.line)
			}
		default:
			return
		}
	}
}

// armLease sets the lease timer for the time left until the deadline, read from CLOCK_MONOTONIC.
func (s *shim) armLease() {
	s.leaseTimer = time.After(time.Duration(max(s.lease-monoNow(), 0)))
}

// fence stops the container because the node's cluster lease ran out, as a TERM with the lease's
// grace would: SIGTERM to the group now (unless a kill is under way: it was sent then), SIGKILL to
// everything when the grace has passed since the deadline — a shim that woke late does not stretch
// it — or at the kill's own deadline, whichever is earlier. It is for good: no renewal cancels it.
func (s *shim) fence() {
	if s.mainDone || s.fenced {
		return
	}
	s.fenced = true
	if s.grace == nil {
		_ = unix.Kill(-s.pid, unix.SIGTERM)
	}
	s.killBy(s.lease + int64(s.leaseGrace)) // the deadline has passed: no overflow
}

// killBy makes the container's tree die by deadline (CLOCK_MONOTONIC ns): a kill already under
// way keeps its SIGKILL deadline when that is earlier, so no stop stretches another.
func (s *shim) killBy(deadline int64) {
	if s.grace != nil && s.killAt <= deadline {
		return
	}
	s.killAt = deadline
	s.grace = time.After(time.Duration(max(deadline-monoNow(), 0)))
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
