package staticpod

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/logtest"
)

// fakeNotifier stands in for inotify inside synctest bubbles (a real notifier's reader waits in a
// system call, which a bubble cannot wait for). The test sends its events and errors.
type fakeNotifier struct {
	events chan fsnotify.Event
	errs   chan error

	mu      sync.Mutex
	addErr  error // what Add returns
	added   []string
	removed []string
	closed  bool
}

func newFakeNotifier() *fakeNotifier {
	return &fakeNotifier{events: make(chan fsnotify.Event), errs: make(chan error)}
}

func (f *fakeNotifier) Add(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.addErr != nil {
		return f.addErr
	}
	f.added = append(f.added, dir)
	return nil
}

func (f *fakeNotifier) Remove(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, dir)
	return nil
}

func (f *fakeNotifier) Events() <-chan fsnotify.Event { return f.events }
func (f *fakeNotifier) Errors() <-chan error          { return f.errs }

func (f *fakeNotifier) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeNotifier) state() (added, removed []string, closed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.added), slices.Clone(f.removed), f.closed
}

func (f *fakeNotifier) failAdd(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addErr = err
}

// polling gives w a notifier that reports no events, so that only its periodic reads see changes
// (and it runs in a synctest bubble).
func polling(w *Watcher) *Watcher {
	w.newNotifier = func() (notifier, error) { return newFakeNotifier(), nil }
	return w
}

// readCounter is a cluster watcher's Set that records every read.
type readCounter struct {
	mu   sync.Mutex
	sets [][]string
}

func (c *readCounter) set(pods []*v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sets = append(c.sets, names(pods))
}

func (c *readCounter) reads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sets)
}

func (c *readCounter) last() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sets) == 0 {
		return nil
	}
	return c.sets[len(c.sets)-1]
}

func are(want ...string) func(got []string) bool {
	return func(got []string) bool { return slices.Equal(got, want) }
}

func startedAre(want ...string) func(started, stopped []string) bool {
	return func(started, _ []string) bool { return are(want...)(started) }
}

func stoppedAre(want ...string) func(started, stopped []string) bool {
	return func(_, stopped []string) bool { return are(want...)(stopped) }
}

func TestClassify(t *testing.T) {
	const dir, file = "/etc/manifests", "/etc/manifests/web.yaml"
	ev := func(name string, op fsnotify.Op) fsnotify.Event { return fsnotify.Event{Name: name, Op: op} }
	for _, tc := range []struct {
		name      string
		path, dir string
		ev        fsnotify.Event
		want      change
	}{
		{"a manifest created", dir, dir, ev(dir+"/a.yaml", fsnotify.Create), named},
		{"a manifest written", dir, dir, ev(dir+"/a.yaml", fsnotify.Write), named},
		{"a manifest removed", dir, dir, ev(dir+"/a.yaml", fsnotify.Remove), named},
		{"a manifest renamed away", dir, dir, ev(dir+"/a.yaml", fsnotify.Rename), named},
		{"a manifest's mode changed", dir, dir, ev(dir+"/a.yaml", fsnotify.Chmod), named},
		{"a name without an extension", dir, dir, ev(dir+"/pod", fsnotify.Create), named},
		{"a hidden file (an editor's or the soak's temporary)", dir, dir, ev(dir+"/.a.yaml.tmp", fsnotify.Write), unrelated},
		{"the directory's mode changed", dir, dir, ev(dir, fsnotify.Chmod), changed},
		{"the directory removed", dir, dir, ev(dir, fsnotify.Remove), watchGone},
		{"the directory moved away", dir, dir, ev(dir, fsnotify.Rename), watchGone},
		{"an unclean name", dir, dir, ev(dir+"//a.yaml", fsnotify.Create), named},
		{"somewhere else", dir, dir, ev("/etc/other/a.yaml", fsnotify.Create), unrelated},
		{"a relative path", "manifests", "manifests", ev("manifests/a.yaml", fsnotify.Write), named},
		{"one file: written", file, dir, ev(file, fsnotify.Write), changed},
		{"one file: renamed in place", file, dir, ev(file, fsnotify.Create), changed},
		{"one file: removed", file, dir, ev(file, fsnotify.Remove), changed},
		{"one file: another file beside it", file, dir, ev(dir+"/other.yaml", fsnotify.Create), unrelated},
		{"one file: its directory's mode changed", file, dir, ev(dir, fsnotify.Chmod), unrelated},
		{"one file: its directory removed", file, dir, ev(dir, fsnotify.Remove), watchGone},
		{"no watch any more (an event still queued)", dir, "", ev(dir+"/a.yaml", fsnotify.Create), unrelated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, classify(tc.path, tc.dir, tc.ev))
		})
	}
}

