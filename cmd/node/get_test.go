package main

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// fakeLister serves /pods (four pods in two namespaces) and /nodes (two nodes) as node and a
// fleet aggregator do.
func fakeLister(t *testing.T) string {
	created := metav1.NewTime(time.Now().Add(-30 * time.Hour)) // "30h" for an hour, however slow the run
	pod := func(ns, name string, l map[string]string) v1.Pod {
		return v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l, CreationTimestamp: created},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}, Status: v1.PodStatus{Phase: v1.PodRunning}}
	}
	pods := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []v1.Pod{
		pod("default", "web", map[string]string{"app": "web"}),
		pod("default", "db", map[string]string{"app": "db"}),
		pod("prod", "web", map[string]string{"app": "web", "tier": "front"}),
		pod("prod", "cache", nil),
	}}
	nodes := v1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: []v1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}, CreationTimestamp: created}},
		{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{"zone": "b"}, CreationTimestamp: created}},
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pods", func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(pods) })
	mux.HandleFunc("GET /nodes", func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(nodes) })
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return strings.TrimPrefix(ts.URL, "http://")
}

// rows are a table's lines, each collapsed to single spaces, without the header.
func rows(table string) []string {
	var out []string
	for i, l := range strings.Split(strings.TrimSpace(table), "\n") {
		if i > 0 {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return out
}

// `node get` selects by name, namespace and label selector, and prints kubectl's formats.
func TestGetIsKubectlGet(t *testing.T) {
	srv := fakeLister(t)

	code, out, errOut := runClient(t, "get", srv, "pods")
	require.Equal(t, 0, code, errOut)
	assert.Len(t, rows(out), 4, "no -n: every namespace")

	code, out, errOut = runClient(t, "get", srv, "pods", "web")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"web 0/1 Running 0 30h"}, rows(out), "a name: in the default namespace")

	code, out, errOut = runClient(t, "get", srv, "pod", "web", "nope", "-n", "prod")
	assert.Equal(t, 1, code)
	assert.Equal(t, []string{"web 0/1 Running 0 30h"}, rows(out))
	assert.Equal(t, "Error from server (NotFound): pods \"nope\" not found\n", errOut)

	code, out, errOut = runClient(t, "get", srv, "pods", "web", "nope", "--ignore-not-found", "--no-headers")
	assert.Equal(t, 0, code)
	assert.Equal(t, "web   0/1   Running   0     30h\n", out, "no header; nope is no error")
	assert.Empty(t, errOut)

	code, out, errOut = runClient(t, "get", srv, "pods", "nope", "--ignore-not-found")
	assert.Equal(t, 0, code)
	assert.Empty(t, out)
	assert.Empty(t, errOut, "kubectl prints nothing at all")

	code, out, errOut = runClient(t, "get", srv, "pods", "-l", "app=web", "-A", "--show-labels")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"default web 0/1 Running 0 30h app=web", "prod web 0/1 Running 0 30h app=web,tier=front"}, rows(out))
	assert.Regexp(t, `^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+LABELS\n`, out)

	code, out, errOut = runClient(t, "get", srv, "pods", "--selector", "!app")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"cache 0/1 Running 0 30h"}, rows(out))

	code, out, errOut = runClient(t, "get", srv, "pods", "-n", "prod", "-l", "app=nope")
	assert.Equal(t, 0, code)
	assert.Empty(t, out)
	assert.Equal(t, "No resources found in prod namespace.\n", errOut)

	code, out, errOut = runClient(t, "get", srv, "pods", "--field-selector", "metadata.namespace=prod,metadata.name!=web")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"cache 0/1 Running 0 30h"}, rows(out))

	code, out, errOut = runClient(t, "get", srv, "pods", "--field-selector", "status.phase!=Running")
	assert.Equal(t, 0, code)
	assert.Empty(t, out)
	assert.Equal(t, "No resources found\n", errOut)

	code, out, errOut = runClient(t, "get", srv, "nodes", "--field-selector", "metadata.name=n2", "-o", "name")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "node/n2\n", out)

	code, out, errOut = runClient(t, "get", srv, "pods", "-o", "name", "-n", "prod")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "pod/web\npod/cache\n", out)

	code, out, errOut = runClient(t, "get", srv, "pods", "web", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var one v1.Pod
	require.NoError(t, json.Unmarshal([]byte(out), &one))
	assert.Equal(t, "Pod", one.Kind, "one name: the object itself, typed")
	assert.Equal(t, "v1", one.APIVersion)
	assert.Equal(t, "default", one.Namespace)

	code, out, errOut = runClient(t, "get", srv, "pods", "-o", "yaml", "-l", "app")
	require.Equal(t, 0, code, errOut)
	var list v1.PodList
	require.NoError(t, yaml.UnmarshalStrict([]byte(out), &list))
	assert.Equal(t, "PodList", list.Kind)
	assert.Len(t, list.Items, 3)

	code, out, errOut = runClient(t, "get", srv, "pods", "-l", "app=nope", "-o", "json")
	require.Equal(t, 0, code, errOut)
	assert.JSONEq(t, `{"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": []}`, out, "an empty list, as the API server gives")

	code, out, errOut = runClient(t, "get", srv, "pods", "-n", "prod", "-o", "jsonpath={range .items[*]}{.metadata.name}={.metadata.labels.tier}{\"\\n\"}{end}")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "web=front\ncache=\n", out, "kubectl's jsonpath, a missing key empty")

	code, out, errOut = runClient(t, "get", srv, "pods", "web", "-o", "jsonpath={.kind}/{.metadata.namespace}")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "Pod/default", out, "one NAME: the object itself; no newline after, as kubectl's")

	code, out, errOut = runClient(t, "get", srv, "pods", "-A", "-o", "custom-columns=NAME:.metadata.name,TIER:metadata.labels.tier,PHASE:{.status.phase}")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, ""+
		"NAME    TIER     PHASE\n"+
		"web     <none>   Running\n"+
		"db      <none>   Running\n"+
		"web     front    Running\n"+
		"cache   <none>   Running\n", out)

	code, out, errOut = runClient(t, "get", srv, "pods", "-A", "--sort-by", ".metadata.name", "-o", "name")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "pod/cache\npod/db\npod/web\npod/web\n", out)

	code, out, errOut = runClient(t, "get", srv, "pods", "-A", "--sort-by", "{.metadata.labels.tier}", "-o", "custom-columns=NS:.metadata.namespace,NAME:.metadata.name")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"default web", "default db", "prod cache", "prod web"}, rows(out), "pods without the field first, in list order")

	code, _, errOut = runClient(t, "get", srv, "pods", "--sort-by", ".metadata.labels")
	assert.Equal(t, 1, code)
	assert.Equal(t, "error: field {.metadata.labels} is an unsortable type: map[string]interface {}\n", errOut)

	code, out, errOut = runClient(t, "get", srv, "nodes", "n2", "-o", "name")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "node/n2\n", out)

	code, out, errOut = runClient(t, "get", srv, "nodes", "-l", "zone=a", "--show-labels")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"n1 Unknown 30h zone=a"}, rows(out))

	code, _, errOut = runClient(t, "get", srv, "nodes", "n3")
	assert.Equal(t, 1, code)
	assert.Equal(t, "Error from server (NotFound): nodes \"n3\" not found\n", errOut)
}

