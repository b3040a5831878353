package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeLogsNode serves two pods labelled app=web: web (init container setup; app containers app
// and side) and web-2 (app); each container's log is "<container> says hi\n" (web's) or
// "<pod>/<container> says hi\n" (another pod's), and it records every /containerLogs query by
// container (web's) or pod/container (another pod's).
type fakeLogsNode struct {
	mu      sync.Mutex
	queries map[string]string
}

func (f *fakeLogsNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	labels := map[string]string{"app": "web"}
	pods := []v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: labels}, Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "setup"}},
			Containers:     []v1.Container{{Name: "app"}, {Name: "side"}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: "default", Labels: labels}, Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "app"}},
		}},
	}
	switch {
	case r.URL.Path == "/pods":
		_ = json.NewEncoder(w).Encode(v1.PodList{Items: pods})
	case strings.HasPrefix(r.URL.Path, "/containerLogs/default/"):
		pc := strings.TrimPrefix(r.URL.Path, "/containerLogs/default/")
		key := strings.TrimPrefix(pc, "web/")
		f.mu.Lock()
		f.queries[key] = r.URL.RawQuery
		f.mu.Unlock()
		fmt.Fprintf(w, "%s says hi\n", key)
	default:
		http.NotFound(w, r)
	}
}

// runClient runs node's client command (logs, get, events, wait...) with args against the API at
// srv, and returns its exit code, stdout and stderr.
func runClient(t *testing.T, command, srv string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := dispatch(append(append([]string{command}, args...), "--server", srv), nil, &out, &errOut)
	return code, out.String(), errOut.String()
}

// `node logs` chooses the container as kubectl 1.37 does and sends kubelet's query parameters.
func TestLogsIsKubectlLogs(t *testing.T) {
	node := &fakeLogsNode{queries: map[string]string{}}
	ts := httptest.NewServer(node)
	defer ts.Close()
	srv := strings.TrimPrefix(ts.URL, "http://")

	code, out, errOut := runClient(t, "logs", srv, "web")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "app says hi\n", out)
	assert.Equal(t, "Defaulted container \"app\" out of: app, side, setup (init)\n", errOut)

	code, out, errOut = runClient(t, "logs", srv, "web", "side")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "side says hi\n", out, "an inline CONTAINER, as kubectl logs POD CONTAINER")
	assert.Empty(t, errOut)

	code, out, errOut = runClient(t, "logs", srv, "web", "-c", "nope")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "error: container nope is not valid for pod web out of: app, side, setup (init)\n", errOut)

	code, out, errOut = runClient(t, "logs", srv, "web", "--all-containers", "--prefix")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "[pod/web/setup] setup says hi\n[pod/web/app] app says hi\n[pod/web/side] side says hi\n", out)

	code, _, errOut = runClient(t, "logs", srv, "web", "-c", "app", "-p", "--tail", "3", "--since", "90500ms", "--limit-bytes", "10")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "limitBytes=10&previous=true&sinceSeconds=91&tailLines=3", node.queries["app"])

	code, _, errOut = runClient(t, "logs", srv, "web", "side", "--since-time", "2026-01-02T15:04:05.5+01:00")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "sinceTime=2026-01-02T14%3A04%3A05Z", node.queries["side"])

	code, out, errOut = runClient(t, "logs", srv, "-l", "app=web")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "app says hi\nweb-2/app says hi\n", out, "every pod the selector picks, each its default container")
	assert.Equal(t, "Defaulted container \"app\" out of: app, side, setup (init)\n", errOut)
	assert.Equal(t, "tailLines=10", node.queries["web-2/app"], "kubectl's --tail with a selector")

	code, out, errOut = runClient(t, "logs", srv, "-l", "app=web", "--tail", "-1", "--all-containers", "--prefix")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "[pod/web/setup] setup says hi\n[pod/web/app] app says hi\n[pod/web/side] side says hi\n[pod/web-2/app] web-2/app says hi\n", out)
	assert.Empty(t, node.queries["web-2/app"], "--tail -1 given: every line")

	code, out, errOut = runClient(t, "logs", srv, "-l", "app=web", "--all-containers", "-f", "--max-log-requests", "3")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "error: you are attempting to follow 4 log streams, but maximum allowed concurrency is 3, use --max-log-requests to increase the limit\n", errOut)

	code, out, errOut = runClient(t, "logs", srv, "-l", "app=db")
	assert.Equal(t, 0, code)
	assert.Empty(t, out)
	assert.Equal(t, "No resources found in default namespace.\n", errOut)

	code, out, errOut = runClient(t, "logs", srv, "nope")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "Error from server (NotFound): pods \"nope\" not found\n", errOut)

	code, out, errOut = runClient(t, "logs", "127.0.0.1:1", "web")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "cannot reach node")
}

