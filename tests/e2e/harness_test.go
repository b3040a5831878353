package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/freeport"
	"github.com/probeactor/probeactor/internal/logtest"
)

// nodeBin is the node binary built once by TestMain.
var nodeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "probeactor-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	nodeBin = filepath.Join(dir, "node")
	args := []string{"build", "-o", nodeBin}
	if os.Getenv("E2E_RACE") == "1" { // a race-instrumented node: slower, for hunting data races
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/probeactor/probeactor/cmd/node")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build node:", err)
		os.Exit(1)
	}
	code := 0
	func() {
		defer os.RemoveAll(dir)
		goleak.VerifyTestMain(exitCapture{&code, m})
	}()
	os.Exit(code)
}

// exitCapture lets TestMain clean up after goleak.VerifyTestMain, which calls os.Exit itself.
type exitCapture struct {
	code *int
	m    *testing.M
}

func (e exitCapture) Run() int { *e.code = e.m.Run(); return *e.code }

const (
	tick    = 50 * time.Millisecond
	timeout = 40 * time.Second
)

// node is one running `node run`.
type node struct {
	t       *testing.T
	cmd     *exec.Cmd
	base    string
	rootDir string
	stdout  *logtest.Buffer
	stderr  *logtest.Buffer
	done    chan struct{}
	waitErr error
	stopped bool
}

// render fills a manifest template: {{.Node}} is the node binary, {{.Dir}} a fresh directory, and
// any extra values passed in.
func render(t *testing.T, tmpl string, extra map[string]any) (string, map[string]any) {
	t.Helper()
	data := map[string]any{"Node": nodeBin, "Dir": t.TempDir()}
	for k, v := range extra {
		data[k] = v
	}
	var b strings.Builder
	require.NoError(t, template.Must(template.New("m").Option("missingkey=error").Parse(tmpl)).Execute(&b, data))
	return b.String(), data
}

