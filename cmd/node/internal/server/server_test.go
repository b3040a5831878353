package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/internal/lifecycle"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeSource struct {
	pods    []v1.Pod
	logs    map[string]string // "<uid>/<container>[/previous]" → path
	stopped atomic.Bool       // the current runs have ended
}

func (f *fakeSource) Pods(context.Context) ([]v1.Pod, error) { return f.pods, nil }
func (f *fakeSource) Events() v1.EventList {
	return v1.EventList{Items: []v1.Event{{Reason: "Unhealthy", Count: 3}}}
}
func (f *fakeSource) LogPath(uid types.UID, c string, prev bool) (string, bool, error) {
	key := string(uid) + "/" + c
	if prev {
		key += "/previous"
	}
	p, ok := f.logs[key]
	if !ok {
		return "", false, errors.New(`container "` + c + `" is not valid for pod`)
	}
	return p, !prev && !f.stopped.Load(), nil
}

// testEnv is a fake source with one pod "default/web", container "app": current log "one\ntwo\nthree\n",
// previous log "before\n".
type testEnv struct {
	src      *fakeSource
	cur      string // the current log file
	reg      *prometheus.Registry
	baseOpts Options
}

func newEnv(t testing.TB) *testEnv {
	dir := t.TempDir()
	cur := filepath.Join(dir, "1.log")
	prev := filepath.Join(dir, "0.log")
	require.NoError(t, os.WriteFile(cur, []byte("one\ntwo\nthree\n"), 0o600))
	require.NoError(t, os.WriteFile(prev, []byte("before\n"), 0o600))
	src := &fakeSource{
		pods: []v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}, Status: v1.PodStatus{Phase: v1.PodRunning}}},
		logs: map[string]string{"u1/app": cur, "u1/app/previous": prev},
	}
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "prober_probe_total", Help: "h"}, []string{"probe_type"})
	reg.MustRegister(c)
	c.WithLabelValues("Liveness").Inc()
	return &testEnv{src: src, cur: cur, reg: reg, baseOpts: Options{Source: src, Metrics: reg, Probes: reg, FollowPoll: 5 * time.Millisecond}}
}