func TestExplainWatchError(t *testing.T) {
	assert.ErrorContains(t, explainWatchError(syscall.ENOSPC), "fs.inotify.max_user_watches")
	assert.ErrorContains(t, explainWatchError(fmt.Errorf("couldn't initialize inotify: %w", syscall.EMFILE)), "fs.inotify.max_user_instances")
	assert.ErrorIs(t, explainWatchError(syscall.EMFILE), syscall.EMFILE)
	assert.Equal(t, "other", explainWatchError(errors.New("other")).Error())
}

// TestEventsStartAndStopPodsWithoutATick: with a period of an hour, a manifest renamed into the
// directory (the soak's way) or written in place (cp's way) starts its pod and a removed one stops
// it: inotify, not the periodic read, saw them.
func TestEventsStartAndStopPodsWithoutATick(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), podYAML("a", ""))
	log, logs := logtest.Capture(t)
	r := &fakeRunner{}
	w := New(Options{Path: dir, Period: time.Hour, Runner: r, Logger: log})
	start(t, w)
	r.waitFor(t, "a starts at the first read", startedAre("a"))

	tmp := filepath.Join(dir, ".b.yaml.tmp")
	write(t, tmp, podYAML("b", ""))
	require.NoError(t, os.Rename(tmp, filepath.Join(dir, "b.yaml")))
	r.waitFor(t, "b renamed in starts", startedAre("a", "b"))

	require.NoError(t, os.Remove(filepath.Join(dir, "a.yaml")))
	r.waitFor(t, "a removed stops", stoppedAre("a"))

	write(t, filepath.Join(dir, "c.yaml"), podYAML("c", ""))
	r.waitFor(t, "c written in place starts", startedAre("a", "b", "c"))

	assert.Equal(t, []string{"b", "c"}, names(stop(t, w)))
	assert.NotContains(t, logs.String(), "not watched")
}

// TestEditingASingleManifestFileReplacesItsPodWithoutATick: with --pod-manifest-path naming one
// file (watched through its directory), writing a new content replaces the pod at once.
func TestEditingASingleManifestFileReplacesItsPodWithoutATick(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	write(t, path, podYAML("web", ""))
	log, logs := logtest.Capture(t)
	r := &fakeRunner{}
	w := New(Options{Path: path, Period: time.Hour, Runner: r, Logger: log})
	start(t, w)
	r.waitFor(t, "web starts at the first read", startedAre("web"))

	write(t, filepath.Join(dir, "other.yaml"), podYAML("other", "")) // not the manifest: never read
	write(t, path, podYAML("web", "    workingDir: /tmp\n"))
	r.waitFor(t, "the edited web replaces the old one", func(started, stopped []string) bool {
		return are("web", "web")(started) && are("web")(stopped)
	})
	running := stop(t, w)
	require.Len(t, running, 1)
	assert.Equal(t, "/tmp", running[0].Spec.Containers[0].WorkingDir, "the new content runs")
	assert.NotContains(t, logs.String(), "other.yaml")
	assert.NotContains(t, logs.String(), "not watched")
}

