package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRunRefusesBadClusterFlags: `node run` exits 2 before starting anything, naming the flag.
func TestRunRefusesBadClusterFlags(t *testing.T) {
	dir := t.TempDir()
	manifest := clusterPodsManifest(t, 1, "127.0.0.1:80", 10, 1)
	ok := []string{"-f", manifest, "--node-name", "n1", "--cluster", "demo", "--cluster-listen", "127.0.0.1:7101", "--cluster-peers", "127.0.0.1:7101,127.0.0.1:7102"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", manifest, "--cluster-listen", "127.0.0.1:7101"}, "--cluster: the cluster's name is required"},
		{[]string{"-f", manifest, "--cluster", "Demo_1", "--cluster-listen", "127.0.0.1:7101", "--cluster-peers", "127.0.0.1:7101"}, `--cluster "Demo_1"`},
		{[]string{"-f", manifest, "--cluster", "demo", "--cluster-peers", "127.0.0.1:7101"}, "--cluster-listen: required"},
		{[]string{"-f", manifest, "--cluster", "demo", "--cluster-listen", "127.0.0.1:7101"}, "--cluster-peers: required"},
		{[]string{"-f", manifest, "--cluster", "demo", "--cluster-listen", "127.0.0.1:0", "--cluster-peers", "127.0.0.1:7101"}, `--cluster-listen "127.0.0.1:0": port "0"`},
		{[]string{"--cluster", "demo", "--cluster-listen", "127.0.0.1:7101", "--cluster-peers", "127.0.0.1:7101"}, "--cluster needs -f manifests or --pod-manifest-path"},
		{[]string{"--pod-manifest-path", dir, "--cluster", "demo", "--cluster-peers", "127.0.0.1:7101"}, "--cluster-listen: required"},
		{append(ok, "--cluster-failure-timeout", "0s"), "--cluster-failure-timeout 0s"},
		{append(ok, "--fleet", "127.0.0.1:10257", "--fleet-listen", "127.0.0.1:7000"), "--fleet-listen 127.0.0.1:7000: not used with --cluster"},
		{append(ok[:2:2], ok[4:]...), "--node-name: required"},
	} {
		var stderr bytes.Buffer
		code := runCommand(append(tc.args, "--root-dir", t.TempDir()), nil, io.Discard, &stderr)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Contains(t, stderr.String(), tc.want, "%v", tc.args)
	}
	// Peer list problems are found by the membership's validation, before anything runs.
	var stderr bytes.Buffer
	code := runCommand(append(ok[:8:8], "--cluster-peers", "127.0.0.1:7102,127.0.0.1:7103", "--root-dir", t.TempDir(), "--listen", "127.0.0.1:0"), nil, io.Discard, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "--cluster-peers must list this member's own address 127.0.0.1:7101")
}
