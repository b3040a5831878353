package staticpod

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/logtest"
)

// manifestServer serves one manifest at any path, with a status, and records the requests' tokens.
type manifestServer struct {
	mu     sync.Mutex
	body   string
	status int
	tokens []string
}

func (s *manifestServer) set(status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body = status, body
}

func (s *manifestServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = append(s.tokens, r.Header.Get("X-Token"))
	w.WriteHeader(s.status)
	_, _ = w.Write([]byte(s.body))
}

func (s *manifestServer) seenTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokens)
}

// TestWatcherReadsTheURL: --manifest-url's pods start before Start returns, with the headers
// given; each poll applies the answer (pods added, changed, removed); an answer that is not 200,
// or an empty one, changes nothing and is logged once; an empty List stops every pod of the URL.
func TestWatcherReadsTheURL(t *testing.T) {
	srv := &manifestServer{status: http.StatusOK, body: podYAML("a", "")}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	log, logs := logtest.Capture(t)
	r := &fakeRunner{}
	url := ts.URL + "/pods.yaml"
	reg := prometheus.NewRegistry()
	var now atomic.Int64
	now.Store(1_000)
	w := New(Options{URL: url, Header: http.Header{"X-Token": {"t1"}}, Runner: r, Logger: log, Registerer: reg,
		Now: func() time.Time { return time.Unix(now.Load(), 0) }})
	problems := func() float64 { return testutil.ToFloat64(w.problems) }
	lastRead := func() float64 { return testutil.ToFloat64(w.lastSuccess.WithLabelValues("url")) }
	ticks := make(chan time.Time)
	w.urlTicks = ticks
	poll := func() { // one poll, which has read what the server serves now when it returns
		n := len(srv.seenTokens())
		ticks <- time.Now()
		require.Eventually(t, func() bool { return len(srv.seenTokens()) > n }, patience, time.Millisecond)
	}

	start(t, w)
	started, _ := r.seen()
	assert.Equal(t, []string{"a"}, started, "the first read is carried out before Start returns")
	assert.Equal(t, []string{"t1"}, srv.seenTokens(), "--manifest-url-header is sent")
	assert.Equal(t, 0.0, problems())
	assert.Equal(t, 1_000.0, lastRead())

	now.Store(1_500)
	srv.set(http.StatusOK, podYAML("a", "")+"---\n"+podYAML("b", ""))
	poll()
	r.waitFor(t, "b started", func(started, _ []string) bool { return slices.Contains(started, "b") })
	require.Eventually(t, func() bool { return lastRead() == 1_500 }, patience, time.Millisecond, "a valid answer is a success")

	now.Store(2_000)
	srv.set(http.StatusInternalServerError, "")
	poll()
	srv.set(http.StatusInternalServerError, "")
	poll() // the same failure again: logged once
	require.Eventually(t, func() bool { return problems() == 1 }, patience, time.Millisecond, "the URL that cannot be read is one problem")
	assert.Equal(t, 1_500.0, lastRead(), "the last success stays the last success")
	srv.set(http.StatusOK, podYAML("b", ""))
	poll()
	r.waitFor(t, "a stopped", func(_, stopped []string) bool { return slices.Contains(stopped, "a") })
	started, stopped := r.seen()
	assert.Equal(t, []string{"a", "b"}, started, "the failed reads changed nothing")
	assert.Equal(t, []string{"a"}, stopped)
	assert.Equal(t, 1, strings.Count(logs.String(), url+": unable to read the URL: the server reported 500 Internal Server Error"), logs.String())

	srv.set(http.StatusOK, "")
	poll()
	srv.set(http.StatusOK, "apiVersion: v1\nkind: List\nitems: []\n")
	poll()
	r.waitFor(t, "b stopped", func(_, stopped []string) bool { return slices.Contains(stopped, "b") })
	_, stopped = r.seen()
	assert.Equal(t, []string{"a", "b"}, stopped, "stopped by the empty List, not by the empty answer")
	require.Eventually(t, func() bool { return lastRead() == 2_000 }, patience, time.Millisecond, "the empty List is a success")
	assert.Equal(t, 0.0, problems())
	assert.Contains(t, logs.String(), url+": no pods found (serve an empty List to stop its pods)")
	assert.Empty(t, names(stop(t, w)))
	assert.Len(t, srv.seenTokens(), 7)
}