// TestAWatchThatCannotBeSetUpFallsBackToPolling: a directory that does not exist at Start cannot
// be watched: that is logged once (with the path and the error) however many periodic reads retry,
// and the read after it appears sets the watch up, so a pod written later starts without a read
// of the period. A watched directory removed and made again is watched again the same way.
// Periodic reads are the test's ticks here; the watcher's real clock only settles bursts.
func TestAWatchThatCannotBeSetUpFallsBackToPolling(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pods")
	log, logs := logtest.Capture(t)
	r := &fakeRunner{}
	ticks := make(chan time.Time)
	w := New(Options{Path: dir, Period: time.Hour, Runner: r, Logger: log})
	w.ticks = ticks
	start(t, w)
	ticks <- time.Now() // unbuffered: each send is taken by the loop once it finished the last read
	ticks <- time.Now()

	require.NoError(t, os.Mkdir(dir, 0o755))
	write(t, filepath.Join(dir, "a.yaml"), podYAML("a", ""))
	ticks <- time.Now()
	r.waitFor(t, "a starts at the periodic read after the directory appeared", startedAre("a"))
	write(t, filepath.Join(dir, "b.yaml"), podYAML("b", ""))
	r.waitFor(t, "b starts without a periodic read: the directory is watched", startedAre("a", "b"))
	assert.Equal(t, 1, strings.Count(logs.String(), "static pod manifest path not watched"), "logged once: %s", logs)
	assert.Contains(t, logs.String(), fmt.Sprintf("path=%s period=1h0m0s error=\"stat %s: no such file or directory\"", dir, dir))
	assert.Contains(t, logs.String(), "watching the static pod manifest path again")

	assert.Equal(t, []string{"a", "b"}, names(stop(t, w)))
}

// traceNotifier is inotify that tells the test, in order with the reads of a cluster watcher,
// when the watcher adds and drops its watch.
type traceNotifier struct {
	notifier
	trace chan string
}

func (n traceNotifier) Add(dir string) error {
	err := n.notifier.Add(dir)
	n.trace <- fmt.Sprintf("add %s %v", dir, err)
	return err
}

func (n traceNotifier) Remove(dir string) error {
	err := n.notifier.Remove(dir)
	n.trace <- "remove " + dir
	return err
}

// next waits for the next entry of trace that starts with prefix, skipping others.
func next(t *testing.T, trace <-chan string, prefix string) string {
	t.Helper()
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	for {
		select {
		case s := <-trace:
			if strings.HasPrefix(s, prefix) {
				return s
			}
		case <-deadline.C:
			t.Fatalf("no %q within %v", prefix, patience)
		}
	}
}

// TestARemovedDirectoryIsWatchedAgain: the watched directory removed and made again is read at
// the next periodic read and watched again from then on (a cluster watcher here: each read is
// traced in order with the watch's changes, so the test knows the loop is idle when it writes).
func TestARemovedDirectoryIsWatchedAgain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pods")
	require.NoError(t, os.Mkdir(dir, 0o755))
	write(t, filepath.Join(dir, "a.yaml"), podYAML("a", ""))
	log, logs := logtest.Capture(t)
	trace := make(chan string, 1000)
	ticks := make(chan time.Time)
	w := New(Options{Path: dir, Period: time.Hour, Logger: log, Cluster: "demo", Set: func(pods []*v1.Pod) {
		trace <- fmt.Sprintf("read %v", names(pods))
	}})
	w.newNotifier = func() (notifier, error) {
		n, err := newFSNotifier()
		if err != nil {
			return nil, err
		}
		return traceNotifier{n, trace}, nil
	}
	w.ticks = ticks
	start(t, w)
	assert.Equal(t, "add "+dir+" <nil>", next(t, trace, "add"))
	assert.Equal(t, "read [a]", next(t, trace, "read"))
	write(t, filepath.Join(dir, "b.yaml"), podYAML("b", ""))
	assert.Equal(t, "read [a b]", next(t, trace, "read"), "read on an event")

	require.NoError(t, os.RemoveAll(dir))
	assert.Equal(t, "remove "+dir, next(t, trace, "remove"), "the watch is dropped")
	require.NoError(t, os.Mkdir(dir, 0o755))
	write(t, filepath.Join(dir, "c.yaml"), podYAML("c", ""))
	ticks <- time.Now()
	assert.Equal(t, "add "+dir+" <nil>", next(t, trace, "add"), "watched again at the periodic read")
	assert.Equal(t, "read [c]", next(t, trace, "read"), "the periodic read")
	write(t, filepath.Join(dir, "d.yaml"), podYAML("d", ""))
	assert.Equal(t, "read [c d]", next(t, trace, "read"), "read on an event: the new directory is watched")
	assert.Contains(t, logs.String(), "error=\""+dir+" was removed or moved\"")
	assert.Contains(t, logs.String(), "watching the static pod manifest path again")
	assert.Empty(t, stop(t, w))
}

