package main

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cmd/node/internal/staticpod"
)

// fakeOps records starts and stops; a stop blocks until released.
type fakeOps struct {
	mu       sync.Mutex
	log      []string
	failNext error
	stopping map[types.UID]chan struct{}
	stopped  chan types.UID
}

func newFakeOps() *fakeOps {
	return &fakeOps{stopping: map[types.UID]chan struct{}{}, stopped: make(chan types.UID, 16)}
}

func (f *fakeOps) StartPod(p *v1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failNext; err != nil {
		f.failNext = nil
		return err
	}
	f.log = append(f.log, "start "+p.Name)
	return nil
}

func (f *fakeOps) StopPod(p *v1.Pod) {
	f.mu.Lock()
	release := make(chan struct{})
	f.stopping[p.UID] = release
	f.log = append(f.log, "stop "+p.Name)
	f.mu.Unlock()
	<-release
	f.stopped <- p.UID
}

// release lets the pod's stop finish once it has begun.
func (f *fakeOps) release(t *testing.T, uid types.UID) {
	t.Helper()
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.stopping[uid] != nil
	}, 10*time.Second, time.Millisecond)
	f.mu.Lock()
	close(f.stopping[uid])
	delete(f.stopping, uid)
	f.mu.Unlock()
}

func (f *fakeOps) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func testPod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
}

func TestClusterRunnerStartsStopsAndRestartsAfterTheStop(t *testing.T) {
	ops := newFakeOps()
	r := newClusterRunner(ops, hclog.NewNullLogger())
	a, b := testPod("a"), testPod("b")

	require.NoError(t, r.Start(a))
	require.NoError(t, r.Start(a), "a second start of a running pod does nothing")
	ops.failNext = errors.New("disk full")
	require.Error(t, r.Start(b), "a failed start is reported (the sharder retries)")
	assert.Equal(t, []string{"start a"}, ops.calls())

	// Stop does not wait; the share comes back while the pod stops: it starts after the stop.
	require.NoError(t, r.Stop(a.UID, time.Second))
	require.NoError(t, r.Stop(a.UID, time.Second), "a second stop while stopping does nothing")
	require.NoError(t, r.Start(a))
	ops.release(t, a.UID)
	assert.Equal(t, a.UID, <-ops.stopped)
	require.Eventually(t, func() bool { return len(ops.calls()) == 3 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []string{"start a", "stop a", "start a"}, ops.calls())

	// Lost again before the stop finished: no start after it.
	require.NoError(t, r.Stop(a.UID, time.Second))
	require.NoError(t, r.Start(a))
	require.NoError(t, r.Stop(a.UID, time.Second), "the share went away again")
	ops.release(t, a.UID)
	<-ops.stopped

	require.NoError(t, r.Stop(b.UID, time.Second), "stopping a pod never started does nothing")
	require.NoError(t, r.Start(b))
	require.NoError(t, r.Stop(b.UID, time.Second))
	done := make(chan struct{})
	go func() { r.Close(); close(done) }() // ends when b's stop finished
	ops.release(t, b.UID)
	<-done
	assert.ErrorIs(t, r.Start(a), errRunnerClosed, "no start after Close")
	assert.Equal(t, []string{"start a", "stop a", "start a", "stop a", "start b", "stop b"}, ops.calls())
}

func TestClusterUIDIsTheSameOnEveryMember(t *testing.T) {
	assign := clusterUID("demo")
	p1, p2 := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
	assign(p1)
	assign(p2)
	assert.NotEmpty(t, p1.UID)
	assert.Equal(t, p1.UID, p2.UID, "namespace defaulted alike")
	other := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	clusterUID("prod")(other)
	assert.NotEqual(t, p1.UID, other.UID, "another cluster, another pod")
	given := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "mine"}}
	assign(given)
	assert.Equal(t, types.UID("mine"), given.UID, "a manifest's UID is kept")
}

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

// TestClusterPodSetComposesFilesAndStaticPods: the pod set two members give their sharders from
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
		fpods, err := loadPodsWith([]string{manifest}, nil, &stderr, time.Now(), clusterUID("demo"))
		require.NoError(t, err, stderr.String())
		dir = t.TempDir()
		for name, content := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
		}
		listed, err := staticpod.List(dir)
		require.NoError(t, err)
		spods, problems := staticpod.NewClusterCore(fpods, "-f", "demo").Read(listed, time.Now())
		return clusterPodSet(fpods, spods), problems, dir
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
