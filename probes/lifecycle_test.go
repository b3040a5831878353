package probes

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestValidateLifecycle: the API server's rules for postStart and preStop (1.37), with its texts.
func TestValidateLifecycle(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	exec := &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}
	for _, tc := range []struct {
		name string
		spec v1.PodSpec
		want []string
	}{
		{name: "every handler", spec: v1.PodSpec{TerminationGracePeriodSeconds: ptrTo(int64(30)), Containers: []v1.Container{
			{Name: "a", Lifecycle: &v1.Lifecycle{PostStart: exec, PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 30}}}},
			{Name: "b", Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromString("http"), Scheme: v1.URISchemeHTTP}}}},
			{Name: "c", Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 0}}}},
		}}},
		{name: "no handler", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{}}}}},
			want: []string{"spec.containers[0].lifecycle.preStop: Required value: must specify a handler type"}},
		{name: "two handlers", spec: v1.PodSpec{TerminationGracePeriodSeconds: ptrTo(int64(30)), Containers: []v1.Container{{Name: "a", Lifecycle: &v1.Lifecycle{
			PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}, Sleep: &v1.SleepAction{Seconds: 1}}}}}},
			want: []string{"spec.containers[0].lifecycle.postStart.sleep: Forbidden: may not specify more than 1 handler type"}},
		{name: "bad handlers", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", Lifecycle: &v1.Lifecycle{
			PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{}},
			PreStop:   &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt(0), Scheme: "FTP"}}}}}},
			want: []string{
				"spec.containers[0].lifecycle.postStart.exec.command: Required value",
				"spec.containers[0].lifecycle.preStop.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
				`spec.containers[0].lifecycle.preStop.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"`,
			}},
		{name: "sleep beyond the grace period", spec: v1.PodSpec{TerminationGracePeriodSeconds: ptrTo(int64(10)), Containers: []v1.Container{{Name: "a",
			Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 11}}}}}},
			want: []string{"spec.containers[0].lifecycle.preStop.sleep: Invalid value: 11: must be non-negative and less than terminationGracePeriodSeconds (10)"}},
		{name: "negative sleep", spec: v1.PodSpec{TerminationGracePeriodSeconds: ptrTo(int64(10)), Containers: []v1.Container{{Name: "a",
			Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: -1}}}}}},
			want: []string{"spec.containers[0].lifecycle.postStart.sleep: Invalid value: -1: must be non-negative and less than terminationGracePeriodSeconds (10)"}},
		{name: "init container", spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i", Lifecycle: &v1.Lifecycle{PreStop: exec}},
			{Name: "s", RestartPolicy: &always, Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{}}}}, Containers: []v1.Container{{Name: "a"}}},
			want: []string{
				"spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always",
				"spec.initContainers[1].lifecycle.preStop: Required value: must specify a handler type",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, errStrings(t, &v1.Pod{Spec: tc.spec}))
		})
	}
}

func TestSetLifecycleDefaults(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", Lifecycle: &v1.Lifecycle{
		PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt(80)}}}}}}}
	SetDefaults(pod)
	assert.Equal(t, &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt(80), Scheme: v1.URISchemeHTTP}, pod.Spec.Containers[0].Lifecycle.PreStop.HTTPGet)
}

// hookTarget is an HTTP server that records the requests it gets and answers code.
type hookTarget struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (h *hookTarget) handler(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.reqs = append(h.reqs, r)
		h.mu.Unlock()
		w.WriteHeader(code)
	}
}

func portOf(t *testing.T, rawURL string) (string, int) {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	n, err := strconv.Atoi(port)
	require.NoError(t, err)
	return host, n
}

// TestHTTPHook: any answer is a success, the status included (kubelet checks none); a request
// that fails is the error; the request is a probe's with kubelet's lifecycle User-Agent, a named
// port resolved; an https hook a server answers in plain HTTP is sent again over http without its
// Authorization header.
func TestHTTPHook(t *testing.T) {
	var target hookTarget
	srv := httptest.NewServer(target.handler(http.StatusInternalServerError))
	defer srv.Close()
	host, port := portOf(t, srv.URL)
	container := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}

	fellBack, err := HTTPHook(context.Background(), &v1.HTTPGetAction{Path: "/drain?now=1", Port: intstr.FromString("http"), Scheme: v1.URISchemeHTTP,
		HTTPHeaders: []v1.HTTPHeader{{Name: "X-Why", Value: "preStop"}}}, container, host)
	require.NoError(t, err, "a 500 is an answer: the hook ran")
	assert.False(t, fellBack)
	target.mu.Lock()
	require.Len(t, target.reqs, 1)
	r := target.reqs[0]
	target.mu.Unlock()
	assert.Equal(t, "/drain?now=1", r.URL.RequestURI())
	assert.Equal(t, "kube-lifecycle/1.37", r.Header.Get("User-Agent"))
	assert.Equal(t, "preStop", r.Header.Get("X-Why"))

	fellBack, err = HTTPHook(context.Background(), &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt(port), Scheme: v1.URISchemeHTTPS,
		HTTPHeaders: []v1.HTTPHeader{{Name: "Authorization", Value: "Bearer x"}}}, container, host)
	require.NoError(t, err)
	assert.True(t, fellBack, "https answered in http: sent again over http")
	target.mu.Lock()
	require.Len(t, target.reqs, 2)
	assert.Empty(t, target.reqs[1].Header.Get("Authorization"), "the retry drops the Authorization header")
	target.mu.Unlock()

	closed := httptest.NewServer(http.NotFoundHandler())
	_, cport := portOf(t, closed.URL)
	closed.Close()
	_, err = HTTPHook(context.Background(), &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt(cport), Scheme: v1.URISchemeHTTP}, container, host)
	assert.ErrorContains(t, err, "connection refused")

	_, err = HTTPHook(context.Background(), &v1.HTTPGetAction{Path: "/", Port: intstr.FromString("nope"), Scheme: v1.URISchemeHTTP}, container, host)
	assert.Error(t, err, "a named port the container does not have")

	tls := httptest.NewTLSServer(target.handler(http.StatusNoContent))
	defer tls.Close()
	thost, tport := portOf(t, tls.URL)
	fellBack, err = HTTPHook(context.Background(), &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt(tport), Scheme: v1.URISchemeHTTPS}, container, thost)
	require.NoError(t, err, "TLS is not verified")
	assert.False(t, fellBack)
}
