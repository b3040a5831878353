package staticpod

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/lifecycle"
	"github.com/probeactor/probeactor/internal/logtest"
)

// Watcher is one of node's lifecycle parts.
var _ lifecycle.Component = (*Watcher)(nil)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeRunner records what the watcher starts and stops; StopPod waits for gate when it is set.
type fakeRunner struct {
	mu      sync.Mutex
	started []string
	stopped []string
	gate    chan struct{}
	change  chan struct{} // closed (and forgotten) at the next start or stop; see waitFor
}

func (r *fakeRunner) StartPod(pod *v1.Pod) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, pod.Name)
	r.changed()
	return nil
}

func (r *fakeRunner) StopPod(pod *v1.Pod) {
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = append(r.stopped, pod.Name)
	r.changed()
}

// changed wakes waitFor; r.mu is held.
func (r *fakeRunner) changed() {
	if r.change != nil {
		close(r.change)
		r.change = nil
	}
}

func (r *fakeRunner) seen() (started, stopped []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.started...), append([]string(nil), r.stopped...)
}

// patience bounds how long a test outside a synctest bubble waits for the watcher (real inotify,
// real clock, a busy machine): a bound for a hang, not a measure of speed.
const patience = 60 * time.Second

// waitFor waits until ok holds for what the runner has started and stopped, and fails the test
// if it does not within patience.
func (r *fakeRunner) waitFor(t *testing.T, what string, ok func(started, stopped []string) bool) {
	t.Helper()
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		if r.change == nil {
			r.change = make(chan struct{})
		}
		change := r.change
		started, stopped := append([]string(nil), r.started...), append([]string(nil), r.stopped...)
		r.mu.Unlock()
		if ok(started, stopped) {
			return
		}
		select {
		case <-change:
		case <-deadline.C:
			t.Fatalf("%s: not within %v (started %v, stopped %v)", what, patience, started, stopped)
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
}

// start starts w as node's lifecycle list does.
func start(t *testing.T, w *Watcher) {
	t.Helper()
	require.NoError(t, w.Start(context.Background()))
}

// stop stops w as node's lifecycle list does and returns the pods it left running (its core's,
// which only its ended loop touched).
func stop(t *testing.T, w *Watcher) []*v1.Pod {
	t.Helper()
	require.NoError(t, w.Stop(context.Background()))
	return w.core.Running()
}

func names(pods []*v1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// TestWatcherFollowsTheDirectory: files added start pods at the next read, removed files stop them,
// hidden files are ignored, subdirectories and invalid files are logged with their paths, and
// Stop leaves the pods still running.
func TestWatcherFollowsTheDirectory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "a.yaml"), podYAML("a", ""))
		write(t, filepath.Join(dir, ".hidden.yaml"), podYAML("hidden", ""))
		require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
		log, logs := logtest.Capture(t)
		r := &fakeRunner{}
		w := polling(New(Options{Path: dir, Period: time.Second, Runner: r, Logger: log}))
		start(t, w)
		synctest.Wait()
		started, _ := r.seen()
		assert.Equal(t, []string{"a"}, started, "read at once")
		assert.Contains(t, logs.String(), filepath.Join(dir, "sub")+": a directory: manifests in subdirectories are not read")

		write(t, filepath.Join(dir, "b.yaml"), podYAML("b", ""))
		write(t, filepath.Join(dir, "bad.yaml"), podYAML("bad", "    livenessProbe: {tcpSocket: {port: 80}, periodSecond: 5}\n"))
		require.NoError(t, os.Remove(filepath.Join(dir, "a.yaml")))
		time.Sleep(time.Second)
		synctest.Wait()
		started, stopped := r.seen()
		assert.Equal(t, []string{"a", "b"}, started)
		assert.Equal(t, []string{"a"}, stopped)
		assert.Contains(t, logs.String(), filepath.Join(dir, "bad.yaml")+": spec.containers[0].livenessProbe.periodSecond: unknown field")

		assert.Equal(t, []string{"b"}, names(stop(t, w)))
		started, stopped = r.seen()
		assert.Equal(t, []string{"a", "b"}, started, "nothing more after Stop")
		assert.Equal(t, []string{"a"}, stopped, "Stop leaves the running pods to the caller")
	})
}

// TestWatcherReplacesAChangedPodAfterTheOldOneStopped: an edited manifest stops the old pod; the
// new one starts only once StopPod has returned, without waiting for the next read.
func TestWatcherReplacesAChangedPodAfterTheOldOneStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "web.yaml")
		write(t, path, podYAML("web", ""))
		r := &fakeRunner{gate: make(chan struct{})}
		w := polling(New(Options{Path: dir, Period: 20 * time.Second, Runner: r, Logger: logtest.New(t)}))
		start(t, w)
		synctest.Wait()
		write(t, path, podYAML("web", "    workingDir: /tmp\n"))
		time.Sleep(20 * time.Second)
		synctest.Wait()
		started, _ := r.seen()
		assert.Equal(t, []string{"web"}, started, "the replacement waits while the old pod stops")
		assert.Empty(t, w.core.Running(), "read only after the loop is idle: the old pod is stopping")

		close(r.gate)
		synctest.Wait()
		started, stopped := r.seen()
		assert.Equal(t, []string{"web", "web"}, started, "started as soon as the old one is gone")
		assert.Equal(t, []string{"web"}, stopped)
		assert.Equal(t, []string{"web"}, names(stop(t, w)))
	})
}

