// Package racecheck lets tests tolerate the data races of the pinned protoactor version, and only
// those: Go's race detector has no suppressions, so a test whose scenario hits a known protoactor
// race runs in a child process (the same race-instrumented test binary), and the parent fails
// unless the child's test passed and every race the child reported matches a Rule.
//
// A Rule is narrow by construction: every frame it names must appear in the report, and the
// innermost frame of each racing access must be outside probeactor's own packages. So a race in
// probeactor code (or a new protoactor race) still fails the test. Unexpected applies the same rules to the
// stderr of child processes started by tests (fleet aggregators), which the race detector writes
// as it goes.
//
// Only the frames of the two racing accesses count (not the stacks that created the goroutines).
//
// Known rules (KnownProtoactorRaces), each reproduced by the fleet tests:
//   - remote.(*Remote).Start builds and installs gRPC's process-wide logger (grpclog.NewLoggerV2,
//     SetLoggerV2) on every start, racing with gRPC logging of an already running server or client
//     connection: only with two or more remotes in one process (tests, benchmark);
//   - remote.(*Remote).Shutdown sets endpointReader.suspended, a plain bool the reader loops read;
//   - remote.(*endpointManager).stop writes the plain bool endpointManager.stopped that senders read
//     (remote.Shutdown while another member still sends to this one);
//   - remote.(*endpointManager).stop sets its plain connections field to nil after unsubscribing
//     from the event stream, while an endpoint writer whose stream broke (a peer that stopped
//     first) publishes EndpointTerminatedEvent to a subscriber list it copied before the
//     unsubscribe, so removeEndpoint reads connections (cluster members stopping together; CI hit
//     it once, 2026-11-24, in cluster/internal/testmember's graceful leave);
//   - remote.(*endpointManager).stop sends "leaving" on every endpoint reader's disconnect channel
//     while a reader whose stream just ended closes its own (endpointReader.Receive's deferred
//     close): a send racing a close, hit by cluster members shutting down while a peer's stream
//     ends (cluster/membership). If the close wins, remote.Shutdown panics with "send on closed
//     channel" (cluster/membership's tests hit it about once in 50 runs on a loaded machine);
//     remotesec.Stop recovers that one panic and stops the gRPC server hard.
//
// No longer listed: remote.(*BlockList).Block racing IsBlocked. Only protoactor's cluster package
// calls Block (MemberList and gossip), and nothing in probeactor runs it since cluster/membership
// stands on the remote alone, so that race cannot happen and a report of it must fail.
//
// Add a rule only for a race reproduced in protoactor's own frames, with the narrowest frames
// that identify it, and list it here.
package racecheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Rule allow-lists one known race: it matches a report whose frames include every entry of Frames
// (function names, e.g. "google.golang.org/grpc/grpclog.SetLoggerV2").
type Rule struct {
	Name   string
	Frames []string
}

// KnownProtoactorRaces are the races of the pinned protoactor's remote package that tests may hit.
var KnownProtoactorRaces = []Rule{
	{Name: "protoactor remote.Start replaces gRPC's global logger while another server logs",
		Frames: []string{"google.golang.org/grpc/grpclog.SetLoggerV2", "github.com/asynkron/protoactor-go/remote.(*Remote).Start"}},
	{Name: "protoactor remote.Start builds gRPC's global logger while another server logs",
		Frames: []string{"google.golang.org/grpc/grpclog.NewLoggerV2", "github.com/asynkron/protoactor-go/remote.(*Remote).Start"}},
	{Name: "protoactor endpointReader.suspended is a plain bool (Remote.Shutdown)",
		Frames: []string{"github.com/asynkron/protoactor-go/remote.(*endpointReader).suspend", "github.com/asynkron/protoactor-go/remote.(*endpointReader).Receive"}},
	{Name: "protoactor endpointManager.stop clears its connections while a lost connection's event reads them",
		Frames: []string{"github.com/asynkron/protoactor-go/remote.(*endpointManager).stop", "github.com/asynkron/protoactor-go/remote.(*endpointManager).removeEndpoint"}},
	{Name: "protoactor endpointManager.stopped is a plain bool",
		Frames: []string{"github.com/asynkron/protoactor-go/remote.(*endpointManager).stop"}},
	{Name: "protoactor remote.Shutdown signals endpoint readers on channels they close",
		Frames: []string{"github.com/asynkron/protoactor-go/remote.(*endpointManager).stop.func1", "github.com/asynkron/protoactor-go/remote.(*endpointReader).Receive.func1"}},
}

// ownPrefix marks frames of this project: a race whose access is in one is never tolerated.
const ownPrefix = "github.com/probeactor/probeactor/"

// Report is one "WARNING: DATA RACE" block.
type Report struct {
	Text    string
	frames  []string // every frame of the two racing accesses' stacks
	access  []string // innermost frame of each racing access
	matched string   // the rule's name, "" when none
}

// childLog matches the child test's own t.Log lines ("    file_test.go:12: …").
var childLog = regexp.MustCompile(`^\s+\w+_test\.go:\d+: `)

var accessHeader = regexp.MustCompile(`^(Previous )?(Atomic )?(write|read|Write|Read) at 0x[0-9a-f]+ by `)

