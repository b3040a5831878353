package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// fakeRunner is a CommandRunner that writes output and returns err, recording what it was given.
type fakeRunner struct {
	mu          sync.Mutex
	output      string
	err         error
	containerID string
	cmd         []string
	hadDeadline bool
}

func (f *fakeRunner) RunInContainer(ctx context.Context, containerID string, cmd []string, out io.Writer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.containerID, f.cmd = containerID, cmd
	_, f.hadDeadline = ctx.Deadline()
	_, _ = io.WriteString(out, f.output)
	return f.err
}

type exitErr int

func (e exitErr) Error() string { return "exit status " + strconv.Itoa(int(e)) }
func (e exitErr) ExitCode() int { return int(e) }

// TestExec is kubelet's exec_test TestExec (ExecProbeTimeout gate on, as locked since 1.35).
func TestExec(t *testing.T) {
	big := strings.Repeat("x", 11*1024)
	timeoutErr := fmt.Errorf("%w: command testcmd timed out", ErrCommandTimedOut)
	for _, tc := range []struct {
		name       string
		output     string
		err        error
		want       Result
		wantOutput string
		wantErr    bool
		wantReason Reason
	}{
		{name: "ok", output: "OK", want: Success, wantOutput: "OK"},
		{name: "exit 0 error", output: "OK", err: exitErr(0), want: Success, wantOutput: "OK"},
		{name: "truncated", output: big, want: Success, wantOutput: big[:MaxOutputLength]},
		{name: "runner error", err: errors.New("test error"), want: Unknown, wantOutput: "", wantErr: true, wantReason: ReasonError},
		{name: "exit 1", output: "", err: exitErr(1), want: Failure, wantOutput: "", wantReason: ReasonExitCode},
		{name: "exit 1 keeps output", output: "bad", err: exitErr(1), want: Failure, wantOutput: "bad", wantReason: ReasonExitCode},
		{name: "timeout", err: timeoutErr, want: Failure, wantOutput: timeoutErr.Error(), wantReason: ReasonTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRunner{output: tc.output, err: tc.err}
			out, err := New(r).Probe(context.Background(), execProbe(1, "testcmd"), Target{ContainerID: "test://c1"})
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, out.Result)
			assert.Equal(t, tc.wantOutput, out.Output)
			assert.Equal(t, tc.wantReason, out.Reason)
			assert.Equal(t, "test://c1", r.containerID)
			assert.Equal(t, []string{"testcmd"}, r.cmd)
			assert.True(t, r.hadDeadline, "the runner must get the probe timeout as a deadline")
		})
	}
}

// TestLimitWriter is kubelet's TestNewExecInContainer truncation: later bytes are dropped, every
// write reports success.
func TestLimitWriter(t *testing.T) {
	var w limitWriter
	chunk := []byte(strings.Repeat("a", 4000))
	for range 5 {
		n, err := w.Write(chunk)
		require.NoError(t, err)
		require.Equal(t, len(chunk), n)
	}
	assert.Len(t, w.String(), MaxOutputLength)
	assert.LessOrEqual(t, cap(w.buf), MaxOutputLength)
}

func TestExpandCommand(t *testing.T) {
	env := []v1.EnvVar{
		{Name: "A", Value: "script"},
		{Name: "EMPTY", Value: ""},
		{Name: "FROM", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "DUP", Value: "first"},
		{Name: "DUP", Value: "second"},
	}
	for _, tc := range []struct {
		in, want string
	}{
		{"some $(A) $(B)", "some script $(B)"},          // kubelet's TestProbe case
		{"/bin/bash", "/bin/bash"},                      // nothing to expand
		{"$$(A)", "$(A)"},                               // escaped reference
		{"$$$(A)", "$script"},                           // escape then reference
		{"$(A", "$(A"},                                  // unterminated
		{"$A", "$A"},                                    // not a reference
		{"cost: 5$", "cost: 5$"},                        // trailing operator
		{"$(EMPTY)x", "x"},                              // empty literal value
		{"$(FROM)", ""},                                 // valueFrom: kubelet maps the name to its (empty) Value
		{"$(DUP)", "second"},                            // later entries win
		{"$(A)$(A)-$()", "scriptscript-$()"},            // adjacent, empty name
		{"a$(A)b$$c$(NOPE)d", "ascriptb$c$(NOPE)d"},     // mixed
		{"$(A)$", "script$"},                            // reference then trailing operator
		{"日本$(A)語", "日本script語"},                        // multi-byte runes around
		{"$(A)$(", "script$("},                          // trailing unterminated
		{"$((A))", "$((A))"},                            // name "(A" is unknown: kept verbatim
		{"$(A) $(A)) $(A", "script script) $(A"},        // stray closer kept
		{"$$$$", "$$"},                                  // two escapes
		{"$$(A)$(A)", "$(A)script"},                     // escape then reference
		{"x$(A)y$(UNKNOWN)z$$", "xscripty$(UNKNOWN)z$"}, // end with escape
	} {
		got := ExpandCommand([]string{tc.in}, env)
		assert.Equal(t, []string{tc.want}, got, "input %q", tc.in)
	}
	assert.Nil(t, ExpandCommand(nil, env))
	assert.Equal(t, []string{"/bin/bash", "-c", "some script"}, ExpandCommand([]string{"/bin/bash", "-c", "some script"}, nil))
}

