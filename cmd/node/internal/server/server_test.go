package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeSource struct {
	pods []v1.Pod
	logs map[string]string // "<uid>/<container>/<previous>" → path
}

func (f *fakeSource) Pods(context.Context) ([]v1.Pod, error) { return f.pods, nil }
func (f *fakeSource) Events() v1.EventList {
	return v1.EventList{Items: []v1.Event{{Reason: "Unhealthy", Count: 3}}}
}
func (f *fakeSource) LogPath(uid types.UID, c string, prev bool) (string, error) {
	key := string(uid) + "/" + c
	if prev {
		key += "/previous"
	}
	p, ok := f.logs[key]
	if !ok {
		return "", errors.New(`container "` + c + `" is not valid for pod`)
	}
	return p, nil
}

func newTestServer(t *testing.T) *httptest.Server {
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
	srv := httptest.NewServer(New(Options{Source: src, Metrics: reg, Probes: reg}))
	t.Cleanup(srv.Close)
	return srv
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
	srv := newTestServer(t)
	cases := []struct {
		path     string
		code     int
		contains string
	}{
		{"/healthz", 200, "ok"},
		{"/pods", 200, `"kind": "PodList"`},
		{"/pods/default/web", 200, `"phase": "Running"`},
		{"/pods/default/nope", 404, "pod default/nope not found"},
		{"/events", 200, `"reason": "Unhealthy"`},
		{"/metrics", 200, `prober_probe_total{probe_type="Liveness"} 1`},
		{"/metrics/probes", 200, `prober_probe_total`},
		{"/containerLogs/default/web/app", 200, "one\ntwo\nthree\n"},
		{"/containerLogs/default/web/app?tailLines=2", 200, "two\nthree\n"},
		{"/containerLogs/default/web/app?tailLines=0", 200, ""},
		{"/containerLogs/default/web/app?limitBytes=5", 200, "one\nt"},
		{"/containerLogs/default/web/app?previous=true", 200, "before\n"},
		{"/containerLogs/default/web/app?tailLines=-1", 400, "tailLines"},
		{"/containerLogs/default/web/app?previous=maybe", 400, "previous"},
		{"/containerLogs/default/web/app?since=1", 400, `unsupported query parameter "since"`},
		{"/containerLogs/default/web/nope", 400, `container "nope" is not valid`},
		{"/containerLogs/default/nope/app", 404, "not found"},
		{"/nothing", 404, "try /pods"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			code, body := get(t, srv.URL+tc.path)
			assert.Equal(t, tc.code, code, body)
			if tc.contains == "" {
				assert.Empty(t, body)
			} else {
				assert.Contains(t, body, tc.contains)
			}
		})
	}
	resp, err := http.Post(srv.URL+"/pods", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestPodsDecodeAsAPodList(t *testing.T) {
	srv := newTestServer(t)
	_, body := get(t, srv.URL+"/pods")
	var list v1.PodList
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Items, 1)
	assert.Equal(t, "web", list.Items[0].Name)
}
