package e2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/freeport"
	"github.com/probeactor/probeactor/internal/logtest"
)

// TestEmbeddedDemo runs `node run` with no manifest, as the README's quick start does, and checks
// that the first ~30 s show what the README promises.
func TestEmbeddedDemo(t *testing.T) {
	t.Parallel()
	port := freeport.Port(t)
	n := &node{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), stdout: &logtest.Buffer{}, stderr: &logtest.Buffer{}, done: make(chan struct{})}
	n.cmd = exec.Command(nodeBin, "run", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--root-dir", t.TempDir())
	n.cmd.Stdout, n.cmd.Stderr = n.stdout, n.stderr
	require.NoError(t, n.cmd.Start())
	go func() { n.waitErr = n.cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		n.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("node stdout:\n%s\nnode stderr:\n%s", n.stdout, n.stderr)
		}
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get(n.base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}, timeout, tick)

	n.hasEvent("demo", "web", "Unhealthy", "Startup probe failed: HTTP probe failed with statuscode: 503")
	n.eventually("demo", func(p v1.Pod) bool { return p.Status.ContainerStatuses[0].Ready }, "web ready after its startup probe")
	n.hasEvent("demo", "web", "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503")
	n.eventually("demo", func(p v1.Pod) bool { return !p.Status.ContainerStatuses[0].Ready }, "web unready for a while")
	n.hasEvent("demo", "api", "Unhealthy", `Liveness probe failed: service unhealthy (responded with "NOT_SERVING")`)
	n.hasEvent("demo", "api", "Killing", "Container api failed liveness probe, will be restarted")
	p := n.eventually("demo", func(p v1.Pod) bool {
		return condition(p, v1.PodReady) == v1.ConditionTrue && p.Status.ContainerStatuses[1].RestartCount == 1
	}, "the demo settles: both ready, api restarted once")
	assert.Equal(t, v1.PodRunning, p.Status.Phase)
	out := n.stdout.String()
	assert.Contains(t, out, "web  Container created")
	assert.Contains(t, out, "web  Container started")
	assert.Contains(t, out, "api  Readiness probe failed: cat: ready: No such file or directory", "the exec readiness probe")
}