// start serves opts (Source and registries from the env unless set) on a loopback port with the
// real http.Server configuration, and returns its base URL; the server is stopped at cleanup.
func (e *testEnv) start(t testing.TB, opts Options) (string, *Server) {
	t.Helper()
	if opts.Source == nil {
		opts.Source, opts.Metrics, opts.Probes = e.baseOpts.Source, e.baseOpts.Metrics, e.baseOpts.Probes
	}
	if opts.FollowPoll == 0 {
		opts.FollowPoll = e.baseOpts.FollowPoll
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	opts.Listener = ln
	srv := New(opts)
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, srv.Stop(ctx))
		select {
		case err := <-srv.Failed():
			assert.NoError(t, err, "served until Stop")
		default:
		}
		http.DefaultClient.CloseIdleConnections()
	})
	return "http://" + ln.Addr().String(), srv
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestRoutes(t *testing.T) {
	env := newEnv(t)
	base, _ := env.start(t, Options{})
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(env.src.logs["u1/app/previous"], old, old))
	cases := []struct {
		path     string
		code     int
		contains string
	}{
		{"/healthz", 200, "ok"},
		{"/pods", 200, `"kind": "PodList"`},
		{"/pods/default/web", 200, `"phase": "Running"`},
		{"/pods/default/nope", 404, "pod default/nope not found"},
		{"/pods/Default/web", 400, `invalid namespace name "Default": a lowercase RFC 1123 label must consist of`},
		{"/pods/default/we%20b", 400, `invalid pod name "we b": a lowercase RFC 1123 subdomain`},
		{"/events", 200, `"reason": "Unhealthy"`},
		{"/metrics", 200, `prober_probe_total{probe_type="Liveness"} 1`},
		{"/metrics/probes", 200, `prober_probe_total`},
		{"/containerLogs/default/web/app", 200, "one\ntwo\nthree\n"},
		{"/containerLogs/default/web/app?tailLines=2", 200, "two\nthree\n"},
		{"/containerLogs/default/web/app?tailLines=0", 200, ""},
		{"/containerLogs/default/web/app?tail=1", 200, "three\n"},
		{"/containerLogs/default/web/app?tailLines=1&tail=all", 200, "one\ntwo\nthree\n"},
		{"/containerLogs/default/web/app?limitBytes=5", 200, "one\nt"},
		{"/containerLogs/default/web/app?tailLines=2&limitBytes=4", 200, "two\n"},
		{"/containerLogs/default/web/app?previous=true", 200, "before\n"},
		{"/containerLogs/default/web/app?sinceSeconds=60", 200, "one\ntwo\nthree\n"},
		{"/containerLogs/default/web/app?previous=true&sinceSeconds=60", 200, ""},
		{"/containerLogs/default/web/app?previous=true&sinceSeconds=7200", 200, "before\n"},
		{"/containerLogs/default/web/app?previous=true&sinceTime=" + old.Add(-time.Second).UTC().Format(time.RFC3339), 200, "before\n"},
		{"/containerLogs/default/web/app?previous=true&sinceTime=" + old.Add(time.Minute).UTC().Format(time.RFC3339), 200, ""},
		{"/containerLogs/default/web/app?follow=true", 200, "one\ntwo\nthree\n"}, // the run has ended (stopped below): the follow ends too
		{"/containerLogs/default/web/app?previous=true&follow=true", 200, "before\n"},
		{"/containerLogs/default/web/app?tailLines=-1", 422, "tailLines: Invalid value: -1: must be greater than or equal to 0"},
		{"/containerLogs/default/web/app?limitBytes=0", 422, "limitBytes: Invalid value: 0: must be greater than 0"},
		{"/containerLogs/default/web/app?sinceSeconds=0", 422, "sinceSeconds: Invalid value: 0: must be greater than 0"},
		{"/containerLogs/default/web/app?sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z", 422, "at most one of `sinceTime` or `sinceSeconds` may be specified"},
		{"/containerLogs/default/web/app?tailLines=x", 400, `query parameter tailLines="x": must be an integer`},
		{"/containerLogs/default/web/app?tail=some", 400, `query parameter tailLines="some": must be an integer`},
		{"/containerLogs/default/web/app?sinceTime=yesterday", 400, `query parameter sinceTime="yesterday": must be an RFC 3339 time`},
		{"/containerLogs/default/web/app?previous=maybe", 400, `query parameter previous="maybe": must be true or false`},
		{"/containerLogs/default/web/app?since=1", 400, `unsupported query parameter "since"`},
		{"/containerLogs/default/web/nope", 400, `container "nope" is not valid`},
		{"/containerLogs/default/web/App", 400, `invalid container name "App"`},
		{"/containerLogs/default/nope/app", 404, "pod default/nope not found"},
		{"/nothing", 404, `404 page not found: "/nothing" (try /pods`},
		{"/debug/pprof/", 404, "404 page not found"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			if strings.Contains(tc.path, "follow=true") && !strings.Contains(tc.path, "previous=true") {
				env.src.stopped.Store(true) // else the follow goes on
				defer env.src.stopped.Store(false)
			}
			code, body := get(t, base+tc.path)
			assert.Equal(t, tc.code, code, body)
			if tc.contains == "" {
				assert.Empty(t, body)
			} else {
				assert.Contains(t, body, tc.contains)
			}
		})
	}
	resp, err := http.Post(base+"/pods", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestPodsDecodeAsAPodList(t *testing.T) {
	env := newEnv(t)
	base, _ := env.start(t, Options{})
	_, body := get(t, base+"/pods")
	var list v1.PodList
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Items, 1)
	assert.Equal(t, "web", list.Items[0].Name)
}