// TestStopWithEventsInFlightLeaksNothing: Stop while files are being written ends the loop and
// inotify's reader (goleak) and returns.
func TestStopWithEventsInFlightLeaksNothing(t *testing.T) {
	dir := t.TempDir()
	r := &fakeRunner{}
	w := New(Options{Path: dir, Period: time.Hour, Runner: r, Logger: logtest.New(t)})
	start(t, w)
	quit, written := make(chan struct{}), make(chan struct{})
	go func() { // ends when quit is closed
		defer close(written)
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			name := fmt.Sprintf("p%d", i%50)
			path := filepath.Join(dir, name+".yaml")
			if i%100 < 50 {
				assert.NoError(t, os.WriteFile(path, []byte(podYAML(name, "")), 0o600))
			} else {
				assert.NoError(t, os.Remove(path))
			}
		}
	}()
	r.waitFor(t, "pods start from events", func(started, _ []string) bool { return len(started) > 0 })
	stop(t, w)
	close(quit)
	<-written
	goleak.VerifyNone(t)
}

// readerWithFakes is a cluster member's watcher (it only reads, into c) of dir, on a fake
// notifier f, whose periodic reads are what the test sends on ticks; not started.
func readerWithFakes(t *testing.T, dir string) (w *Watcher, f *fakeNotifier, c *readCounter, ticks chan time.Time) {
	f, c, ticks = newFakeNotifier(), &readCounter{}, make(chan time.Time)
	w = New(Options{Path: dir, Period: time.Hour, Logger: logtest.New(t), Cluster: "demo", Set: c.set})
	w.newNotifier = func() (notifier, error) { return f, nil }
	w.ticks = ticks
	return w, f, c, ticks
}

// TestABurstOfEventsIsOneRead: events of one burst fold into one read settleDelay after the first;
// events of hidden files read nothing; a periodic read covers the events before it.
func TestABurstOfEventsIsOneRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		w, f, c, ticks := readerWithFakes(t, dir)
		start(t, w)
		synctest.Wait()
		require.Equal(t, 1, c.reads(), "read at once")
		added, _, _ := f.state()
		assert.Equal(t, []string{dir}, added, "the directory is watched")

		for _, name := range []string{"a", "b", "c"} {
			path := filepath.Join(dir, name+".yaml")
			write(t, path, podYAML(name, ""))
			for _, op := range []fsnotify.Op{fsnotify.Create, fsnotify.Write, fsnotify.Write, fsnotify.Chmod} {
				f.events <- fsnotify.Event{Name: path, Op: op}
			}
		}
		synctest.Wait()
		assert.Equal(t, 1, c.reads(), "not before the burst settled")
		time.Sleep(settleDelay)
		synctest.Wait()
		assert.Equal(t, 2, c.reads(), "one read for the burst")
		assert.Equal(t, []string{"a", "b", "c"}, c.last())

		f.events <- fsnotify.Event{Name: filepath.Join(dir, ".d.yaml.swp"), Op: fsnotify.Write}
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, 2, c.reads(), "a hidden file reads nothing")

		f.events <- fsnotify.Event{Name: filepath.Join(dir, "a.yaml"), Op: fsnotify.Remove}
		ticks <- time.Now()
		synctest.Wait()
		assert.Equal(t, 3, c.reads(), "the periodic read")
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, 3, c.reads(), "the periodic read covered the event: no second read")

		assert.Empty(t, stop(t, w))
		_, _, closed := f.state()
		assert.True(t, closed, "Stop closes the notifier")
	})
}