// TestExecProbeLocal runs real sh commands through the default local runner.
func TestExecProbeLocal(t *testing.T) {
	c := &v1.Container{Name: "app", Env: []v1.EnvVar{{Name: "GREETING", Value: "hello"}}}
	for _, tc := range []struct {
		name       string
		cmd        []string
		timeout    int32
		want       Result
		wantOutput string
		contains   string
		wantReason Reason
	}{
		{name: "exit 0", cmd: []string{"sh", "-c", "echo ok"}, want: Success, wantOutput: "ok\n"},
		{name: "exit 3", cmd: []string{"sh", "-c", "echo bad; exit 3"}, want: Failure, wantOutput: "bad\n", wantReason: ReasonExitCode},
		{name: "stdout then stderr", cmd: []string{"sh", "-c", "echo err >&2; echo out"}, want: Success, wantOutput: "out\nerr\n"},
		{name: "env expansion", cmd: []string{"echo", "$(GREETING)", "$$(GREETING)"}, want: Success, wantOutput: "hello $(GREETING)\n"},
		{name: "not found", cmd: []string{"/nonexistent/probe-binary"}, want: Failure, contains: "no such file", wantReason: ReasonExitCode},
		{name: "timeout", cmd: []string{"sh", "-c", "sleep 30"}, timeout: 1, want: Failure, wantReason: ReasonTimeout,
			wantOutput: `command timed out: "sh -c sleep 30" timed out after 1s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := New(nil).Probe(context.Background(), execProbe(tc.timeout, tc.cmd...), Target{Container: c})
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.Result, out.Output)
			if tc.contains != "" {
				assert.Contains(t, out.Output, tc.contains)
			} else {
				assert.Equal(t, tc.wantOutput, out.Output)
			}
			assert.Equal(t, tc.wantReason, out.Reason)
		})
	}
}

// TestRunLocalOptions: env and working directory are honoured.
func TestRunLocalOptions(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	err := RunLocal(context.Background(), []string{"sh", "-c", `printf "%s %s" "$FOO" "$(pwd)"`},
		LocalOptions{Env: []string{"FOO=bar", "PATH=" + os.Getenv("PATH")}, Dir: dir}, &out)
	require.NoError(t, err)
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	assert.Equal(t, "bar "+real, out.String())

	require.Error(t, RunLocal(context.Background(), nil, LocalOptions{}, io.Discard))

	r := LocalRunner{Resolve: func(id string) (LocalOptions, error) {
		if id != "local://known" {
			return LocalOptions{}, errors.New("unknown container")
		}
		return LocalOptions{Env: []string{"FOO=resolved"}}, nil
	}}
	out.Reset()
	require.NoError(t, r.RunInContainer(context.Background(), "local://known", []string{"/bin/sh", "-c", `printf "$FOO"`}, &out))
	assert.Equal(t, "resolved", out.String())
	require.ErrorContains(t, r.RunInContainer(context.Background(), "local://other", []string{"true"}, io.Discard), "unknown container")
}

// TestRunLocalCanceled: a cancelled (not timed-out) context kills the command and is not reported
// as a timeout.
func TestRunLocalCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := RunLocal(ctx, []string{"sh", "-c", "sleep 30"}, LocalOptions{}, io.Discard)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, ErrCommandTimedOut)

	// Through Probe: the caller's cancellation is an error, not a Failure.
	ctx, cancel = context.WithCancel(context.Background())
	r := &blockingRunner{started: make(chan struct{})}
	go func() { <-r.started; cancel() }()
	out, err := New(r).Probe(ctx, execProbe(10, "x"), Target{})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, Unknown, out.Result)
	assert.Equal(t, ReasonCanceled, out.Reason)
}

// blockingRunner runs until its context ends, then reports what RunLocal would.
type blockingRunner struct{ started chan struct{} }

func (b *blockingRunner) RunInContainer(ctx context.Context, _ string, _ []string, _ io.Writer) error {
	close(b.started)
	<-ctx.Done()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: x", ErrCommandTimedOut)
	}
	return ctx.Err()
}

// processGone reports whether pid no longer runs: absent, or a zombie waiting for its (re)parent
// to reap it (a dead process; in containers whose init does not reap, killed orphans stay zombies).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return true
	}
	state := s[i+2]
	return state == 'Z' || state == 'X'
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, "the command should have written its pid")
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// TestExecTimeoutKillsProcessTree: a command that ignores SIGTERM and forks a child that also ignores
// it leaves nothing running after the timeout, and the attempt returns within the timeout plus a
// small grace.
func TestExecTimeoutKillsProcessTree(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses /proc")
	}
	dir := t.TempDir()
	parentPid, childPid := filepath.Join(dir, "parent"), filepath.Join(dir, "child")
	// "$$$$" is "$$" once the probe command's $(VAR) expansion has unescaped it.
	script := fmt.Sprintf(`trap '' TERM
sh -c 'trap "" TERM; echo $$$$ > %s; exec sleep 60' &
echo $$$$ > %s
wait`, childPid, parentPid)
	out, err := New(nil).Probe(context.Background(), execProbe(1, "sh", "-c", script), Target{})
	require.NoError(t, err)
	assert.Equal(t, Failure, out.Result)
	assert.Equal(t, ReasonTimeout, out.Reason)
	assert.True(t, strings.HasPrefix(out.Output, "command timed out: "), out.Output)
	assert.Less(t, out.Duration, 3*time.Second, "the attempt must end at its timeout")

	for _, pid := range []int{readPid(t, parentPid), readPid(t, childPid)} {
		// The parent is reaped by RunLocal; the orphaned child is dead once SIGKILL is delivered.
		require.Eventually(t, func() bool { return processGone(pid) }, 2*time.Second, 5*time.Millisecond, "pid %d still runs", pid)
	}
}

// TestExecLeftoverChildrenKilled: a command that exits 0 but leaves a background child (holding its
// output open) succeeds promptly and the child does not survive.
func TestExecLeftoverChildrenKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses /proc")
	}
	dir := t.TempDir()
	childPid := filepath.Join(dir, "child")
	script := fmt.Sprintf(`sh -c 'echo $$$$ > %s; exec sleep 60' &
while [ ! -s %s ]; do :; done
echo done`, childPid, childPid)
	out, err := New(nil).Probe(context.Background(), execProbe(5, "sh", "-c", script), Target{})
	require.NoError(t, err)
	assert.Equal(t, Success, out.Result, out.Output)
	assert.Equal(t, "done\n", out.Output)
	assert.Less(t, out.Duration, 4*time.Second, "must not wait for the background child's timeout")
	pid := readPid(t, childPid)
	require.Eventually(t, func() bool { return processGone(pid) }, 2*time.Second, 5*time.Millisecond, "pid %d still runs", pid)
}

// TestExecFloodingOutput (hostile): 64 MiB of output is read and discarded; the outcome keeps 10 KiB
// and the process does not allocate anything like the flood.
func TestExecFloodingOutput(t *testing.T) {
	if _, err := exec.LookPath("head"); err != nil {
		t.Skip("needs head")
	}
	const flood = 64 << 20
	before := totalAlloc()
	out, err := New(nil).Probe(context.Background(),
		execProbe(10, "sh", "-c", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a; head -c %d /dev/zero >&2", flood, flood)), Target{})
	allocated := totalAlloc() - before
	require.NoError(t, err)
	assert.Equal(t, Success, out.Result)
	assert.Equal(t, strings.Repeat("a", MaxOutputLength), out.Output)
	assert.Less(t, allocated, uint64(8<<20), "reading a %d-byte flood allocated %d bytes", 2*flood, allocated)
}

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestRunLocalDeadline: called directly (not through Probe), the timeout error names the time the
// command was given and the command was killed.
func TestRunLocalDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var out strings.Builder
	err := RunLocal(ctx, []string{"sh", "-c", "echo started; sleep 30"}, LocalOptions{}, &out)
	require.ErrorIs(t, err, ErrCommandTimedOut)
	assert.Contains(t, err.Error(), `command timed out: "sh -c echo started; sleep 30" timed out after `)
	assert.Equal(t, "started\n", out.String(), "output produced before the kill is kept")
}

// TestLimitWriterReadFrom: the io.Copy path keeps the first 10 KiB and drains the rest.
func TestLimitWriterReadFrom(t *testing.T) {
	for _, size := range []int{0, 100, MaxOutputLength, 3*MaxOutputLength + 7} {
		var w limitWriter
		src := strings.Repeat("b", size)
		n, err := io.Copy(&w, strings.NewReader(src))
		require.NoError(t, err)
		assert.Equal(t, int64(size), n)
		assert.Equal(t, src[:min(size, MaxOutputLength)], w.String())
		assert.LessOrEqual(t, cap(w.buf), MaxOutputLength)
	}
	var w limitWriter
	_, err := w.ReadFrom(iotest.ErrReader(errors.New("boom")))
	require.EqualError(t, err, "boom")
}
