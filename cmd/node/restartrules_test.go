package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/features"
	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/internal/podapi"
)

// TestRestartRulesThroughNode runs kubelet 1.37's restart rules through the whole node (manifest,
// runtime, probe tree) on real processes, under restartPolicy Never: "retry" exits 7 once and its
// Restart rule brings it back; "app" exits 42 once and its RestartAllContainers rule restarts the
// whole pod in place (the init container runs again). "sidekick" ignores SIGTERM, so the restart
// waits kubelet's 2 s floor before it SIGKILLs it: "app" stays terminated (exit 42) for longer than
// its readiness period, and its readiness worker sees that and goes on (kubelet 1.37's keep-going;
// with 1.33's rule, pod Never, it would have exited, and no worker would probe the container again):
// its probe count keeps growing after the restart, and it turns ready once its probe passes.
func TestRestartRulesThroughNode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	manifest := filepath.Join(dir, "pod.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(`
apiVersion: v1
kind: Pod
metadata: {name: rules}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: setup
    command: ["sh", "-c", "echo x >> runs"]
    workingDir: `+dir+`
  containers:
  - name: app
    command: ["sh", "-c", "if [ -e ran ]; then exec sleep 300; fi; touch ran; sleep 1; exit 42"]
    workingDir: `+dir+`
    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [42]}
    readinessProbe:
      exec: {command: ["test", "-e", "`+filepath.Join(dir, "ready")+`"]}
      periodSeconds: 1
  - name: retry
    command: ["sh", "-c", "if [ -e retried ]; then exec sleep 300; fi; touch retried; exit 7"]
    workingDir: `+dir+`
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes: {operator: In, values: [7]}
  - name: sidekick
    command: ["sh", "-c", "trap '' TERM; sleep 300 & wait"]
`), 0o600))
	var stderr bytes.Buffer
	pods, err := loadPods([]string{manifest}, nil, &stderr, time.Now(), features.Gates{})
	require.NoError(t, err, stderr.String())
	cfg := runConfig{listen: "127.0.0.1:0", rootDir: filepath.Join(dir, "root"), logFormat: "text", logOutput: io.Discard,
		backoffInitial: 10 * time.Second, backoffMax: time.Minute}
	var stdout logtest.Buffer
	n, err := assemble(cfg, pods, hclog.NewNullLogger(), &stdout)
	require.NoError(t, err)
	require.NoError(t, n.list.Start(context.Background()))
	defer n.list.Stop()

	base := "http://" + n.ln.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	status := func() v1.PodStatus {
		var p v1.Pod
		resp, err := client.Get(base + "/pods/default/rules")
		if err != nil {
			return v1.PodStatus{}
		}
		defer resp.Body.Close()
		_ = json.NewDecoder(resp.Body).Decode(&p)
		return p.Status
	}
	probes := regexp.MustCompile(`(?m)^prober_probe_total\{container="app",[^}]*probe_type="Readiness",[^}]*\} (\d+)$`)
	probeCount := func() int {
		resp, err := client.Get(base + "/metrics/probes")
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		total := 0
		for _, m := range probes.FindAllStringSubmatch(string(b), -1) {
			v, _ := strconv.Atoi(m[1])
			total += v
		}
		return total
	}

	// Restarted in place: every container of the pod once more, the init container included.
	var st v1.PodStatus
	require.Eventually(t, func() bool {
		st = status()
		app, _ := podapi.ContainerStatus(&st, "app")
		retry, _ := podapi.ContainerStatus(&st, "retry")
		side, _ := podapi.ContainerStatus(&st, "sidekick")
		return app.State.Running != nil && app.RestartCount == 1 && retry.State.Running != nil && retry.RestartCount == 2 &&
			side.State.Running != nil && side.RestartCount == 1
	}, 60*time.Second, 20*time.Millisecond, "app and sidekick restarted once (all), retry twice (its rule, then all)")
	runs, err := os.ReadFile(filepath.Join(dir, "runs"))
	require.NoError(t, err)
	assert.Equal(t, "x\nx\n", string(runs), "the init container ran again")
	assert.Equal(t, v1.PodRunning, st.Phase)
	app, _ := podapi.ContainerStatus(&st, "app")
	assert.False(t, app.Ready, "its readiness probe fails until the file exists")

	// The readiness worker is alive: it keeps probing the new container, and its success counts.
	after := probeCount()
	require.Eventually(t, func() bool { return probeCount() > after }, 30*time.Second, 50*time.Millisecond,
		"the readiness worker probes the restarted container")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600))
	require.Eventually(t, func() bool {
		st := status()
		app, _ := podapi.ContainerStatus(&st, "app")
		return app.Ready
	}, 30*time.Second, 50*time.Millisecond, "ready once its probe passes")
	assert.Contains(t, stdout.String(), "killing", "kubelet's Killing event of the in-place restart")
}