// TestWatchProblemsAreLoggedOnceAndRetriedAtPeriodicReads: inotify's limits (when making the
// notifier, when adding the watch), its error events and its end are each logged once, with the
// path and the error; the watcher keeps reading at every period and tries to watch again at each
// periodic read until it works.
func TestWatchProblemsAreLoggedOnceAndRetriedAtPeriodicReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		log, logs := logtest.Capture(t)
		c := &readCounter{}
		ticks := make(chan time.Time)
		var notifiers []*fakeNotifier
		makeErr := fmt.Errorf("couldn't initialize inotify: %w", syscall.EMFILE)
		w := New(Options{Path: dir, Period: time.Hour, Logger: log, Cluster: "demo", Set: c.set})
		w.newNotifier = func() (notifier, error) {
			if makeErr != nil {
				return nil, makeErr
			}
			f := newFakeNotifier()
			if len(notifiers) == 0 {
				f.failAdd(syscall.ENOSPC)
			}
			notifiers = append(notifiers, f)
			return f, nil
		}
		w.ticks = ticks
		tick := func() {
			ticks <- time.Now()
			synctest.Wait()
		}
		warnings := func() int { return strings.Count(logs.String(), "[WARN]") }

		start(t, w)
		synctest.Wait()
		tick()
		assert.Equal(t, 2, c.reads(), "polling goes on")
		assert.Equal(t, 1, warnings(), "logged once: %s", logs)
		assert.Contains(t, logs.String(), "path="+dir)
		assert.Contains(t, logs.String(), "too many open files (inotify's instance limit: raise fs.inotify.max_user_instances)")

		makeErr = nil
		tick()
		tick()
		require.Len(t, notifiers, 1, "one notifier, kept while its watch cannot be added")
		f := notifiers[0]
		assert.Equal(t, 2, warnings(), "logged once: %s", logs)
		assert.Contains(t, logs.String(), "watch "+dir+": no space left on device (inotify's watch limit: raise fs.inotify.max_user_watches)")

		f.failAdd(nil)
		tick()
		added, _, _ := f.state()
		assert.Equal(t, []string{dir}, added)
		assert.Contains(t, logs.String(), "watching the static pod manifest path again")

		reads := c.reads()
		f.errs <- fsnotify.ErrEventOverflow
		time.Sleep(settleDelay)
		synctest.Wait()
		assert.Equal(t, reads+1, c.reads(), "events may be lost: read soon")
		_, removed, _ := f.state()
		assert.Equal(t, []string{dir}, removed, "and watch again")
		assert.Equal(t, 3, warnings(), "logged once: %s", logs)
		assert.Contains(t, logs.String(), "error=\"inotify: fsnotify: queue or buffer overflow\"")
		tick()
		added, _, _ = f.state()
		assert.Equal(t, []string{dir, dir}, added, "watched again at the periodic read")

		close(f.events) // inotify's reader ended
		synctest.Wait()
		_, _, closed := f.state()
		assert.True(t, closed)
		assert.Contains(t, logs.String(), "error=\"inotify stopped\"")
		tick()
		require.Len(t, notifiers, 2, "a new notifier at the periodic read")
		added, _, _ = notifiers[1].state()
		assert.Equal(t, []string{dir}, added)
		assert.Equal(t, 3, strings.Count(logs.String(), "watching the static pod manifest path again"), "after ENOSPC, the overflow and the new notifier")
		assert.Equal(t, 4, warnings(), "logged once: %s", logs)

		reads = c.reads()
		assert.Empty(t, stop(t, w))
		assert.Equal(t, reads, c.reads())
		_, _, closed = notifiers[1].state()
		assert.True(t, closed, "Stop closes the notifier")
	})
}

