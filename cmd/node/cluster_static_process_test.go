package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/cluster/ownership"
	"github.com/probeactor/probeactor/cluster/runner"
	"github.com/probeactor/probeactor/cmd/node/internal/staticpod"
	"github.com/probeactor/probeactor/features"
)

// TestClusterStaticPodsWithRealNodes: three `node run --cluster` members share two -f pods and the
// static pods of their own --pod-manifest-path directories (kept at different paths, with the same
// files). Every pod runs on its rendezvous owner only. A file copied first to the member that does
// not own its pod runs nowhere (the owner does not know it yet); copied to the owner too, it runs
// there once. A file removed from both stops its pod; a file edited on both is a new pod, placed
// anew. No pod name runs on both members while files are added and removed.
func TestClusterStaticPodsWithRealNodes(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer target.Close()
	manifest := clusterPodsManifest(t, 2, target.Listener.Addr().String(), 10, 1) // pod-00, pod-01
	static := func(name, extra string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: app\n    command: [sleep, \"100000\"]\n" + extra
	}
	dirs := []string{filepath.Join(t.TempDir(), "m1-pods"), filepath.Join(t.TempDir(), "m2-pods"), filepath.Join(t.TempDir(), "m3-pods")}
	put := func(member int, file, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dirs[member], file), []byte(content), 0o600))
	}
	for i := range dirs {
		require.NoError(t, os.Mkdir(dirs[i], 0o755))
		put(i, "a.yaml", static("static-a", ""))
	}
	c := startCluster(t, 3, "", 5*time.Second, func(i int) []string {
		return []string{"-f", manifest, "--pod-manifest-path", dirs[i], "--file-check-frequency", "200ms"}
	})
	both := []int{0, 1, 2} // every member

	// Where each pod must run: its UID as every member derives it, then rendezvous over the members.
	var stderr bytes.Buffer
	filePods, err := loadPodsWith([]string{manifest}, nil, &stderr, time.Now(), features.Gates{}, runner.ClusterUID("demo"))
	require.NoError(t, err, stderr.String())
	staticPods := func(dir string) []*v1.Pod {
		files, err := staticpod.List(dir)
		require.NoError(t, err)
		pods, problems := staticpod.NewClusterCore(filePods, "-f", "demo").Read(files, time.Now())
		require.Empty(t, problems)
		return pods
	}
	owner := func(p *v1.Pod) int { return slices.Index(c.addrs, ownership.Owner(string(p.UID), c.addrs)) }
	expect := func(pods []*v1.Pod) func(placement) bool {
		want := placement{}
		for _, p := range pods {
			want[p.Name] = []string{c.names[owner(p)]}
		}
		return func(got placement) bool { return assert.ObjectsAreEqual(want, got) }
	}
	c.await("every pod on its owner", both, nil, 60*time.Second, expect(append(slices.Clip(filePods), staticPods(dirs[0])...)))
	watch := c.watchDuplicates(both)

	// b.yaml reaches the member that does not own static-b first.
	scratch := t.TempDir() // the UID does not depend on the directory: find static-b's owner here
	require.NoError(t, os.WriteFile(filepath.Join(scratch, "b.yaml"), []byte(static("static-b", "")), 0o600))
	b := staticPods(scratch)[0]
	o := owner(b)
	other := (o + 1) % 3
	changes := func(i int) int { return strings.Count(c.procs[i].Stderr(), "the cluster's pod set changed") }
	before := changes(other)
	put(other, "b.yaml", static("static-b", ""))
	require.Eventually(t, func() bool { return changes(other) > before }, 30*time.Second, 20*time.Millisecond, "%s never read b.yaml", c.names[other])
	for _, i := range both {
		pods, err := podList(c.apis[i])
		require.NoError(t, err)
		for _, p := range pods {
			assert.NotEqual(t, "static-b", p.Name, "%s runs static-b, which only %s knows and %s owns", c.names[i], c.names[other], c.names[o])
		}
	}
	put(o, "b.yaml", static("static-b", ""))
	c.await("static-b on its owner once both know it", both, nil, 30*time.Second, expect(append(slices.Clip(filePods), staticPods(dirs[o])...)))

	// a.yaml removed from every member: static-a stops wherever it ran.
	for i := range dirs {
		require.NoError(t, os.Remove(filepath.Join(dirs[i], "a.yaml")))
	}
	c.await("static-a stopped", both, nil, 30*time.Second, expect(append(slices.Clip(filePods), b)))
	longest, dups := watch.halt()
	assert.Zero(t, dups, "a pod ran on two members at once (longest %v)", longest)

	// b.yaml edited on every member: a new pod (new UID), on its own owner; the old one is gone.
	for i := range dirs {
		put(i, "b.yaml", static("static-b", "    workingDir: /tmp\n"))
	}
	b2 := staticPods(dirs[0])[0]
	require.Equal(t, "static-b", b2.Name)
	require.NotEqual(t, b.UID, b2.UID)
	// The old and the new static-b may have the same owner: wait until the owner runs the new one only.
	onOwner := func() []string {
		pods, err := podList(c.apis[owner(b2)])
		require.NoError(t, err)
		var uids []string
		for _, p := range pods {
			if p.Name == "static-b" {
				uids = append(uids, string(p.UID))
			}
		}
		return uids
	}
	placed := expect(append(slices.Clip(filePods), b2))
	c.await("the edited static-b replaces the old one", both, nil, 30*time.Second, func(p placement) bool {
		return placed(p) && slices.Equal(onOwner(), []string{string(b2.UID)})
	})
}
