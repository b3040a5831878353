package statuspage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probeactor/probeactor/messages"
)

type fakeSource struct {
	pods   []v1.Pod
	events []v1.Event
	err    error
}

func (f *fakeSource) Pods(context.Context) ([]v1.Pod, error) { return f.pods, f.err }
func (f *fakeSource) Events() v1.EventList                   { return v1.EventList{Items: f.events} }

func ptr[T any](v T) *T { return &v }

// demoLikePod has one probe of every handler, a sidecar and an init container.
func demoLikePod() v1.Pod {
	return v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{
				{Name: "setup"},
				{Name: "proxy", RestartPolicy: ptr(v1.ContainerRestartPolicyAlways),
					StartupProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9000, Service: ptr("x")}}, PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 3, SuccessThreshold: 1}},
			},
			Containers: []v1.Container{
				{Name: "web", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}, PeriodSeconds: 2, TimeoutSeconds: 1, FailureThreshold: 3, SuccessThreshold: 1},
					ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(6379)}}}},
				{Name: "api",
					ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}}}},
			},
		},
		Status: v1.PodStatus{
			Phase:      v1.PodRunning,
			PodIP:      "127.0.0.1",
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}},
			InitContainerStatuses: []v1.ContainerStatus{
				{Name: "setup", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}},
				{Name: "proxy", Ready: true, Started: ptr(true), State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}},
			},
			ContainerStatuses: []v1.ContainerStatus{
				{Name: "web", Ready: false, Started: ptr(true), RestartCount: 4, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}},
				{Name: "api", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
			},
		},
	}
}

func TestDescribe(t *testing.T) {
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	for _, tc := range []struct {
		name          string
		probe         v1.ProbeHandler
		handler, want string
	}{
		{"http, named port", v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}, "http", "http GET :8080/healthz"},
		{"https with a host", v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Host: "10.0.0.1", Path: "/", Port: intstr.FromInt32(443)}}, "https", "https GET 10.0.0.1:443/"},
		{"unresolved named port", v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("metrics")}}, "http", "http GET :metrics"},
		{"tcp", v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(6379)}}, "tcp", "tcp :6379"},
		{"exec", v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}}, "exec", "exec [cat /tmp/healthy]"},
		{"grpc with a service", v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9000, Service: ptr("x")}}, "grpc", "grpc :9000 service=x"},
		{"grpc without", v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9000}}, "grpc", "grpc :9000"},
		{"none", v1.ProbeHandler{}, "none", "no handler"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, target := describe(&v1.Probe{ProbeHandler: tc.probe}, c)
			assert.Equal(t, tc.handler, h)
			assert.Equal(t, tc.want, target)
		})
	}
}

func TestBuildViewShowsEveryContainerAndProbe(t *testing.T) {
	hist := map[Key]Probe{
		{"u1", "web", messages.Liveness}: {
			Recent:      []Attempt{at(1, Success), at(2, Failure), at(3, Error), at(4, Unknown), at(5, Warning)},
			LastFailure: Attempt{At: t0.Add(4 * time.Second), Outcome: Unknown, Message: ""},
		},
	}
	v := buildView([]v1.Pod{demoLikePod()}, nil, func(k Key) (Probe, bool) { p, ok := hist[k]; return p, ok }, 10, 3*time.Second, t0, Stats{})
	require.Len(t, v.Pods, 1)
	p := v.Pods[0]
	assert.Equal(t, "Running", p.Phase)
	assert.Equal(t, "False", p.Ready)
	var names []string
	for _, c := range p.Containers {
		names = append(names, c.Name+"/"+c.Kind)
	}
	assert.Equal(t, []string{"setup/init", "proxy/sidecar", "web/", "api/"}, names, "init containers first, in spec order")
	web := p.Containers[2]
	assert.Equal(t, int32(4), web.Restarts)
	assert.Equal(t, "true", web.Started)
	assert.Equal(t, "false", web.Ready)
	assert.Equal(t, "waiting CrashLoopBackOff", p.Containers[3].State)
	assert.Equal(t, "terminated Completed (exit 0)", p.Containers[0].State)
	require.Len(t, web.Probes, 2)
	assert.Equal(t, []string{"readiness", "liveness"}, []string{web.Probes[0].Kind, web.Probes[1].Kind})
	live := web.Probes[1]
	assert.Equal(t, "http GET :8080/healthz", live.Target)
	assert.Equal(t, "warning", live.Last)
	assert.Equal(t, "unknown (no output)", live.LastFailure)
	require.Len(t, live.Strip, Depth, "the strip always has Depth cells")
	var classes []string
	for _, c := range live.Strip[Depth-6:] {
		classes = append(classes, c.Class)
	}
	assert.Equal(t, []string{"none", "success", "failure", "error", "unknown", "warning"}, classes, "oldest left, newest right")
	assert.Equal(t, "none", web.Probes[0].Last, "a probe without attempts yet")
	assert.Equal(t, 3, v.Refresh)
}