// TestStopWaitsForPodsBeingStopped: Stop returns only after the pods the watcher is stopping are
// gone, and leaves the others running.
func TestStopWaitsForPodsBeingStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "a.yaml"), podYAML("a", ""))
		write(t, filepath.Join(dir, "b.yaml"), podYAML("b", ""))
		r := &fakeRunner{gate: make(chan struct{})}
		w := polling(New(Options{Path: dir, Period: time.Second, Runner: r, Logger: logtest.New(t)}))
		start(t, w)
		synctest.Wait()
		require.NoError(t, os.Remove(filepath.Join(dir, "a.yaml")))
		time.Sleep(time.Second)
		synctest.Wait()

		closed := make(chan []*v1.Pod, 1)
		go func() { // ends once Stop returns: after a's stop
			assert.NoError(t, w.Stop(context.Background()))
			closed <- w.core.Running()
		}()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Stop returned while a pod was still stopping")
		default:
		}
		close(r.gate)
		synctest.Wait()
		assert.Equal(t, []string{"b"}, names(<-closed))
		_, stopped := r.seen()
		assert.Equal(t, []string{"a"}, stopped)
	})
}

// TestStopGivesUpWaitingWhenItsContextEnds: a pod that does not stop within Stop's deadline is not
// waited for; its stop ends in the background once StopPod returns, and nothing leaks.
func TestStopGivesUpWaitingWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "a.yaml"), podYAML("a", ""))
		r := &fakeRunner{gate: make(chan struct{})}
		w := polling(New(Options{Path: dir, Period: time.Second, Runner: r, Logger: logtest.New(t)}))
		start(t, w)
		synctest.Wait()
		require.NoError(t, os.Remove(filepath.Join(dir, "a.yaml")))
		time.Sleep(time.Second)
		synctest.Wait()

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := w.Stop(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorContains(t, err, "static pods still stopping")
		close(r.gate) // StopPod returns: the stop ends in the background
		synctest.Wait()
		_, stopped := r.seen()
		assert.Equal(t, []string{"a"}, stopped)
	})
}

// TestStopBeforeStart ends a watcher that never started.
func TestStopBeforeStart(t *testing.T) {
	w := New(Options{Path: t.TempDir(), Runner: &fakeRunner{}})
	require.NoError(t, w.Stop(context.Background()))
}

// TestListReadsAFileOrADirectory: a manifest path may be one file; a missing path is an error;
// a file over MaxFileSize is not read.
func TestListReadsAFileOrADirectory(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one.yaml")
	write(t, one, podYAML("one", ""))
	files, err := List(one)
	require.NoError(t, err)
	require.Len(t, files, 1)
	assert.Equal(t, one, files[0].Path)
	assert.NoError(t, files[0].Err)

	_, err = List(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	big := filepath.Join(dir, "big.yaml")
	write(t, big, string(make([]byte, MaxFileSize+1)))
	files, err = List(big)
	require.NoError(t, err)
	assert.ErrorContains(t, files[0].Err, "larger than 1048576 bytes")
}

// TestAFileRemovedWhileListedIsNotAProblem: a manifest removed between the directory listing and
// its read is simply not there (the soak caught this as a spurious "no such file" error).
func TestAFileRemovedWhileListedIsNotAProblem(t *testing.T) {
	_, ok := readFile(filepath.Join(t.TempDir(), "gone.yaml"))
	assert.False(t, ok)
}

// TestRemovingASingleManifestFileStopsItsPods: with --pod-manifest-path naming one file, removing
// the file stops its pods (as removing it from a directory would); a missing directory changes
// nothing.
func TestRemovingASingleManifestFileStopsItsPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "web.yaml")
		write(t, path, podYAML("web", ""))
		log, logs := logtest.Capture(t)
		r := &fakeRunner{}
		w := polling(New(Options{Path: path, Period: time.Second, Runner: r, Logger: log}))
		start(t, w)
		synctest.Wait()
		require.NoError(t, os.Remove(path))
		time.Sleep(time.Second)
		synctest.Wait()
		started, stopped := r.seen()
		assert.Equal(t, []string{"web"}, started)
		assert.Equal(t, []string{"web"}, stopped)
		assert.Empty(t, stop(t, w))
		assert.NotContains(t, logs.String(), "not applied")

		sub := filepath.Join(dir, "manifests")
		require.NoError(t, os.Mkdir(sub, 0o755))
		write(t, filepath.Join(sub, "a.yaml"), podYAML("a", ""))
		r = &fakeRunner{}
		w = polling(New(Options{Path: sub, Period: time.Second, Runner: r, Logger: log}))
		start(t, w)
		synctest.Wait()
		require.NoError(t, os.RemoveAll(sub))
		time.Sleep(time.Second)
		synctest.Wait()
		started, stopped = r.seen()
		assert.Equal(t, []string{"a"}, started)
		assert.Empty(t, stopped, "a directory that cannot be read changes nothing")
		assert.Contains(t, logs.String(), "no such file or directory")
		assert.Equal(t, []string{"a"}, names(stop(t, w)))
	})
}

