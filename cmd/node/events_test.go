package main

import (
	"encoding/json"
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
)

func testEvent(ns, name, kind, object, typ, reason string, count int32, ago time.Duration) v1.Event {
	at := metav1.NewTime(time.Now().Add(-ago))
	return v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		InvolvedObject: v1.ObjectReference{Kind: kind, Name: object, APIVersion: "v1"},
		Type:           typ, Reason: reason, Message: reason + " message", Count: count, FirstTimestamp: at, LastTimestamp: at}
}

// fakeEvents serves /events from lists, one per request, then 503s.
func fakeEvents(t *testing.T, lists ...[]v1.Event) string {
	var mu sync.Mutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/events", r.URL.Path)
		mu.Lock()
		defer mu.Unlock()
		if len(lists) == 0 {
			http.Error(w, "node is stopping", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(v1.EventList{Items: lists[0]})
		lists = lists[1:]
	}))
	t.Cleanup(ts.Close)
	return strings.TrimPrefix(ts.URL, "http://")
}

// `node events` selects and prints as kubectl events: oldest first, by namespace, object and type.
func TestEventsIsKubectlEvents(t *testing.T) {
	list := []v1.Event{
		// ages in whole hours: kubectl's human durations of them hold for an hour, however slow the run
		testEvent("default", "a", "Pod", "web", "Warning", "Unhealthy", 3, 20*time.Hour),
		testEvent("default", "b", "Pod", "web", "Normal", "Started", 1, 30*time.Hour),
		testEvent("prod", "c", "Pod", "db", "Normal", "Created", 1, 40*time.Hour),
		testEvent("default", "d", "Node", "n1", "Normal", "NodeReady", 1, 47*time.Hour),
	}
	srv := fakeEvents(t, list, list, list, list, list)

	code, out, errOut := runClient(t, "events", srv)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"47h Normal NodeReady Node/n1 NodeReady message", "30h Normal Started Pod/web Started message",
		"20h (x3 over 20h) Warning Unhealthy Pod/web Unhealthy message"}, rows(out), "the default namespace, oldest first")
	assert.Regexp(t, `^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\n`, out)

	code, out, errOut = runClient(t, "events", srv, "-A", "--types", "normal", "--no-headers")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"default 47h Normal NodeReady Node/n1 NodeReady message", "prod 40h Normal Created Pod/db Created message",
		"default 30h Normal Started Pod/web Started message"}, append([]string{strings.Join(strings.Fields(strings.Split(out, "\n")[0]), " ")}, rows(out)...))

	code, out, errOut = runClient(t, "events", srv, "--for", "pod/web", "--types", "Warning")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"20h (x3 over 20h) Warning Unhealthy Pod/web Unhealthy message"}, rows(out))

	code, out, errOut = runClient(t, "events", srv, "--for", "po/db", "-n", "prod", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var got v1.EventList
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, "EventList", got.Kind)
	require.Len(t, got.Items, 1)
	assert.Equal(t, "c", got.Items[0].Name)

	code, out, errOut = runClient(t, "events", srv, "-n", "empty")
	assert.Equal(t, 0, code)
	assert.Empty(t, out)
	assert.Equal(t, "No events found in empty namespace.\n", errOut)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--for", "web"}, "--for must be in resource/name form"},
		{[]string{"--for", "deployment/web"}, `--for "deployment/web": node's events are about pods and nodes`},
		{[]string{"--types", "Normal,Error"}, "valid --types are Normal or Warning"},
		{[]string{"-o", "wide"}, `-o "wide": use json or yaml`},
		{[]string{"-w", "-o", "json"}, "-w prints the table only"},
		{[]string{"web"}, `unexpected arguments ["web"]`},
	} {
		code, _, errOut := runClient(t, "events", "127.0.0.1:1", tc.args...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

// `node events -w` prints the list, then each event that is new or has repeated since, in
// kubectl's remembered column widths, and ends with an error when the node goes away.
func TestEventsWatch(t *testing.T) {
	saved := watchPollInterval
	watchPollInterval = time.Millisecond
	defer func() { watchPollInterval = saved }()
	first := testEvent("default", "a", "Pod", "web", "Normal", "Started", 1, 30*time.Hour)
	second := testEvent("default", "b", "Pod", "web", "Warning", "Unhealthy", 1, 25*time.Hour)
	repeated := second
	repeated.Count, repeated.LastTimestamp = 2, metav1.NewTime(time.Now().Add(-20*time.Hour))
	other := testEvent("prod", "c", "Pod", "db", "Normal", "Created", 1, 21*time.Hour)
	srv := fakeEvents(t, []v1.Event{first}, []v1.Event{first}, []v1.Event{first, second, other}, []v1.Event{first, repeated, other})
	code, out, errOut := runClient(t, "events", srv, "-w")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "503 Service Unavailable: node is stopping")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 4, out)
	assert.Regexp(t, `^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$`, lines[0])
	assert.Regexp(t, `^30h\s+Normal\s+Started\s+Pod/web\s+Started message$`, lines[1])
	assert.Regexp(t, `^25h\s+Warning\s+Unhealthy\s+Pod/web\s+Unhealthy message$`, lines[2], "new: printed once")
	assert.Regexp(t, `^20h \(x2 over 25h\)\s+Warning\s+Unhealthy\s+Pod/web\s+Unhealthy message$`, lines[3], "repeated: printed again")
	assert.NotContains(t, out, "Created", "another namespace's event")

	// A watch that starts with no events prints the header with the first one, once; an event
	// that went (evicted) is not printed, as kubectl events -w prints no deletions.
	srv = fakeEvents(t, nil, []v1.Event{first}, []v1.Event{first, second}, []v1.Event{second})
	code, out, _ = runClient(t, "events", srv, "-w")
	assert.Equal(t, 1, code)
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 3, out)
	assert.Regexp(t, `^LAST SEEN\s+TYPE`, lines[0])
	assert.Regexp(t, `^30h\s+Normal\s+Started`, lines[1])
	assert.Regexp(t, `^25h\s+Warning\s+Unhealthy`, lines[2])
}