func serve(t *testing.T, opts Options) *httptest.Server {
	srv := httptest.NewServer(Handler(opts))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (*http.Response, string) {
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

func TestPageRendersPodsProbesAttemptsAndEvents(t *testing.T) {
	r := NewRecorder(func() time.Time { return t0 })
	pod := demoLikePod()
	r.Observe(&pod, v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "web", ContainerID: "proc://w"}}})
	r.mu.Lock()
	for i := range 25 {
		o := Success
		if i%5 == 4 {
			o = Failure
		}
		r.h.Record("proc://w", messages.Liveness, Attempt{At: t0, Outcome: o, Message: "HTTP probe failed with statuscode: 500"})
	}
	r.mu.Unlock()
	src := &fakeSource{pods: []v1.Pod{pod}, events: []v1.Event{{
		InvolvedObject: v1.ObjectReference{Namespace: "default", Name: "demo", FieldPath: "spec.containers{web}"},
		Type:           v1.EventTypeNormal, Reason: "Killing", Message: "Container web failed liveness probe, will be restarted", Count: 1,
		LastTimestamp: metav1.NewTime(t0),
	}}}
	srv := serve(t, Options{Source: src, Attempts: r, Now: func() time.Time { return t0 }})

	resp, body := get(t, srv.URL)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'", "no script, no external asset can load")
	for _, want := range []string{
		`<meta http-equiv="refresh" content="2">`,
		`data-pod="default/demo"`, `data-phase="Running"`,
		`data-container="web" data-restarts="4"`, `data-container="api"`, `data-container="proxy"`,
		`data-probe="liveness" data-handler="http" data-last="failure"`,
		`data-probe="readiness" data-handler="tcp"`, `data-probe="readiness" data-handler="exec"`, `data-probe="startup" data-handler="grpc"`,
		`http GET :8080/healthz`, `tcp :6379`, `exec [cat /tmp/healthy]`, `grpc :9000 service=x`,
		`HTTP probe failed with statuscode: 500`,
		`data-reason="Killing"`, `Container web failed liveness probe, will be restarted`,
	} {
		assert.Contains(t, body, want)
	}
	assert.Equal(t, 20, strings.Count(body, `class="cell success"`)-1, "20 successes in the strip (one more in the legend)")
	assert.Equal(t, 5, strings.Count(body, `class="cell failure"`)-1)
	assert.NotContains(t, body, "<script", "no JavaScript")
	assert.NotContains(t, body, "http://", "no external asset")
	assert.NotContains(t, body, "https://")

	req, err := http.NewRequest(http.MethodHead, srv.URL, nil)
	require.NoError(t, err)
	head, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	head.Body.Close()
	assert.Equal(t, http.StatusOK, head.StatusCode)

	post, err := http.Post(srv.URL, "text/plain", nil)
	require.NoError(t, err)
	post.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, post.StatusCode)
}

// TestPageEscapesEverythingItShows: names, messages and probe output are text, never markup. Pod
// names cannot hold "<" in a valid manifest, but an HTTP probe's body (the failure message) and
// an event message can hold anything.
func TestPageEscapesEverythingItShows(t *testing.T) {
	const evil = `<script>alert(1)</script>"'><img src=x onerror=alert(2)>`
	pod := demoLikePod()
	pod.Name, pod.Namespace = evil, evil
	pod.Spec.Containers[0].Name = evil
	pod.Status.ContainerStatuses[0].Name = evil
	pod.Spec.Containers[1].ReadinessProbe.Exec.Command = []string{evil}
	r := NewRecorder(func() time.Time { return t0 })
	r.Observe(&pod, v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: evil, ContainerID: "proc://w"}}})
	r.mu.Lock()
	r.h.Record("proc://w", messages.Liveness, Attempt{At: t0, Outcome: Failure, Message: evil})
	r.mu.Unlock()
	src := &fakeSource{pods: []v1.Pod{pod}, events: []v1.Event{{Type: evil, Reason: evil, Message: evil,
		InvolvedObject: v1.ObjectReference{Namespace: evil, Name: evil, FieldPath: "spec.containers{" + evil + "}"}}}}
	srv := serve(t, Options{Source: src, Attempts: r})

	_, body := get(t, srv.URL)
	assert.NotContains(t, body, "<script")
	assert.NotContains(t, body, "<img")
	assert.NotContains(t, body, `"'>`)
	assert.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;", "shown as text")
	assert.Greater(t, strings.Count(body, "&lt;script&gt;"), 8, "in the pod, container, command, failure, strip and event")
}

func TestPageOutputIsBounded(t *testing.T) {
	long := strings.Repeat("x", 20<<10)
	var events []v1.Event
	for i := range 1000 {
		events = append(events, v1.Event{Reason: fmt.Sprint("R", i), Message: long, LastTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Second))})
	}
	pod := demoLikePod()
	r := NewRecorder(func() time.Time { return t0 })
	r.Observe(&pod, v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "web", ContainerID: "proc://w"}}})
	r.mu.Lock()
	for range 1000 {
		r.h.Record("proc://w", messages.Liveness, Attempt{At: t0, Outcome: Failure, Message: long})
	}
	r.mu.Unlock()
	srv := serve(t, Options{Source: &fakeSource{pods: []v1.Pod{pod}, events: events}, Attempts: r, MaxEvents: 20})

	_, body := get(t, srv.URL)
	assert.Equal(t, 20, strings.Count(body, `class="event"`), "only MaxEvents events")
	assert.Contains(t, body, `data-reason="R999"`, "the newest first")
	assert.NotContains(t, body, `data-reason="R979"`)
	assert.Equal(t, Depth+1, strings.Count(body, `class="cell failure"`), "Depth cells (and the legend's)")
	assert.NotContains(t, body, strings.Repeat("x", MaxText+1), "no message longer than MaxText")
	assert.Less(t, len(body), 64<<10, "1000 long events and attempts still make a small page")
}

func TestPageFailsCleanlyWhenPodsCannotBeRead(t *testing.T) {
	srv := serve(t, Options{Source: &fakeSource{err: errors.New("pod status of default/web: context deadline exceeded")}, Attempts: NewRecorder(time.Now)})
	resp, body := get(t, srv.URL)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Contains(t, body, "context deadline exceeded")
}
