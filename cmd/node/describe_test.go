package main

import (
	"bytes"
	"encoding/json"
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

	"github.com/probeactor/probeactor/fleet/aggregator"
	"github.com/probeactor/probeactor/internal/describe"
)

func describedPod(node string) v1.Pod {
	return v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "app", LivenessProbe: &v1.Probe{
			ProbeHandler:   v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080), Scheme: v1.URISchemeHTTP}},
			TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, HostIP: "127.0.0.1", ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "proc://1",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}}
}

// fakeAPI answers node describe's requests as a node (probes) or a fleet aggregator (results).
func fakeAPI(t *testing.T, fleet bool) *httptest.Server {
	writeJSON := func(w http.ResponseWriter, v any) { require.NoError(t, json.NewEncoder(w).Encode(v)) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fleet {
			w.Header().Set(aggregator.ServerHeader, aggregator.ServerName)
		}
		switch r.URL.Path {
		case "/pods":
			writeJSON(w, v1.PodList{Items: []v1.Pod{describedPod("n1"),
				{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default", Labels: map[string]string{"app": "other"}}},
				{ObjectMeta: metav1.ObjectMeta{Name: "webhook", Namespace: "default"}},
				{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod"}}}})
		case "/events":
			writeJSON(w, v1.EventList{Items: []v1.Event{{InvolvedObject: v1.ObjectReference{Namespace: "default", Name: "web"},
				Type: "Normal", Reason: "Started", Message: "Container started", Count: 1, LastTimestamp: metav1.NewTime(time.Now())}}})
		case "/probes/default/other", "/probes/default/webhook", "/probes/prod/web":
			require.False(t, fleet, "an aggregator has no /probes")
			writeJSON(w, describe.List{})
		case "/probes/default/web":
			require.False(t, fleet, "an aggregator has no /probes")
			writeJSON(w, describe.List{Items: []describe.Probe{{Container: "app", Type: "Liveness", Live: true, Published: "Success",
				Streak: 2, StreakResult: "Failure", LastResult: "Failure", LastAt: time.Now(), Running: true, Started: true}}})
		case "/results":
			require.True(t, fleet, "a node describe needs no /results")
			writeJSON(w, aggregator.ResultList{Items: []aggregator.Result{
				{Node: "n1", PodUID: "u1", Container: "app", Type: "Liveness", ContainerID: "proc://1", Result: "Success"},
				{Node: "n2", PodUID: "u1", Container: "app", Type: "Liveness", ContainerID: "proc://9", Result: "Failure"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestDescribeFromANode(t *testing.T) {
	srv := fakeAPI(t, false)
	var out, errOut bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"describe", "pod", "web", "--server", srv.URL}, nil, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "Liveness:       http-get http://:8080/healthz delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3\n")
	assert.Contains(t, out.String(), "failing 2/3, last Failure 0s ago; restarts in ≤ ")
	assert.Contains(t, out.String(), "Container started")

	out.Reset()
	require.Equal(t, 0, dispatch([]string{"describe", "pod", "web", "--server", srv.URL, "-o", "json"}, nil, &out, &errOut), errOut.String())
	var doc describe.Document
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	assert.Equal(t, "PodDescription", doc.Kind)
	require.Len(t, doc.Next, 1)
	assert.Equal(t, "failing 2/3", doc.Next[0].Streak)
	assert.Len(t, doc.Events, 1)
}

func TestDescribeFromAFleetAggregator(t *testing.T) {
	srv := fakeAPI(t, true)
	var out, errOut bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"describe", "pod", "web", "--server", srv.URL}, nil, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "Node:         n1/127.0.0.1\n")
	assert.Contains(t, out.String(), "Liveness:       http-get http://:8080/healthz delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3\n",
		"the aggregator's pods carry their probes")
	assert.Contains(t, out.String(), "published Success on node n1", "the result n1 published, not n2's")
	assert.NotContains(t, out.String(), "on node n2")
}

func TestDescribeErrors(t *testing.T) {
	srv := fakeAPI(t, false)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"describe"}, 2, "only pods can be described: `node describe pod[s] [NAME...]` or `node describe pod/NAME...`"},
		{[]string{"describe", "deployment", "web"}, 2, "only pods can be described"},
		{[]string{"describe", "pod/web", "deployment/web"}, 2, `"deployment/web": only pods can be described`},
		{[]string{"describe", "pod", "web", "-o", "yaml"}, 2, `-o "yaml": only json is supported`},
		{[]string{"describe", "pod", "web", "-l", "app=web"}, 2, "selectors and the all flag cannot be used when passing resource/name arguments"},
		{[]string{"describe", "pod", "web", "-A"}, 2, "a resource cannot be retrieved by name across all namespaces"},
		{[]string{"describe", "pods", "-l", "app in (", "--server", srv.URL}, 2, `-l "app in (": `},
		{[]string{"describe", "pod", "nope", "--server", srv.URL}, 1, `Error from server (NotFound): pods "nope" not found`},
		{[]string{"describe", "pod", "other", "web", "nope", "-n", "prod", "--server", srv.URL}, 1, `Error from server (NotFound): pods "other" not found` + "\n" +
			`Error from server (NotFound): pods "nope" not found`},
		{[]string{"describe", "pod", "web", "--server", "127.0.0.1:1"}, 1, "cannot reach node at http://127.0.0.1:1"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, tc.code, dispatch(tc.args, nil, &out, &errOut), "%v", tc.args)
		assert.Contains(t, errOut.String(), tc.want, "%v", tc.args)
		_, _ = io.Copy(io.Discard, &out)
	}
}

// kubectl describe's ways to name pods: none (every pod in the namespace, or -A), -l, pod/NAME,
// several names, and one name that matches no pod standing for the pods whose names begin with
// it. Several pods are described without their events unless --show-events is given.
func TestDescribeSelectsAsKubectl(t *testing.T) {
	srv := fakeAPI(t, false)
	describeNames := func(args ...string) (int, []string, string) {
		var out, errOut bytes.Buffer
		code := dispatch(append(append([]string{"describe"}, args...), "--server", srv.URL), nil, &out, &errOut)
		var names []string
		for _, l := range strings.Split(out.String(), "\n") {
			if name, ok := strings.CutPrefix(l, "Name:"); ok {
				names = append(names, strings.TrimSpace(name))
			}
		}
		return code, names, out.String() + errOut.String()
	}
	code, names, out := describeNames("pods")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, []string{"web", "other", "webhook"}, names, "every pod of the default namespace")
	assert.NotContains(t, out, "Events:", "several pods: no events")
	assert.Contains(t, out, "\n\n\nName:", "kubectl's separator")

	code, names, out = describeNames("pods", "--show-events")
	assert.Equal(t, 0, code, out)
	assert.Len(t, names, 3)
	assert.Contains(t, out, "Container started", "--show-events given: events for each")

	code, names, out = describeNames("pods", "-A")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, []string{"web", "other", "webhook", "web"}, names)

	code, names, out = describeNames("po", "-l", "app=other")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, []string{"other"}, names)
	assert.Contains(t, out, "Events:", "one pod: its events")

	code, names, out = describeNames("pod/other", "pod/web")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, []string{"other", "web"}, names, "in the order given")

	code, names, out = describeNames("pod", "webh")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, []string{"webhook"}, names, "no pod is named webh: the pods whose names begin with it")

	code, names, out = describeNames("pod", "we")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, []string{"web", "webhook"}, names)

	code, names, out = describeNames("pods", "-n", "empty")
	assert.Equal(t, 0, code, out)
	assert.Empty(t, names)
	assert.Equal(t, "No resources found in empty namespace.\n", out)
}