// TestThePathAndTheURLAreOneSetOfStaticPods: a pod both define runs once, from the one that had it
// first, and the other is refused naming both; the path's listing does not drop the URL's pods.
func TestThePathAndTheURLAreOneSetOfStaticPods(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "web.yaml"), podYAML("web", ""))
	srv := &manifestServer{status: http.StatusOK, body: podYAML("web", "    workingDir: /tmp\n") + "---\n" + podYAML("api", "")}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	log, logs := logtest.Capture(t)
	r := &fakeRunner{}
	w := polling(New(Options{Path: dir, URL: ts.URL, Runner: r, Logger: log}))
	ticks := make(chan time.Time)
	w.ticks = ticks

	start(t, w)
	started, _ := r.seen()
	assert.Equal(t, []string{"web", "api"}, started)
	assert.Contains(t, logs.String(), ts.URL+`: document 1: metadata.name: Duplicate value: pod \"default/web\" is also defined in `+filepath.Join(dir, "web.yaml"))

	require.NoError(t, os.Remove(filepath.Join(dir, "web.yaml")))
	ticks <- time.Now()
	r.waitFor(t, "the URL's web replaces the file's", func(started, _ []string) bool { return len(started) == 3 })
	started, stopped := r.seen()
	assert.Equal(t, []string{"web", "api", "web"}, started)
	assert.Equal(t, []string{"web"}, stopped, "api, the URL's, keeps running")
	assert.ElementsMatch(t, []string{"web", "api"}, names(stop(t, w)))
}

// TestStopEndsAGETUnderWay: a URL that does not answer holds neither Start past its context nor
// Stop: the GET ends with them, and no goroutine is left (goleak).
func TestStopEndsAGETUnderWay(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer ts.Close()
	w := New(Options{URL: ts.URL, Runner: &fakeRunner{}})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	begun := time.Now()
	err := w.Start(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, w.Stop(context.Background()))
	assert.Less(t, time.Since(begun), URLTimeout, "ended with Start's context, not by the GET's own timeout")
}

// TestAClusterMemberReadsTheURL: in a cluster the URL's pods are handed to Set with the path's.
func TestAClusterMemberReadsTheURL(t *testing.T) {
	srv := &manifestServer{status: http.StatusOK, body: podYAML("a", "")}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	sets := make(chan []string, 4)
	w := New(Options{URL: ts.URL, Cluster: "demo", Set: func(pods []*v1.Pod) { sets <- names(pods) }})
	ticks := make(chan time.Time)
	w.urlTicks = ticks
	start(t, w)
	assert.Equal(t, []string{"a"}, <-sets)
	srv.set(http.StatusOK, podYAML("a", "")+"---\n"+podYAML("b", ""))
	ticks <- time.Now()
	assert.Equal(t, []string{"a", "b"}, <-sets)
	assert.Empty(t, stop(t, w), "the cluster runs the pods, not the watcher")
}

// TestSeenWaitsForEverySourceToBeRead: Seen (kubelet's sourcesReady) closes only once the path was
// listed and the URL gave a valid answer; an answer that is not 200, an empty one or an invalid
// one does not count.
func TestSeenWaitsForEverySourceToBeRead(t *testing.T) {
	srv := &manifestServer{status: http.StatusServiceUnavailable}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	dir := filepath.Join(t.TempDir(), "manifests") // not there yet: it cannot be listed
	w := polling(New(Options{Path: dir, URL: ts.URL, Runner: &fakeRunner{}, Registerer: prometheus.NewRegistry()}))
	pathTicks, urlTicks := make(chan time.Time), make(chan time.Time)
	w.ticks, w.urlTicks = pathTicks, urlTicks
	seen := func() bool {
		select {
		case <-w.Seen():
			return true
		default:
			return false
		}
	}
	poll := func() { // a poll of the URL whose answer the loop has handled when it returns
		urlTicks <- time.Now()
		urlTicks <- time.Now()  // taken once the first poll's answer was handed to the loop
		pathTicks <- time.Now() // taken once the loop has handled that answer
	}
	start(t, w)
	assert.False(t, seen(), "neither source was read")
	assert.Equal(t, 2.0, testutil.ToFloat64(w.problems), "the path cannot be listed, the URL cannot be read")
	assert.Equal(t, 0.0, testutil.ToFloat64(w.lastSuccess.WithLabelValues("path")))
	require.NoError(t, os.Mkdir(dir, 0o755))
	for _, body := range []string{"", "# nothing\n", podYAML("web", "    livenessProbe: {tcpSocket: {port: 80}, periodSecond: 5}\n")} {
		srv.set(http.StatusOK, body)
		poll()
		assert.False(t, seen(), "the path was listed, but the URL gave %q", body)
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(w.problems), "the URL's invalid answer")
	assert.Positive(t, testutil.ToFloat64(w.lastSuccess.WithLabelValues("path")), "the path was listed")
	assert.Equal(t, 0.0, testutil.ToFloat64(w.lastSuccess.WithLabelValues("url")))
	srv.set(http.StatusOK, "apiVersion: v1\nkind: List\nitems: []\n")
	poll()
	select {
	case <-w.Seen():
	case <-time.After(patience):
		t.Fatal("not seen once the URL gave a valid answer")
	}
	assert.Equal(t, 0.0, testutil.ToFloat64(w.problems))
	assert.Empty(t, stop(t, w))
}
