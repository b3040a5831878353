// Package fleettest runs fleet aggregators and other children as real processes for tests: the
// test binary re-executes itself in a role (Main, called first in TestMain), so the child is the
// same race-instrumented code, without building the node binary. A child's stderr is checked for
// data races with internal/racecheck's allow-list when the test ends.
//
// Roles are registered by the test packages that need them (Register, before Main); this package
// knows none, so it imports nothing above internal/. StartAggregator runs the AggregatorRole,
// which a test package registers as an aggregator that takes the harness's flags (--listen,
// --remote-listen, --node-monitor-grace-period, --log-level and remotesectest's TLS flags), runs
// until SIGTERM and logs "fleet aggregator is running: api=http://HOST:PORT remote=HOST:PORT":
// cmd/node registers the real `node fleet`; packages that cannot import cmd/node register
// fleet/aggregator/aggregatortest.Child.
package fleettest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/internal/racecheck"
)

const childEnv = "PROBEACTOR_FLEETTEST_CHILD"

// raceExitCode is the exit code the race detector gives a process that reported races.
const raceExitCode = 66

// AggregatorRole is the role StartAggregator runs; see the package doc for what it must do.
const AggregatorRole = "aggregator"

// roles a re-executed test binary can take, registered by tests (an aggregator, a node, an
// unguarded protoactor member for the version watch).
var roles = map[string]func(args []string) int{}

// Register adds a child role: main runs in the child with the child's arguments and returns its
// exit code. Call it from TestMain before Main.
func Register(name string, main func(args []string) int) { roles[name] = main }

// Main turns this process into a child when the environment says so, and never returns then.
// Call it first in TestMain, after Register.
func Main() {
	role := os.Getenv(childEnv)
	if role == "" {
		return
	}
	main, ok := roles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "fleettest: unknown child role %q (register it in TestMain before fleettest.Main)\n", role)
		os.Exit(3)
	}
	os.Exit(main(os.Args[1:]))
}

// Proc is one child process.
type Proc struct {
	t    testing.TB
	role string
	bin  string // a program to run instead of this test binary in a role
	args []string
	// wrapper is a command that execs the role (StartRoleVia); none: the role runs directly.
	wrapper []string
	cmd     *exec.Cmd
	stderr  *logtest.Buffer
	stdout  *logtest.Buffer
	done    chan struct{}
	err     error
	// API is the aggregator's HTTP base URL, Remote its remote address (aggregators only).
	API, Remote string
	mu          sync.Mutex
	history     []string // stderr of earlier runs (before Kill/Restart)
}

// StartAggregator runs the AggregatorRole as a child with a short grace period (override with args,
// which come last) and waits until it answers /healthz. It fails the test when the test package
// registered no such role. Unless args name them, its addresses are loopback
// port 0: the child binds them and the test reads them from its log, so no other process can take a
// port between a test picking it and the child binding it (a picked-then-closed free port once let
// another package's child answer this one's /healthz). A restart reuses the ports it bound.
func StartAggregator(t testing.TB, args ...string) *Proc {
	t.Helper()
	if _, ok := roles[AggregatorRole]; !ok {
		t.Fatalf("fleettest: no %q role is registered: in TestMain, before fleettest.Main, call "+
			"fleettest.Register(fleettest.AggregatorRole, aggregatortest.Child) (package fleet/aggregator/aggregatortest)", AggregatorRole)
	}
	all := append([]string{"--listen", "127.0.0.1:0", "--remote-listen", "127.0.0.1:0", "--node-monitor-grace-period", "3s", "--log-level", "debug"}, args...)
	p := &Proc{t: t, role: AggregatorRole, args: all}
	p.start()
	t.Cleanup(p.cleanup)
	p.WaitHealthy()
	return p
}

// runningLine is the aggregator's log line that names the addresses it bound.
var runningLine = regexp.MustCompile(`fleet aggregator is running: api=http://(\S+) remote=(\S+)`)