// writeManifest stores a manifest in a temporary file.
func writeManifest(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pod.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// startNode runs `node run -f manifest` (no -f for an empty manifest: flags then say what to run)
// with fast CrashLoopBackOff settings and waits for /healthz. Cleanup stops it with SIGTERM and
// requires exit code 0.
func startNode(t *testing.T, manifest string, flags ...string) *node {
	t.Helper()
	port := freeport.Port(t)
	n := &node{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), rootDir: t.TempDir(), stdout: &logtest.Buffer{}, stderr: &logtest.Buffer{}, done: make(chan struct{})}
	args := []string{"run", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--root-dir", n.rootDir,
		"--crashloop-backoff-initial", "1s", "--crashloop-backoff-max", "2s", "--log-level", "debug",
		// A node the harness has to SIGKILL (one that did not stop in time) takes its containers
		// down with it, as before issue 20; a test about the re-attach window gives its own.
		"--reattach-timeout", "0"}
	if manifest != "" {
		args = append(args, "-f", writeManifest(t, manifest))
	}
	args = append(args, flags...)
	n.cmd = exec.Command(nodeBin, args...)
	n.cmd.Stdout, n.cmd.Stderr = n.stdout, n.stderr
	require.NoError(t, n.cmd.Start())
	go func() { n.waitErr = n.cmd.Wait(); close(n.done) }() // ends when node exits
	t.Cleanup(func() {
		n.stop(syscall.SIGTERM)
		assert.NotContains(t, n.stderr.String(), "DATA RACE", "node (built with E2E_RACE=1) reported a data race")
		if t.Failed() {
			t.Logf("node stdout:\n%s\nnode stderr:\n%s", n.stdout, n.stderr)
		}
	})
	exited := func() bool {
		select {
		case <-n.done:
			return true
		default:
			return false
		}
	}
	require.Eventually(t, func() bool {
		if exited() {
			return true
		}
		resp, err := http.Get(n.base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, timeout, tick)
	if exited() {
		n.stopped = true
		t.Fatalf("node exited early: %v\nstderr:\n%s", n.waitErr, n.stderr)
	}
	return n
}

// stop signals node and waits for it to exit; after SIGTERM the exit code must be 0.
func (n *node) stop(sig syscall.Signal) {
	if n.stopped {
		return
	}
	n.stopped = true
	_ = n.cmd.Process.Signal(sig)
	select {
	case <-n.done:
	case <-time.After(60 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
		n.t.Errorf("node did not exit within 60 s of %v", sig)
	}
	if sig == syscall.SIGTERM {
		require.NoError(n.t, n.waitErr, "node's exit after SIGTERM")
	}
}

func (n *node) get(path string, v any) error {
	resp, err := http.Get(n.base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	if s, ok := v.(*string); ok {
		*s = string(b)
		return nil
	}
	return json.Unmarshal(b, v)
}

// pod fetches /pods/default/<name>.
func (n *node) pod(name string) v1.Pod {
	var p v1.Pod
	require.NoError(n.t, n.get("/pods/default/"+name, &p))
	return p
}

// container returns a container's status (regular or init) from /pods.
func (n *node) container(pod, name string) v1.ContainerStatus {
	p := n.pod(pod)
	for _, cs := range append(append([]v1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if cs.Name == name {
			return cs
		}
	}
	return v1.ContainerStatus{}
}

// eventually polls cond on the pod until it holds.
func (n *node) eventually(pod string, cond func(p v1.Pod) bool, msg string) v1.Pod {
	n.t.Helper()
	var mu sync.Mutex
	var last v1.Pod
	ok := assert.Eventually(n.t, func() bool {
		var p v1.Pod
		if n.get("/pods/default/"+pod, &p) != nil || len(p.Status.ContainerStatuses) < len(p.Spec.Containers) ||
			len(p.Status.InitContainerStatuses) < len(p.Spec.InitContainers) {
			return false // not started yet
		}
		mu.Lock()
		last = p
		mu.Unlock()
		return cond(p)
	}, timeout, tick)
	mu.Lock()
	defer mu.Unlock()
	if !ok {
		b, _ := json.MarshalIndent(last.Status, "", "  ")
		n.t.Fatalf("%s: condition not met within %s; last status:\n%s", msg, timeout, b)
	}
	return last
}

// events returns "Reason: message" for every event of a pod's container.
func (n *node) events(pod, container string) []v1.Event {
	var list v1.EventList
	require.NoError(n.t, n.get("/events", &list))
	var out []v1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == pod && (container == "" || e.InvolvedObject.FieldPath == "spec.containers{"+container+"}" || e.InvolvedObject.FieldPath == "spec.initContainers{"+container+"}") {
			out = append(out, e)
		}
	}
	return out
}

// hasEvent waits for an event with the reason whose message contains text.
func (n *node) hasEvent(pod, container, reason, text string) v1.Event {
	n.t.Helper()
	var mu sync.Mutex
	var found v1.Event
	if !assert.Eventually(n.t, func() bool {
		var list v1.EventList
		if n.get("/events", &list) != nil {
			return false
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == pod && e.Reason == reason && strings.Contains(e.Message, text) &&
				(container == "" || strings.HasSuffix(e.InvolvedObject.FieldPath, "{"+container+"}")) {
				mu.Lock()
				found = e
				mu.Unlock()
				return true
			}
		}
		return false
	}, timeout, tick) {
		n.t.Fatalf("no %s event containing %q for %s/%s; events: %+v", reason, text, pod, container, n.events(pod, container))
	}
	mu.Lock()
	defer mu.Unlock()
	return found
}

func condition(p v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// runNode runs a short node command (validate, get, logs) and returns its exit code and output.
func runNode(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	default:
		t.Fatalf("run node %v: %v", args, err)
		return -1, "", ""
	}
}

// readPIDs reads whitespace-separated process IDs from a file.
func readPIDs(path string) []int {
	b, _ := os.ReadFile(path)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil && p > 0 {
			pids = append(pids, p)
		}
	}
	return pids
}

// describePIDs is /proc's view of each live process among pids: its stat line (state, parent,
// process group, session) and command line, for a failure message.
func describePIDs(pids []int) string {
	var b strings.Builder
	for _, p := range pids {
		if !alive(p) {
			continue
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		fmt.Fprintf(&b, "  %s\n    cmdline %q\n", strings.TrimSpace(string(stat)), strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return b.String()
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}
