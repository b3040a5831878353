package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunRefusesBadManifestURLFlags: each mistake is a usage error (exit 2) naming the flag, before
// anything starts.
func TestRunRefusesBadManifestURLFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--manifest-url", "ftp://config.example/pods.yaml"}, `--manifest-url "ftp://config.example/pods.yaml": must be an absolute http or https URL`},
		{[]string{"--manifest-url", "config.example/pods.yaml"}, `--manifest-url "config.example/pods.yaml": must be an absolute http or https URL`},
		{[]string{"--manifest-url", "http://%zz"}, `--manifest-url "http://%zz": invalid URL escape "%zz"`},
		{[]string{"--manifest-url-header", "X-Token:1"}, "--manifest-url-header: needs --manifest-url"},
		{[]string{"--http-check-frequency", "5s"}, "--http-check-frequency: needs --manifest-url"},
		{[]string{"--manifest-url", "http://127.0.0.1:1/", "--manifest-url-header", "X-Token"}, `malformed pair "X-Token": want NAME:VALUE`},
		{[]string{"--manifest-url", "http://127.0.0.1:1/", "--manifest-url-header", ":v"}, `malformed pair ":v": want NAME:VALUE`},
		{[]string{"--manifest-url", "http://127.0.0.1:1/", "--http-check-frequency", "0s"}, "--http-check-frequency must be a positive duration"},
	} {
		var stderr bytes.Buffer
		code := runCommand(append(tc.args, "--root-dir", t.TempDir(), "--listen", "127.0.0.1:0"), nil, io.Discard, &stderr)
		assert.Equal(t, 2, code, tc.args)
		assert.Contains(t, stderr.String(), tc.want, tc.args)
	}
}

func TestManifestURLHeaderFlag(t *testing.T) {
	var h headerFlag
	assert.Equal(t, "", h.String())
	require.NoError(t, h.Set("a:hello,b:again, c : x:y ,"))
	require.NoError(t, h.Set("b:beautiful"))
	assert.Equal(t, http.Header{"A": {"hello"}, "B": {"again", "beautiful"}, "C": {"x:y"}}, h.header,
		"kubelet's multimap: values appended in order, split at the first colon, trimmed")
}

// TestManifestURLPodsRun: node runs the pods a --manifest-url serves, asks with the headers given,
// and stops them when the URL serves an empty List.
func TestManifestURLPodsRun(t *testing.T) {
	var mu sync.Mutex
	body, tokens := sleeperPod("web", 2), []string{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		tokens = append(tokens, r.Header.Get("Authorization"))
		_, _ = io.WriteString(w, body)
	}))
	defer ts.Close()
	dir := t.TempDir()
	var header headerFlag
	require.NoError(t, header.Set("Authorization:Bearer t1"))
	cfg := runConfig{listen: "127.0.0.1:0", rootDir: filepath.Join(dir, "root"), logFormat: "text", logOutput: io.Discard,
		backoffInitial: 10 * time.Second, backoffMax: time.Minute, manifestURL: ts.URL + "/pods.yaml", urlHeader: header,
		httpCheck: 100 * time.Millisecond}
	n, err := assemble(cfg, nil, hclog.NewNullLogger(), io.Discard)
	require.NoError(t, err)
	require.NoError(t, n.list.Start(context.Background()))
	defer n.list.Stop()

	pods := n.rt.Pods()
	require.Len(t, pods, 1, "the URL's pods run once node has started")
	assert.Equal(t, "web", pods[0].Name)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, ok, err := n.tree.PodStatus(ctx, pods[0].UID)
		return err == nil && ok && len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].Ready
	}, 20*time.Second, 20*time.Millisecond, "it is probed ready")

	mu.Lock()
	assert.Equal(t, "Bearer t1", tokens[0], "--manifest-url-header is sent")
	body = "apiVersion: v1\nkind: List\nitems: []\n"
	mu.Unlock()
	require.Eventually(t, func() bool { return len(n.rt.Pods()) == 0 }, 20*time.Second, 20*time.Millisecond,
		"an empty List stops the URL's pods")
}