// Parse extracts the race reports from a process's output.
func Parse(out []byte) []Report {
	var reports []Report
	var cur *Report
	expectAccessFrame, inAccess := false, false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "WARNING: DATA RACE"):
			reports = append(reports, Report{})
			cur = &reports[len(reports)-1]
			expectAccessFrame, inAccess = false, false
		case cur == nil:
			continue
		case strings.HasPrefix(line, "=================="):
			cur = nil
			continue
		case accessHeader.MatchString(line):
			expectAccessFrame, inAccess = true, true
		case strings.HasPrefix(line, "Goroutine "):
			inAccess = false // a creation stack: not part of the race
		default:
			trimmed := strings.TrimSpace(line)
			if inAccess && strings.HasPrefix(line, "  ") && !strings.HasPrefix(trimmed, "/") && strings.HasSuffix(trimmed, ")") {
				fn := trimmed[:strings.LastIndex(trimmed, "(")]
				cur.frames = append(cur.frames, fn)
				if expectAccessFrame {
					cur.access = append(cur.access, fn)
					expectAccessFrame = false
				}
			}
		}
		if cur != nil {
			cur.Text += line + "\n"
		}
	}
	return reports
}

// Match names the rule that tolerates r, or "" when none does.
func (r *Report) Match(rules []Rule) string {
	for _, fn := range r.access {
		if strings.HasPrefix(fn, ownPrefix) {
			return ""
		}
	}
	for _, rule := range rules {
		all := true
		for _, want := range rule.Frames {
			found := false
			for _, f := range r.frames {
				if f == want {
					found = true
					break
				}
			}
			if !found {
				all = false
				break
			}
		}
		if all && len(rule.Frames) > 0 {
			return rule.Name
		}
	}
	return ""
}

// Unexpected returns the reports in out that no rule tolerates.
func Unexpected(out []byte, rules []Rule) []Report {
	var bad []Report
	for _, r := range Parse(out) {
		if r.matched = r.Match(rules); r.matched == "" {
			bad = append(bad, r)
		}
	}
	return bad
}

// childEnv names the test a re-executed test binary should run as the child.
const childEnv = "PROBEACTOR_RACECHECK_CHILD"

// okMarker is printed by a child whose test body finished without failing.
const okMarker = "racecheck: child test body passed"

// InChild runs body as the scenario of t. In the parent it re-executes the test binary for t
// alone and checks the child's outcome: the body reported no failure and every race report of the
// child matches rules. In the child it runs body with a testing.TB that records the body's own
// failures (Error, Fatal, …: testify's assert and require), because *testing.T's Failed also turns
// true on any race, which is exactly what the parent judges by the rules instead.
func InChild(t *testing.T, rules []Rule, body func(t testing.TB)) {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		rec := &recorder{T: t}
		func() {
			defer func() {
				if !rec.returned {
					rec.failed.Store(true)
				}
			}()
			body(rec)
			rec.returned = true
		}()
		if !rec.failed.Load() {
			fmt.Println(okMarker)
		}
		return
	}
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("racecheck.InChild: use it in a top-level test, not in subtest %s", t.Name())
	}
	start := time.Now()
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name(), "GORACE=halt_on_error=0")
	out, err := cmd.CombinedOutput()
	bad := Unexpected(out, rules)
	passed := bytes.Contains(out, []byte(okMarker))
	if !passed || len(bad) > 0 {
		t.Logf("child process (%v, exit %v) output:\n%s", time.Since(start).Round(time.Millisecond), err, out)
	}
	if !passed {
		t.Fatalf("the test body failed in the child process (see its output above)")
	}
	if bytes.Contains(out, []byte("found unexpected goroutines")) {
		t.Logf("child process output:\n%s", out)
		t.Errorf("the child process leaked goroutines (goleak, see its output above)")
	}
	for _, r := range bad {
		t.Errorf("data race outside the allow-listed protoactor frames:\n%s", r.Text)
	}
	if len(bad) == 0 {
		for _, line := range strings.Split(string(out), "\n") {
			if childLog.MatchString(line) {
				t.Log("child: " + strings.TrimSpace(line))
			}
		}
		for _, r := range Parse(out) {
			t.Logf("tolerated a known protoactor race: %s", r.Match(rules))
		}
	}
}

// recorder is the child's testing.TB: *testing.T with the body's own failures recorded.
type recorder struct {
	*testing.T
	failed   atomic.Bool
	returned bool
}

func (r *recorder) Fail()                     { r.failed.Store(true); r.T.Fail() }
func (r *recorder) FailNow()                  { r.failed.Store(true); r.T.FailNow() }
func (r *recorder) Error(args ...any)         { r.failed.Store(true); r.T.Error(args...) }
func (r *recorder) Errorf(f string, a ...any) { r.failed.Store(true); r.T.Errorf(f, a...) }
func (r *recorder) Fatal(args ...any)         { r.failed.Store(true); r.T.Fatal(args...) }
func (r *recorder) Fatalf(f string, a ...any) { r.failed.Store(true); r.T.Fatalf(f, a...) }
func (r *recorder) Failed() bool              { return r.failed.Load() }
