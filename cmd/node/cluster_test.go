package main

import (
	"bytes"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/probeactor/probeactor/cluster/runner"
	"github.com/probeactor/probeactor/cmd/node/internal/staticpod"
	"github.com/probeactor/probeactor/features"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestRunRefusesBadClusterFlags: `node run` exits 2 before starting anything, naming the flag.
func TestRunRefusesBadClusterFlags(t *testing.T) {
	dir := t.TempDir()
	manifest := clusterPodsManifest(t, 1, "127.0.0.1:80", 10, 1)
	ok := []string{"-f", manifest, "--node-name", "n1", "--cluster", "demo", "--cluster-listen", "127.0.0.1:7101", "--cluster-peers", "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", manifest, "--cluster-listen", "127.0.0.1:7101"}, "--cluster: the cluster's name is required"},
		{[]string{"-f", manifest, "--cluster", "Demo_1", "--cluster-listen", "127.0.0.1:7101", "--cluster-peers", "127.0.0.1:7101"}, `--cluster "Demo_1"`},
		{[]string{"-f", manifest, "--cluster", "demo", "--cluster-peers", "127.0.0.1:7101"}, "--cluster-listen: required"},
		{[]string{"-f", manifest, "--cluster", "demo", "--cluster-listen", "127.0.0.1:7101"}, "--cluster-peers: required"},
		{[]string{"-f", manifest, "--cluster", "demo", "--cluster-listen", "127.0.0.1:0", "--cluster-peers", "127.0.0.1:7101"}, `--cluster-listen "127.0.0.1:0": port "0"`},
		{[]string{"--cluster", "demo", "--cluster-listen", "127.0.0.1:7101", "--cluster-peers", "127.0.0.1:7101"}, "--cluster needs -f manifests, --pod-manifest-path or --manifest-url"},
		{[]string{"--pod-manifest-path", dir, "--cluster", "demo", "--cluster-peers", "127.0.0.1:7101"}, "--cluster-listen: required"},
		{append(ok, "--cluster-failure-timeout", "0s"), "--cluster-failure-timeout 0s"},
		{append(ok, "--fleet", "127.0.0.1:10257", "--fleet-listen", "127.0.0.1:7000"), "--fleet-listen 127.0.0.1:7000: not used with --cluster"},
		{append(ok[:2:2], ok[4:]...), "--node-name: required"},
		{append(ok[:8:8], "--cluster-peers", "127.0.0.1:7101,127.0.0.1:7102"), "--cluster-peers: 2 members cannot fail over safely"},
		{[]string{"-f", manifest, "--cluster-failure-timeout", "5s"}, "--cluster-failure-timeout: needs --cluster"},
	} {
		var stderr bytes.Buffer
		code := runCommand(append(tc.args, "--root-dir", t.TempDir()), nil, io.Discard, &stderr)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Contains(t, stderr.String(), tc.want, "%v", tc.args)
	}
	// Peer list problems are found by the membership's validation, before anything runs.
	var stderr bytes.Buffer
	code := runCommand(append(ok[:8:8], "--cluster-peers", "127.0.0.1:7102,127.0.0.1:7103,127.0.0.1:7104", "--root-dir", t.TempDir(), "--listen", "127.0.0.1:0"), nil, io.Discard, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "--cluster-peers must list this member's own address 127.0.0.1:7101")
}

// TestClusterPodSetComposesFilesAndStaticPods: the pod set two members give their runners from
// the same -f manifest and the same static pod files, kept in different directories, is one set:
// the same UIDs on both, each once; a static pod whose name an -f pod has is refused (the -f pod
// stays; the file and field path are named) and an edited static pod is a new pod.
func TestClusterPodSetComposesFilesAndStaticPods(t *testing.T) {
	manifest := clusterPodsManifest(t, 2, "127.0.0.1:80", 10, 1) // pod-00, pod-01
	static := func(name string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  containers:\n  - name: app\n    command: [sleep, \"100000\"]\n"
	}
	files := map[string]string{"web.yaml": static("web"), "db.yaml": static("db"), "clash.yaml": static("pod-01")}
	member := func() (set []*v1.Pod, problems []string, dir string) {
		var stderr bytes.Buffer
		fpods, err := loadPodsWith([]string{manifest}, nil, &stderr, time.Now(), features.Gates{}, runner.ClusterUID("demo"))
		require.NoError(t, err, stderr.String())
		dir = t.TempDir()
		for name, content := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
		}
		listed, err := staticpod.List(dir)
		require.NoError(t, err)
		spods, problems := staticpod.NewClusterCore(fpods, "-f", "demo").Read(listed, time.Now())
		return append(slices.Clip(fpods), spods...), problems, dir // as cluster/runner composes the set
	}
	uids := func(pods []*v1.Pod) map[string]types.UID {
		out := map[string]types.UID{}
		for _, p := range pods {
			require.NotContains(t, out, p.Name)
			out[p.Name] = p.UID
		}
		return out
	}
	set1, problems1, dir1 := member()
	set2, problems2, dir2 := member()
	require.NotEqual(t, dir1, dir2)
	m1 := uids(set1)
	assert.Equal(t, m1, uids(set2), "both members place the same pods")
	assert.ElementsMatch(t, []string{"pod-00", "pod-01", "db", "web"}, slices.Collect(maps.Keys(m1)))
	assert.Len(t, slices.Compact(slices.Sorted(maps.Values(m1))), 4, "every UID once")
	assert.Equal(t, []string{filepath.Join(dir1, "clash.yaml") + `: metadata.name: Duplicate value: pod "default/pod-01" is also run from -f`}, problems1)
	assert.Equal(t, []string{filepath.Join(dir2, "clash.yaml") + `: metadata.name: Duplicate value: pod "default/pod-01" is also run from -f`}, problems2)

	files["web.yaml"] = static("web") + "    workingDir: /tmp\n"
	edited, _, _ := member()
	m3 := uids(edited)
	assert.NotEqual(t, m1["web"], m3["web"], "an edited static pod is a new pod")
	assert.Equal(t, m1["db"], m3["db"])
	assert.Equal(t, m1["pod-00"], m3["pod-00"])
}