// TestABurstRereadsOnlyTheManifestsItNamed: as kubelet, events make the watcher read the files
// they name, not the whole directory; what it then applies is what a full read would find (files
// added, edited, removed and renamed, in name order). An event on the directory itself, lost events
// and the periodic read read everything.
func TestABurstRereadsOnlyTheManifestsItNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		for _, name := range []string{"b", "d", "f"} {
			write(t, filepath.Join(dir, name+".yaml"), podYAML(name, ""))
		}
		w, f, c, _ := readerWithFakes(t, dir)
		var readMu sync.Mutex
		var read []string
		w.readOne = func(path string) (File, bool) {
			readMu.Lock()
			read = append(read, filepath.Base(path))
			readMu.Unlock()
			return readFile(path)
		}
		reads := func() []string {
			readMu.Lock()
			defer readMu.Unlock()
			out := slices.Clone(read)
			slices.Sort(out)
			read = nil
			return out
		}
		burst := func(evs ...fsnotify.Event) {
			for _, ev := range evs {
				f.events <- ev
			}
			time.Sleep(settleDelay)
			synctest.Wait()
		}
		ev := func(name string, op fsnotify.Op) fsnotify.Event {
			return fsnotify.Event{Name: filepath.Join(dir, name), Op: op}
		}
		start(t, w)
		synctest.Wait()
		require.Equal(t, []string{"b", "d", "f"}, c.last())
		assert.Empty(t, reads(), "the first read is a full one")

		write(t, filepath.Join(dir, "a.yaml"), podYAML("a", ""))
		write(t, filepath.Join(dir, "e.yaml"), podYAML("e", ""))
		require.NoError(t, os.Remove(filepath.Join(dir, "d.yaml")))
		require.NoError(t, os.Rename(filepath.Join(dir, "f.yaml"), filepath.Join(dir, "c.yaml")))
		burst(ev("a.yaml", fsnotify.Create), ev("a.yaml", fsnotify.Write), ev("e.yaml", fsnotify.Create),
			ev("d.yaml", fsnotify.Remove), ev("f.yaml", fsnotify.Rename), ev("c.yaml", fsnotify.Create))
		assert.Equal(t, []string{"a", "b", "e", "f"}, c.last(), "c.yaml holds pod f now; d is gone")
		assert.Equal(t, []string{"a.yaml", "c.yaml", "d.yaml", "e.yaml", "f.yaml"}, reads(), "each named file once; b.yaml not read")

		write(t, filepath.Join(dir, "b.yaml"), podYAML("b2", ""))
		burst(ev("b.yaml", fsnotify.Write))
		assert.Equal(t, []string{"a", "b2", "e", "f"}, c.last())
		assert.Equal(t, []string{"b.yaml"}, reads())

		list, err := List(dir)
		require.NoError(t, err)
		var paths []string
		for _, f := range list {
			paths = append(paths, f.Path)
		}
		assert.Equal(t, paths, w.listed, "what the watcher keeps is what a full read lists")

		n := c.reads()
		burst(fsnotify.Event{Name: dir, Op: fsnotify.Chmod})
		assert.Equal(t, n+1, c.reads(), "the directory's own event is one read ...")
		assert.Empty(t, reads(), "... of the whole directory")
		f.errs <- errors.New("queue overflow")
		time.Sleep(settleDelay)
		synctest.Wait()
		assert.Equal(t, n+2, c.reads())
		assert.Empty(t, reads(), "events lost: the whole directory")

		assert.Empty(t, stop(t, w))
	})
}
