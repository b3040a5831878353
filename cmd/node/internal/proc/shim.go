package proc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
}

// shimMessage is one line the shim writes on its status pipe (fd 3).
type shimMessage struct {
	Event    string `json:"event"` // "started", "error", "exited"
	PID      int    `json:"pid,omitempty"`
	ExitCode int    `json:"exitCode,omitempty"`
	Signal   int    `json:"signal,omitempty"`
	Message  string `json:"message,omitempty"`
}

// Shim commands, one per line on the shim's stdin.
const (
	shimTerm = "TERM" // SIGTERM to the container's process group
	shimKill = "KILL" // SIGKILL to the container and everything it forked
)

// ShimMain runs the shim and never returns. args are the arguments after ShimArg.
//
// The shim is the only process that knows the container's process tree, so it is the one that
// guarantees nothing survives:
//   - it is a child subreaper, so anything the container forks and orphans is re-parented to it;
//   - the container runs in its own process group with stdin /dev/null and stdout/stderr a pipe the
//     shim copies to the log file (its own stdout); output the log cannot take (disk full, I/O error)
//     is dropped, so a running container never sees its log fail — containerd's shim does the same;
//   - node controls it through its stdin: TERM, KILL, or end-of-file — which is also what happens
//     when node dies, even by SIGKILL, since node holds the only write end — and end-of-file means
//     KILL;
//   - when the container's main process exits, the shim kills what is left of the group and every
//     other descendant (kubelet: a container's processes die with its PID 1), reaps them all, reports
//     the exit status on fd 3 and exits.
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

	// Pdeathsig fires when the thread that forked the child exits: keep this goroutine on its thread
	// for the life of the shim so only the shim's own death can trigger it.
	runtime.LockOSThread()
	output, outputW, err := os.Pipe()
	if err != nil {
		fail("output pipe: %v", err)
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Stdout, cmd.Stderr = outputW, outputW
	// Pdeathsig is a second line of defence should the shim itself be SIGKILLed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fail("%v", err)
	}
	_ = outputW.Close() // the container holds the write end now: EOF once all of it has exited
	logged := make(chan struct{})
	go func() { // ends at EOF: when every process of the container has exited
		defer close(logged)
		copyLog(os.Stdout, output)
	}()
	pid := cmd.Process.Pid
	report(shimMessage{Event: "started", PID: pid})

	control := make(chan string, 1)
	go func() { // ends with the process
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			control <- strings.TrimSpace(sc.Text())
		}
		control <- shimKill // EOF: node is gone or wants it dead
	}()

	var ws unix.WaitStatus
	mainDone := false
	for !mainDone {
		select {
		case cmdName := <-control:
			switch cmdName {
			case shimTerm:
				_ = unix.Kill(-pid, unix.SIGTERM)
			case shimKill:
				killTree(pid)
			}
		case s := <-sigs:
			if s != syscall.SIGCHLD {
				killTree(pid)
			}
		}
		mainDone = reapUntil(pid, &ws)
	}
	// The main process is gone: nothing else of the container may survive it.
	killTree(pid)
	for {
		var other unix.WaitStatus
		if _, err := unix.Wait4(-1, &other, 0, nil); errors.Is(err, unix.ECHILD) {
			break
		} else if err != nil && !errors.Is(err, unix.EINTR) {
			break
		}
		killTree(pid) // a reaped parent may have re-parented more orphans to us
	}
	// Everything that could write is dead: the log is complete before node hears of the exit
	// (bounded, should an escaped process still hold the pipe).
	select {
	case <-logged:
	case <-time.After(logDrainGrace):
	}
	m := shimMessage{Event: "exited"}
	switch {
	case ws.Exited():
		m.ExitCode = ws.ExitStatus()
	case ws.Signaled():
		m.Signal = int(ws.Signal())
		m.ExitCode = 128 + int(ws.Signal())
	}
	report(m)
	os.Exit(0)
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