// A member that runs no pods says why with the list, as a Warning header kubectl would print.
func TestPodsCarryTheWarning(t *testing.T) {
	env := newEnv(t)
	var warning atomic.Value
	warning.Store("")
	base, _ := env.start(t, Options{Warning: func() string { return warning.Load().(string) }})
	resp, err := http.Get(base + "/pods")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Empty(t, resp.Header.Values("Warning"), "none while there is nothing to say")

	warning.Store(`QuorumLost: this member is in contact with 1 of the 3 cluster members (a quorum needs 2)`)
	resp, err = http.Get(base + "/pods")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, []string{`299 - "QuorumLost: this member is in contact with 1 of the 3 cluster members (a quorum needs 2)"`}, resp.Header.Values("Warning"))
}

// TestNodesListsTheNode: with Options.Node, /nodes is a v1.NodeList holding the node it returns
// (as a fleet aggregator lists its nodes), its error a 503 that says so; without it, a 404.
func TestNodesListsTheNode(t *testing.T) {
	env := newEnv(t)
	var fail atomic.Bool
	base, _ := env.start(t, Options{Node: func(ctx context.Context) (v1.Node, error) {
		if fail.Load() {
			return v1.Node{}, errors.New("couldn't determine hostname")
		}
		return v1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "n1"},
			Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}}, ctx.Err()
	}})
	code, body := get(t, base+"/nodes")
	require.Equal(t, http.StatusOK, code, body)
	var list v1.NodeList
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	assert.Equal(t, metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, list.TypeMeta)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "n1", list.Items[0].Name)
	assert.Equal(t, "Node", list.Items[0].Kind)
	assert.Equal(t, v1.ConditionTrue, list.Items[0].Status.Conditions[0].Status)
	assert.Contains(t, body, "\n  \"kind\": \"NodeList\"", "indented, as every answer of the API")

	fail.Store(true)
	code, body = get(t, base+"/nodes")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "node object: couldn't determine hostname\n", body)
	code, body = get(t, base+"/nothing")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, "(try /nodes, /pods,", "the 404 names the route")

	bare, _ := env.start(t, Options{})
	code, body = get(t, bare+"/nodes")
	assert.Equal(t, http.StatusNotFound, code, "no Node: no /nodes")
	assert.Contains(t, body, `404 page not found: "/nodes"`)
	assert.NotContains(t, body, "/nodes,", "and the 404 does not offer it")
}

func TestTailOffset(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // lines longer than the read block
	cases := []struct {
		text string
		n    int64
		want string
	}{
		{"", 3, ""},
		{"one\ntwo\nthree\n", 0, ""},
		{"one\ntwo\nthree\n", 1, "three\n"},
		{"one\ntwo\nthree\n", 2, "two\nthree\n"},
		{"one\ntwo\nthree\n", 3, "one\ntwo\nthree\n"},
		{"one\ntwo\nthree\n", 99, "one\ntwo\nthree\n"},
		{"one\ntwo", 1, "two"},
		{"one\ntwo", 2, "one\ntwo"},
		{"\n\n\n", 2, "\n\n"},
		{long + "\n" + long + "\nend", 2, long + "\nend"},
		{long + "\n" + long + "\n", 1, long + "\n"},
	}
	for _, tc := range cases {
		off, err := tailOffset(strings.NewReader(tc.text), int64(len(tc.text)), tc.n)
		require.NoError(t, err)
		got := tc.text[off:]
		assert.Equal(t, len(tc.want), len(got), "%q (%d bytes) tail %d", tc.text[:min(len(tc.text), 20)], len(tc.text), tc.n)
		assert.True(t, got == tc.want)
	}
}

