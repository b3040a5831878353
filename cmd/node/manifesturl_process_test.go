package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAManifestURLDownAtRestartKeepsItsPods: a node restarted while its --manifest-url does not
// answer stops nothing an earlier node left (kubelet's sourcesReady: no orphan is swept before every
// source was read once), and adopts the URL's pod, container and process unchanged, once the URL
// answers again.
func TestAManifestURLDownAtRestartKeepsItsPods(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	status, refused := http.StatusOK, 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if status != http.StatusOK {
			refused++
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: keep}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    workingDir: %s
    command: ["sh", "-c", "echo $$$$ > keep.pid; exec sleep 300"]
`, dir))
	}))
	defer ts.Close()
	setStatus := func(s int) {
		mu.Lock()
		defer mu.Unlock()
		status = s
	}

	n := startRestartNode(t, dir, "--manifest-url", ts.URL, "--http-check-frequency", "200ms", "--reattach-timeout", "60s")
	pid := pidOf(t, filepath.Join(dir, "keep.pid"))
	var id string
	require.Eventually(t, func() bool {
		p, ok := n.pod("keep")
		if ok && len(p.Status.ContainerStatuses) == 1 {
			id = p.Status.ContainerStatuses[0].ContainerID
		}
		return id != ""
	}, 30*time.Second, 20*time.Millisecond, "the URL's pod runs")

	n.proc.Kill()
	setStatus(http.StatusServiceUnavailable)
	n.proc.Restart()
	require.Eventually(t, func() bool {
		return strings.Contains(n.proc.Stderr(), "a pod source could not be read yet")
	}, 30*time.Second, 20*time.Millisecond, "the restarted node says why it keeps what it found")
	require.Eventually(t, func() bool { // five polls of the URL that cannot be read
		mu.Lock()
		defer mu.Unlock()
		return refused >= 5
	}, 30*time.Second, 20*time.Millisecond)
	assert.True(t, alive(pid), "the container an earlier node left is not swept while the URL cannot be read")
	_, ok := n.pod("keep")
	assert.False(t, ok, "nor is it a pod of this node yet")

	setStatus(http.StatusOK)
	require.Eventually(t, func() bool {
		p, ok := n.pod("keep")
		return ok && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].ContainerID == id
	}, 30*time.Second, 20*time.Millisecond, "adopted once the URL answers")
	assert.True(t, alive(pid), "the same process")
	// The log line and the pod's status come by different ways (stderr, the API): either can be
	// seen first.
	assert.Eventually(t, func() bool { return strings.Contains(n.proc.Stderr(), "every pod source has been read") },
		10*time.Second, 20*time.Millisecond, "node says why it sweeps now")
}