// bound waits (at most until deadline) for this run's log line naming the aggregator's addresses,
// then records them in API and Remote and in the arguments a restart uses.
func (p *Proc) bound(deadline time.Time) bool {
	for time.Now().Before(deadline) && !p.Exited() {
		if m := runningLine.FindStringSubmatch(p.Stderr()); m != nil {
			if p.API != "" { // a restart: same ports (the arguments name them); tests read API unlocked
				return true
			}
			p.API, p.Remote = "http://"+m[1], m[2]
			for i := 0; i+1 < len(p.args); i++ {
				switch p.args[i] {
				case "--listen":
					p.args[i+1] = m[1]
				case "--remote-listen":
					p.args[i+1] = m[2]
				}
			}
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// StartBinary runs the program bin (a test-only binary the test built, e.g. a cluster member) with
// args as a child, with the same capture, restart and race checks as a role.
func StartBinary(t testing.TB, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{t: t, role: filepath.Base(bin), bin: bin, args: args}
	p.start()
	t.Cleanup(p.cleanup)
	return p
}

// StartRole runs a registered role as a child with args.
func StartRole(t testing.TB, role string, args ...string) *Proc {
	t.Helper()
	p := &Proc{t: t, role: role, args: args}
	p.start()
	t.Cleanup(p.cleanup)
	return p
}

// StartRoleVia runs a registered role as a child through a wrapper that execs it (e.g. `ip netns
// exec NAME`, which runs it in a network namespace and keeps its PID: signals reach the role).
func StartRoleVia(t testing.TB, wrapper []string, role string, args ...string) *Proc {
	t.Helper()
	p := &Proc{t: t, role: role, args: args, wrapper: wrapper}
	p.start()
	t.Cleanup(p.cleanup)
	return p
}

func (p *Proc) start() {
	p.t.Helper()
	p.stdout, p.stderr = &logtest.Buffer{}, &logtest.Buffer{}
	p.done = make(chan struct{})
	if p.bin != "" {
		p.cmd = exec.Command(p.bin, p.args...)
		p.cmd.Env = append(os.Environ(), "GORACE=halt_on_error=0")
	} else {
		argv := append(append(slices.Clone(p.wrapper), os.Args[0]), p.args...)
		p.cmd = exec.Command(argv[0], argv[1:]...)
		p.cmd.Env = append(os.Environ(), childEnv+"="+p.role, "GORACE=halt_on_error=0")
	}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.role, err)
	}
	cmd, done := p.cmd, p.done
	go func() { p.setErr(cmd.Wait()); close(done) }() // ends when the child exits
}

func (p *Proc) setErr(err error) { p.mu.Lock(); p.err = err; p.mu.Unlock() }

// Err is the child's exit error once it exited.
func (p *Proc) Err() error { p.mu.Lock(); defer p.mu.Unlock(); return p.err }

// Exited says whether the child process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the child exits.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Stdout returns the current run's stdout.
func (p *Proc) Stdout() string { return p.stdout.String() }

// Signal sends sig to the child.
func (p *Proc) Signal(sig os.Signal) { _ = p.cmd.Process.Signal(sig) }

// Stderr returns the current run's stderr.
func (p *Proc) Stderr() string { return p.stderr.String() }

// Pid is the running process's ID (of its latest start, after a Restart).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// WaitHealthy waits until the aggregator answers /healthz (at most 60 s: the machine is shared).
func (p *Proc) WaitHealthy() {
	p.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	if !p.bound(deadline) && !p.Exited() {
		p.t.Fatalf("%s did not log its addresses within 60 s\nstderr:\n%s", p.role, p.Stderr())
	}
	for time.Now().Before(deadline) {
		if p.Exited() {
			p.t.Fatalf("%s exited early: %v\nstderr:\n%s", p.role, p.Err(), p.Stderr())
		}
		if p.Healthy() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.t.Fatalf("%s did not answer /healthz within 60 s\nstderr:\n%s", p.role, p.Stderr())
}

// Healthy says whether /healthz answers ok now.
func (p *Proc) Healthy() bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(p.API + "/healthz")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK && string(b) == "ok"
}

// Metric sums the samples of the metric name whose label set contains labels ("" for all), from
// the Prometheus text served at baseURL/metrics.
func Metric(t testing.TB, baseURL, name, labels string) float64 {
	t.Helper()
	resp, err := http.Get(baseURL + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, name) && strings.Contains(line, labels) {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// Kill sends SIGKILL and waits for the child to be gone.
func (p *Proc) Kill() {
	p.t.Helper()
	_ = p.cmd.Process.Kill()
	<-p.done
	p.archive()
}

// Restart starts the child again with the same arguments (same ports) after Kill or an exit, and
// waits until it is healthy (aggregators).
func (p *Proc) Restart() {
	p.t.Helper()
	if !p.Exited() {
		p.t.Fatalf("restart of a running %s", p.role)
	}
	p.start()
	if p.role == AggregatorRole {
		p.WaitHealthy()
	}
}

func (p *Proc) archive() {
	p.mu.Lock()
	p.history = append(p.history, p.stderr.String())
	p.mu.Unlock()
}

// Stop sends SIGTERM, waits (at most 30 s, then SIGKILL) and returns the exit error. An exit by
// the race detector (status 66) whose every race the allow-list tolerates is a clean exit: a
// member that hit one of protoactor's known shutdown races stopped as it should (cleanup still
// reports any race outside the allow-list, from every run's stderr).
func (p *Proc) Stop() error {
	if p.Exited() {
		return p.exitErr()
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.archive()
		return fmt.Errorf("%s did not exit within 30 s of SIGTERM", p.role)
	}
	p.archive()
	return p.exitErr()
}

// exitErr is the exited child's exit error, nil for a race detector exit that only reported
// allow-listed races (racedExit).
func (p *Proc) exitErr() error {
	err := p.Err()
	if racedExit(err, p.Stderr()) {
		return nil
	}
	return err
}

// racedExit says whether err is the race detector's exit and stderr reports races, all of them
// allow-listed.
func racedExit(err error, stderr string) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != raceExitCode {
		return false
	}
	out := []byte(stderr)
	return len(racecheck.Parse(out)) > 0 && len(racecheck.Unexpected(out, racecheck.KnownProtoactorRaces)) == 0
}

func (p *Proc) cleanup() {
	wasRunning := !p.Exited()
	err := p.Stop()
	p.mu.Lock()
	all := strings.Join(p.history, "\n--- restarted ---\n")
	p.mu.Unlock()
	bad := racecheck.Unexpected([]byte(all), racecheck.KnownProtoactorRaces)
	for _, r := range bad {
		p.t.Errorf("%s child reported a data race outside the allow-listed protoactor frames:\n%s", p.role, r.Text)
	}
	if wasRunning && err != nil {
		p.t.Errorf("%s: exit after SIGTERM: %v", p.role, err)
	}
	if p.t.Failed() {
		p.t.Logf("%s stderr:\n%s", p.role, all)
	}
}