// fakeSequence serves path from bodies, one per request, then 503s: what a node that stops
// looks like to a watch.
func fakeSequence(t *testing.T, path string, bodies ...any) string {
	var mu sync.Mutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) == 0 {
			http.Error(w, "node is stopping", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(bodies[0])
		bodies = bodies[1:]
	}))
	t.Cleanup(ts.Close)
	return strings.TrimPrefix(ts.URL, "http://")
}

// `node get pods -w` prints the list, then a row for each pod whose status changed or that
// appeared, then the last row of each that went, in the first rows' column widths; a read that
// fails ends it.
func TestGetWatch(t *testing.T) {
	saved := watchPollInterval
	watchPollInterval = time.Millisecond
	defer func() { watchPollInterval = saved }()
	created := metav1.NewTime(time.Now().Add(-30 * time.Hour))
	pod := func(name string, ready bool) v1.Pod {
		p := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, CreationTimestamp: created},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "c", Ready: ready,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}}
		if ready {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		}
		return p
	}
	list := func(pods ...v1.Pod) v1.PodList { return v1.PodList{Items: pods} }
	lists := []any{
		list(pod("web", false)),
		list(pod("web", false)), // nothing changed: no row
		list(pod("web", true), pod("a-much-longer-pod-name", false)), // web ready, a new pod
		list(pod("web", true), pod("other", false)),                  // the long one went; other came
	}
	code, out, errOut := runClient(t, "get", fakeSequence(t, "/pods", lists...), "pods", "-w", "-l", "!skip")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "503 Service Unavailable: node is stopping")
	assert.Equal(t, ""+ // columns widen for a longer name in the same read, and stay wide, as kubectl's do
		"NAME   READY   STATUS    RESTARTS   AGE\n"+
		"web    0/1     Running   0          30h\n"+
		"web                      1/1     Running   0          30h\n"+
		"a-much-longer-pod-name   0/1     Running   0          30h\n"+
		"other                    0/1     Running   0          30h\n"+
		"a-much-longer-pod-name   0/1     Running   0          30h\n", out)

	code, out, _ = runClient(t, "get", fakeSequence(t, "/pods", lists...), "pods", "-w", "-o", "name")
	assert.Equal(t, 1, code)
	assert.Equal(t, "pod/web\npod/web\npod/a-much-longer-pod-name\npod/other\npod/a-much-longer-pod-name\n", out)

	code, _, errOut = runClient(t, "get", "127.0.0.1:1", "pods", "-w", "-o", "json")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "-w prints rows (the table, -o wide or -o name), not -o json")
}

