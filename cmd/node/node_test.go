package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/cmd/node/internal/podhost"
	"github.com/probeactor/probeactor/cmd/node/internal/statuspage"
	"github.com/probeactor/probeactor/features"
	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/messages"
)

// TestNodeLifecycle builds a node with one pod, serves it until its context ends and shuts it down:
// the API answers (profiles included with --profiling), the container runs, and after shutdown the
// container process is gone, its Killing event was printed, and no goroutine is left (goleak).
func TestNodeLifecycle(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "pod.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(`
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    command: ["sh", "-c", "echo $$$$ > pid; echo hello; exec sleep 300"]
    workingDir: `+dir+`
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
`), 0o600))
	var stderr bytes.Buffer
	pods, err := loadPods([]string{manifest}, nil, &stderr, time.Now(), features.Gates{})
	require.NoError(t, err, stderr.String())

	cfg := runConfig{listen: "127.0.0.1:0", rootDir: filepath.Join(dir, "root"), logFormat: "text", logOutput: io.Discard, profiling: true,
		backoffInitial: 10 * time.Second, backoffMax: time.Minute}
	var stdout logtest.Buffer
	n, err := assemble(cfg, pods, hclog.NewNullLogger(), &stdout)
	require.NoError(t, err)
	require.NoError(t, n.list.Start(context.Background()))
	stopped := false
	defer func() {
		if !stopped {
			n.list.Stop()
		}
	}()

	base := "http://" + n.ln.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	getPod := func() (v1.Pod, error) {
		var p v1.Pod
		resp, err := client.Get(base + "/pods/default/web")
		if err != nil {
			return p, err
		}
		defer resp.Body.Close()
		return p, json.NewDecoder(resp.Body).Decode(&p)
	}
	require.Eventually(t, func() bool {
		p, err := getPod()
		return err == nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
	}, 20*time.Second, 20*time.Millisecond, "the container runs and is ready")
	resp, err := client.Get(base + "/debug/pprof/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "--profiling serves /debug/pprof/")
	resp, err = client.Get(base + "/containerLogs/default/web/app")
	require.NoError(t, err)
	logText, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "hello\n", string(logText))
	resp, err = client.Get(base + "/nodes") // node's own Node object
	require.NoError(t, err)
	var nodes v1.NodeList
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&nodes))
	resp.Body.Close()
	require.Len(t, nodes.Items, 1)
	hostname, err := os.Hostname()
	require.NoError(t, err)
	self := nodes.Items[0]
	assert.Equal(t, strings.ToLower(hostname), self.Name, "no --node-name: the host's name")
	assert.Equal(t, int32(n.ln.Addr().(*net.TCPAddr).Port), self.Status.DaemonEndpoints.KubeletEndpoint.Port) //nolint:gosec // a port
	require.NotEmpty(t, self.Status.Conditions)
	ready := self.Status.Conditions[len(self.Status.Conditions)-1]
	assert.Equal(t, v1.NodeReady, ready.Type)
	assert.Equal(t, v1.ConditionTrue, ready.Status, "every health check passes: %s", ready.Message)
	pidText, err := os.ReadFile(filepath.Join(dir, "pid"))
	require.NoError(t, err)

	require.Len(t, n.rt.Pods(), 1, "the one -f pod runs")
	n.list.Stop()
	stopped = true

	_, err = os.Stat("/proc/" + strings.TrimSpace(string(pidText)))
	assert.True(t, os.IsNotExist(err), "the container process is gone after shutdown")
	assert.Contains(t, stdout.String(), "Stopping container app", "Killing event printed before the recorder closed")
	_, err = client.Get(base + "/healthz")
	assert.Error(t, err, "the API is down")
}

// TestRemovedStaticPodIsForgottenByTheTree: a static pod whose file is removed is stopped, and the
// probe tree forgets it too (housekeeping's CleanupPods): Tree.RemovePod alone would leave its
// statuses in statusManager and probeManager for ever, which the soak saw as a heap that grows
// with every removed pod.
func TestRemovedStaticPodIsForgottenByTheTree(t *testing.T) {
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o755))
	file := filepath.Join(manifests, "web.yaml")
	require.NoError(t, os.WriteFile(file, []byte(sleeperPod("web", 2)), 0o600))
	cfg := runConfig{listen: "127.0.0.1:0", rootDir: filepath.Join(dir, "root"), logFormat: "text", logOutput: io.Discard,
		backoffInitial: 10 * time.Second, backoffMax: time.Minute, manifestPath: manifests, fileCheck: 100 * time.Millisecond}
	n, err := assemble(cfg, nil, hclog.NewNullLogger(), io.Discard)
	require.NoError(t, err)
	require.NoError(t, n.list.Start(context.Background()))
	defer n.list.Stop()

	status := func(pod *v1.Pod) (v1.PodStatus, bool) {
		qctx, qcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer qcancel()
		st, ok, err := n.tree.PodStatus(qctx, pod.UID)
		require.NoError(t, err)
		return st, ok
	}
	var pod *v1.Pod
	require.Eventually(t, func() bool {
		pods := n.rt.Pods()
		if len(pods) != 1 {
			return false
		}
		pod = pods[0]
		st, ok := status(pod)
		return ok && len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].Ready
	}, 20*time.Second, 20*time.Millisecond, "the static pod runs and is ready")
	key := statuspage.Key{Pod: pod.UID, Container: "app", Probe: messages.Readiness}
	h, ok := n.tries.Probe(key)
	require.True(t, ok, "the status page's recorder saw the readiness attempts")
	assert.Equal(t, statuspage.Success, h.Last().Outcome)

	require.NoError(t, os.Remove(file))
	require.Eventually(t, func() bool { return len(n.rt.Pods()) == 0 }, 20*time.Second, 20*time.Millisecond, "the runtime forgets the pod")
	require.Eventually(t, func() bool {
		_, ok := status(pod)
		return !ok
	}, 3*podhost.HousekeepingPeriod+5*time.Second, 20*time.Millisecond, "the tree forgets the pod's status")
	_, ok = n.tries.Probe(key)
	assert.False(t, ok, "the status page's recorder forgets the pod's attempts")
	st := n.tries.Stats()
	assert.Equal(t, statuspage.Stats{Unattributed: st.Unattributed}, st, "nothing of the removed pod is kept")
}