// TestWatcherInAClusterGivesTheWholeSet: with Set, every read hands over the whole set of valid
// static pods (added, removed, changed files alike) and nothing is started or stopped here; a bad
// file is logged with its field path and leaves the rest of the set alone; a directory that cannot
// be read hands over nothing, so the last set stands.
func TestWatcherInAClusterGivesTheWholeSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "pods")
		require.NoError(t, os.Mkdir(dir, 0o755))
		write(t, filepath.Join(dir, "a.yaml"), podYAML("a", ""))
		log, logs := logtest.Capture(t)
		var mu sync.Mutex
		var sets [][]string
		r := &fakeRunner{}
		w := polling(New(Options{Path: dir, Period: time.Second, Runner: r, Logger: log, Cluster: "demo", Set: func(pods []*v1.Pod) {
			mu.Lock()
			defer mu.Unlock()
			sets = append(sets, names(pods))
		}}))
		last := func() []string {
			mu.Lock()
			defer mu.Unlock()
			require.NotEmpty(t, sets)
			return sets[len(sets)-1]
		}
		reads := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(sets)
		}
		start(t, w)
		synctest.Wait()
		assert.Equal(t, []string{"a"}, last(), "read at once")

		write(t, filepath.Join(dir, "b.yaml"), podYAML("b", ""))
		write(t, filepath.Join(dir, "bad.yaml"), podYAML("bad", "    livenessProbe: {tcpSocket: {port: 80}, periodSecond: 5}\n"))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"a", "b"}, last())
		assert.Contains(t, logs.String(), filepath.Join(dir, "bad.yaml")+": spec.containers[0].livenessProbe.periodSecond: unknown field")

		require.NoError(t, os.Remove(filepath.Join(dir, "a.yaml")))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"b"}, last())

		require.NoError(t, os.RemoveAll(dir))
		n := reads()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Equal(t, n, reads(), "a directory that cannot be read changes nothing")
		assert.Contains(t, logs.String(), "no such file or directory")

		assert.Empty(t, stop(t, w), "the cluster runs the pods, not the watcher")
		started, stopped := r.seen()
		assert.Empty(t, started)
		assert.Empty(t, stopped)
	})
}

func TestRelist(t *testing.T) {
	read := func(paths ...string) map[string]File {
		m := map[string]File{}
		for _, p := range paths {
			m[p] = File{Path: p, Data: []byte(p)}
		}
		return m
	}
	gone := func(paths ...string) map[string]bool {
		m := map[string]bool{}
		for _, p := range paths {
			m[p] = true
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		listed   []string
		read     map[string]File
		gone     map[string]bool
		want     []string // the new listing
		wantRead []string // of which read again (the others Unread)
	}{
		{"nothing named", []string{"d/a", "d/b"}, nil, nil, []string{"d/a", "d/b"}, nil},
		{"an edit", []string{"d/a", "d/b"}, read("d/b"), nil, []string{"d/a", "d/b"}, []string{"d/b"}},
		{"a new file, in name order", []string{"d/a", "d/c"}, read("d/b"), nil, []string{"d/a", "d/b", "d/c"}, []string{"d/b"}},
		{"a file gone", []string{"d/a", "d/b", "d/c"}, nil, gone("d/b"), []string{"d/a", "d/c"}, nil},
		{"gone before it was listed", []string{"d/a"}, nil, gone("d/z"), []string{"d/a"}, nil},
		{"a rename", []string{"d/a", "d/f"}, read("d/c"), gone("d/f"), []string{"d/a", "d/c"}, []string{"d/c"}},
		{"into an empty directory", nil, read("d/b", "d/a"), nil, []string{"d/a", "d/b"}, []string{"d/a", "d/b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listed := slices.Clone(tc.listed)
			got, files := relist(listed, tc.read, tc.gone)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.listed, listed, "the old listing is not changed")
			var paths, reread []string
			for _, f := range files {
				paths = append(paths, f.Path)
				if !f.Unread {
					reread = append(reread, f.Path)
					assert.Equal(t, f.Path, string(f.Data))
				}
			}
			assert.Equal(t, got, paths, "a file per path, in the listing's order")
			assert.Equal(t, tc.wantRead, reread)
		})
	}
}

// TestStartReturnsOnceTheFirstReadIsCarriedOut: when Start returns, the pods of the path as it
// was are started already (node's orphan sweep, the part after the watcher, relies on it).
func TestStartReturnsOnceTheFirstReadIsCarriedOut(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), podYAML("a", ""))
	write(t, filepath.Join(dir, "b.yaml"), podYAML("b", ""))
	r := &fakeRunner{}
	w := New(Options{Path: dir, Period: time.Hour, Runner: r})
	start(t, w)
	started, _ := r.seen()
	assert.ElementsMatch(t, []string{"a", "b"}, started, "no wait needed")
	stop(t, w)
}