// A follow streams what the container writes and ends when its run ends.
func TestFollow(t *testing.T) {
	env := newEnv(t)
	base, _ := env.start(t, Options{})
	resp, err := http.Get(base + "/containerLogs/default/web/app?follow=true&tailLines=1")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	buf := make([]byte, 64)
	n, err := io.ReadAtLeast(resp.Body, buf, len("three\n"))
	require.NoError(t, err)
	assert.Equal(t, "three\n", string(buf[:n]))

	f, err := os.OpenFile(env.cur, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("four\n")
	require.NoError(t, err)
	n, err = io.ReadAtLeast(resp.Body, buf, len("four\n"))
	require.NoError(t, err)
	assert.Equal(t, "four\n", string(buf[:n]))

	_, err = f.WriteString("last\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	env.src.stopped.Store(true)
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "the response ends once the run has")
	assert.Equal(t, "last\n", string(rest))
}

// TestIndexIsServedAtTheRootOnly: Options.Index answers GET and HEAD of / exactly; every other
// unknown path is still a 404, other methods a 405; without an Index, / is a 404 too.
func TestIndexIsServedAtTheRootOnly(t *testing.T) {
	env := newEnv(t)
	index := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "the status page") })
	base, _ := env.start(t, Options{Source: env.src, Metrics: env.reg, Probes: env.reg, Index: index})
	bare, _ := env.start(t, Options{})
	for _, tc := range []struct {
		base, method, path string
		code               int
		contains           string
	}{
		{base, http.MethodGet, "/", http.StatusOK, "the status page"},
		{base, http.MethodHead, "/", http.StatusOK, ""},
		{base, http.MethodPost, "/", http.StatusMethodNotAllowed, "read-only"},
		{base, http.MethodGet, "/index.html", http.StatusNotFound, "/ (status page), /pods"},
		{base, http.MethodGet, "/nope/", http.StatusNotFound, "404 page not found"},
		{bare, http.MethodGet, "/", http.StatusNotFound, "404 page not found"},
	} {
		req, err := http.NewRequest(tc.method, tc.base+tc.path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, tc.code, resp.StatusCode, "%s %s", tc.method, tc.path)
		assert.Contains(t, string(body), tc.contains, "%s %s", tc.method, tc.path)
	}
}

// Server is one of node's lifecycle parts, one that can fail on its own.
var (
	_ lifecycle.Component = (*Server)(nil)
	_ lifecycle.Failing   = (*Server)(nil)
)

// Start needs the listener node bound; without one it fails and nothing serves.
func TestStartNeedsAListener(t *testing.T) {
	srv := New(Options{})
	require.ErrorIs(t, srv.Start(context.Background()), ErrNoListener)
	require.NoError(t, srv.Stop(context.Background()))
}

// A listener that fails while the server runs is reported once on Failed; Stop then still
// returns cleanly.
func TestFailedReportsTheListenerFailing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := New(Options{Listener: ln, Source: newEnv(t).src})
	require.NoError(t, srv.Start(context.Background()))
	require.NoError(t, ln.Close()) // what a lost interface does to Accept
	select {
	case err := <-srv.Failed():
		assert.ErrorContains(t, err, "serve "+ln.Addr().String())
	case <-time.After(10 * time.Second): // a bound on a failure, not a wait for success
		t.Fatal("the listener's failure was not reported")
	}
	require.NoError(t, srv.Stop(context.Background()))
	select {
	case err := <-srv.Failed():
		t.Fatalf("a second failure: %v", err)
	default:
	}
}

// Stop waits for a running request only until its ctx ends, then cuts it and says so; a clean
// Stop's http.ErrServerClosed is no error.
func TestStopIsBoundedByItsContext(t *testing.T) {
	env := newEnv(t)
	entered, release := make(chan struct{}), make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := New(Options{Listener: ln, Source: env.src, Index: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		close(entered)
		<-release // a handler that ignores its request's context
	})})
	require.NoError(t, srv.Start(context.Background()))
	got := make(chan error, 1)
	go func() { // ends when the request is answered or cut
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err == nil {
			resp.Body.Close()
		}
		got <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = srv.Stop(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "requests still running")
	assert.Error(t, <-got, "the request was cut")
	close(release)
	http.DefaultClient.CloseIdleConnections()
}
