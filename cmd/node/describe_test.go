package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
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
			writeJSON(w, v1.PodList{Items: []v1.Pod{describedPod("n1"), {ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default"}}}})
		case "/events":
			writeJSON(w, v1.EventList{Items: []v1.Event{{InvolvedObject: v1.ObjectReference{Namespace: "default", Name: "web"},
				Type: "Normal", Reason: "Started", Message: "Container started", Count: 1, LastTimestamp: metav1.NewTime(time.Now())}}})
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
		{[]string{"describe"}, 2, "only `node describe pod NAME` is supported"},
		{[]string{"describe", "deployment", "web"}, 2, "only `node describe pod NAME` is supported"},
		{[]string{"describe", "pod", "web", "-o", "yaml"}, 2, `-o "yaml": only json is supported`},
		{[]string{"describe", "pod", "nope", "--server", srv.URL}, 1, "pod default/nope not found at " + srv.URL},
		{[]string{"describe", "pod", "web", "-n", "prod", "--server", srv.URL}, 1, "pod prod/web not found"},
		{[]string{"describe", "pod", "web", "--server", "127.0.0.1:1"}, 1, "cannot reach node at http://127.0.0.1:1"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, tc.code, dispatch(tc.args, nil, &out, &errOut), "%v", tc.args)
		assert.Contains(t, errOut.String(), tc.want, "%v", tc.args)
		_, _ = io.Copy(io.Discard, &out)
	}
}