// A watch prints, after each read, the objects that are new or whose version changed, in the
// read's order, then (for `node get -w`, not `node events -w`) the last row of each that went, in
// key order; what it remembers is the read's objects only, so one that went and comes back is new.
// Rows here are "KEY@VERSION#NOTE" (the note neither key nor version).
func TestDiffRows(t *testing.T) {
	key := func(r *string) string { k, _, _ := strings.Cut(*r, "@"); return k }
	version := func(r *string) string { _, v, _ := strings.Cut(*r, "@"); v, _, _ = strings.Cut(v, "#"); return v }
	for _, tc := range []struct {
		name      string
		printGone bool
		reads     [][]string
		want      [][]string // what each read prints: the first, against nothing remembered
	}{
		{name: "first read: everything, in the read's order", printGone: true,
			reads: [][]string{{"b@1", "a@1", "c@1"}},
			want:  [][]string{{"b@1", "a@1", "c@1"}}},
		{name: "empty reads", printGone: true,
			reads: [][]string{nil, {}},
			want:  [][]string{nil, nil}},
		{name: "unchanged: nothing, whatever the order", printGone: true,
			reads: [][]string{{"a@1", "b@1"}, {"a@1", "b@1"}, {"b@1", "a@1"}},
			want:  [][]string{{"a@1", "b@1"}, nil, nil}},
		{name: "only the changed row; its note alone is no change", printGone: true,
			reads: [][]string{{"a@1", "b@1", "c@1"}, {"a@1#x", "b@2", "c@1"}},
			want:  [][]string{{"a@1", "b@1", "c@1"}, {"b@2"}}},
		{name: "new and changed rows in the read's order", printGone: true,
			reads: [][]string{{"a@1", "m@1"}, {"z@1", "m@2", "a@1", "b@1"}},
			want:  [][]string{{"a@1", "m@1"}, {"z@1", "m@2", "b@1"}}},
		{name: "gone: after the changes, in key order", printGone: true,
			reads: [][]string{{"c@1", "a@1", "d@1", "b@1"}, {"d@2", "e@1"}},
			want:  [][]string{{"c@1", "a@1", "d@1", "b@1"}, {"d@2", "e@1", "a@1", "b@1", "c@1"}}},
		{name: "gone: its last row, once", printGone: true,
			reads: [][]string{{"a@1"}, {"a@2#last"}, {}, {}},
			want:  [][]string{{"a@1"}, {"a@2#last"}, {"a@2#last"}, nil}},
		{name: "comes back: new again, though its version is the one it went with", printGone: true,
			reads: [][]string{{"a@1"}, {}, {"a@1"}},
			want:  [][]string{{"a@1"}, {"a@1"}, {"a@1"}}},
		{name: "without printGone: gone is not printed but forgotten",
			reads: [][]string{{"a@1", "b@1"}, {"b@1"}, {"b@1", "a@1"}},
			want:  [][]string{{"a@1", "b@1"}, nil, {"a@1"}}},
		{name: "a key twice with one version: printed once, the last remembered", printGone: true,
			reads: [][]string{{"a@1#first", "a@1#second"}, {}},
			want:  [][]string{{"a@1#first"}, {"a@1#second"}}},
		{name: "a key twice with two versions: both, at every read", printGone: true,
			reads: [][]string{{"a@1", "a@2"}, {"a@1", "a@2"}, {"a@2"}},
			want:  [][]string{{"a@1", "a@2"}, {"a@1", "a@2"}, nil}},
		{name: "a new row with the empty version is taken for unchanged", printGone: true,
			reads: [][]string{{"a@"}, {"a@1"}, {"a@"}, {}},
			want:  [][]string{nil, {"a@1"}, {"a@"}, {"a@"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, tc.want, len(tc.reads))
			var last map[string]watched[string]
			for i, read := range tc.reads {
				before := maps.Clone(last)
				got, next := diffRows(last, read, key, version, tc.printGone)
				if len(tc.want[i]) == 0 {
					assert.Empty(t, got, "read %d", i)
				} else {
					assert.Equal(t, tc.want[i], got, "read %d", i)
				}
				assert.Equal(t, before, last, "read %d: what was remembered is not changed", i)
				last = next
			}
		})
	}
}
