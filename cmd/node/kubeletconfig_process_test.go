package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/internal/fleettest"
	"github.com/probeactor/probeactor/internal/freeport"
)

// TestNodeRunsFromKubeletsConfigFiles: `node run --config --config-dir` as a kubeadm machine
// starts kubelet. The pods of the file's staticPodPath (relative to the file) and of a drop-in's
// staticPodURL (asked with the drop-in's header, whose value holds a comma) run and are probed
// ready, the API is at the file's address and readOnlyPort, the logs are JSON as another drop-in
// says, and the fields node does not use are named in the log.
func TestNodeRunsFromKubeletsConfigFiles(t *testing.T) {
	dir := t.TempDir()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer a,b" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		_, _ = io.WriteString(w, sleeperPod("from-url", 1))
	}))
	defer ts.Close()
	listen := freeport.Addr(t)
	host, port, err := net.SplitHostPort(listen)
	require.NoError(t, err)

	etc := filepath.Join(dir, "etc")
	files := map[string]string{
		"manifests/from-file.yaml": sleeperPod("from-file", 1),
		"config.yaml": kubeletConfigHeader + fmt.Sprintf(`staticPodPath: manifests
address: %s
readOnlyPort: %s
cgroupDriver: systemd
httpCheckFrequency: 0s
`, host, port),
		"kubelet.conf.d/10-url.conf": kubeletConfigHeader + fmt.Sprintf(`staticPodURL: %s
staticPodURLHeader: {Authorization: ["Bearer a,b"]}
httpCheckFrequency: 200ms
`, ts.URL),
		"kubelet.conf.d/20-logging.conf": kubeletConfigHeader + "logging: {format: json, verbosity: 2}\n",
	}
	for name, content := range files {
		p := filepath.Join(etc, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}

	proc := fleettest.StartRole(t, "node", "--config", filepath.Join(etc, "config.yaml"), "--config-dir", filepath.Join(etc, "kubelet.conf.d"),
		"--root-dir", filepath.Join(dir, "root"))
	n := &restartNode{t: t, dir: dir, api: "http://" + listen, proc: proc}
	for _, name := range []string{"from-file", "from-url"} {
		require.Eventually(t, func() bool {
			p, ok := n.pod(name)
			return ok && readyAndStarted(p, "app")
		}, 30*time.Second, 20*time.Millisecond, "%s runs, probed ready, on the file's address and readOnlyPort", name)
	}

	var unused []map[string]any
	for _, line := range strings.Split(proc.Stderr(), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var entry map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &entry), "a drop-in's logging.format: json")
		if entry["@message"] == "kubelet configuration: fields node does not use" {
			unused = append(unused, entry)
		}
	}
	require.Len(t, unused, 2, proc.Stderr())
	assert.Equal(t, filepath.Join(etc, "config.yaml"), unused[0]["file"])
	assert.Equal(t, []any{"cgroupDriver"}, unused[0]["fields"])
	assert.Equal(t, filepath.Join(etc, "kubelet.conf.d", "20-logging.conf"), unused[1]["file"])
	assert.Equal(t, []any{"logging.verbosity"}, unused[1]["fields"])
	assert.NotContains(t, proc.Stderr(), "Bearer", "the header's value, a credential, is never logged")
}