// `node logs --all-containers -f` follows every container at once, as kubectl does, and writes
// whole lines: two streams whose lines arrive in halves never interleave within a line.
func TestLogsFollowsAllContainersAtOnce(t *testing.T) {
	opened := make(chan struct{}, 3)
	release := make(chan struct{})
	halves := newBarrier(3)
	node := &fakeLogsNode{queries: map[string]string{}}
	mux := http.NewServeMux()
	mux.Handle("/pods", node)
	mux.HandleFunc("/containerLogs/default/web/{c}", func(w http.ResponseWriter, r *http.Request) {
		c := r.PathValue("c")
		opened <- struct{}{}
		select { // every stream must be open before any writes: a sequential client never gets here thrice
		case <-release:
		case <-time.After(30 * time.Second):
			http.Error(w, "the streams were not followed at once", http.StatusInternalServerError)
			return
		}
		fl := w.(http.Flusher)
		for i := range 20 {
			fmt.Fprintf(w, "%s line ", c)
			fl.Flush()
			halves.arrive(i) // every stream has sent half of line i before any sends the rest
			fmt.Fprintf(w, "%d\n", i)
			fl.Flush()
		}
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	go func() {
		for range 3 {
			<-opened
		}
		close(release)
	}()

	code, out, errOut := runClient(t, "logs", strings.TrimPrefix(ts.URL, "http://"), "web", "--all-containers", "-f")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 60)
	var want []string
	for _, c := range []string{"setup", "app", "side"} {
		for i := range 20 {
			want = append(want, fmt.Sprintf("%s line %d", c, i))
		}
	}
	sort.Strings(want)
	sort.Strings(lines)
	assert.Equal(t, want, lines)
}

// barrier lets n goroutines wait for each other at each numbered point.
type barrier struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n       int
	arrived map[int]int
}

func newBarrier(n int) *barrier {
	b := &barrier{n: n, arrived: map[int]int{}}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *barrier) arrive(point int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.arrived[point]++
	b.cond.Broadcast()
	for b.arrived[point] < b.n {
		b.cond.Wait()
	}
}

// `node logs --all-containers -f` ends every stream at the first error, as kubectl does, rather
// than following the others with the error unsaid.
func TestLogsFollowEndsAtTheFirstError(t *testing.T) {
	node := &fakeLogsNode{queries: map[string]string{}}
	mux := http.NewServeMux()
	mux.Handle("/pods", node)
	mux.HandleFunc("/containerLogs/default/web/{c}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("c") == "side" {
			http.Error(w, `no log for container "side" yet`, http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, "%s line\n", r.PathValue("c"))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a follow that never ends by itself
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	code, _, errOut := runClient(t, "logs", strings.TrimPrefix(ts.URL, "http://"), "web", "--all-containers", "-f")
	assert.Equal(t, 1, code)
	assert.Equal(t, "error: 404 Not Found: no log for container \"side\" yet\n", errOut)
}

// A fleet aggregator keeps no logs: node logs against one says so, and names the node that runs
// the pod, rather than a bare 404.
func TestLogsFromAFleetAggregatorNamesTheNode(t *testing.T) {
	srv := fakeAPI(t, true)
	var out, errOut bytes.Buffer
	assert.Equal(t, 1, dispatch([]string{"logs", "web", "--server", srv.URL}, nil, &out, &errOut))
	assert.Empty(t, out.String())
	assert.Equal(t, "error: "+srv.URL+" is a fleet aggregator, which keeps no container logs: ask the node that runs the pod "+
		"(default/web runs on n1), node logs POD --server <that node's --listen>\n", errOut.String())
}
