package events

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/messages"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ev(at time.Time, reason, msg string) messages.Event {
	return messages.Event{Time: at, Type: v1.EventTypeWarning, Reason: reason, Message: msg,
		Pod: types.NamespacedName{Namespace: "default", Name: "web"}, PodUID: "u1", FieldPath: "spec.containers{app}"}
}

func TestAggregatesCountsAndPrintsEveryOccurrence(t *testing.T) {
	var out logtest.Buffer
	r := New(&out)
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	r.Event(ev(t0, "Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 500"))
	r.Event(ev(t0.Add(time.Second), "Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 500"))
	r.Event(ev(t0.Add(2*time.Second), "Killing", "Container app failed liveness probe, will be restarted"))
	r.Close()
	r.Event(ev(t0, "Late", "ignored after Close"))

	list := r.List()
	require.Len(t, list.Items, 2)
	first := list.Items[0]
	assert.Equal(t, "Unhealthy", first.Reason)
	assert.Equal(t, int32(2), first.Count)
	assert.Equal(t, t0, first.FirstTimestamp.Time.UTC())
	assert.Equal(t, t0.Add(time.Second), first.LastTimestamp.Time.UTC())
	assert.Equal(t, v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: "web", UID: "u1", FieldPath: "spec.containers{app}"}, first.InvolvedObject)
	assert.Equal(t, "kubelet", first.Source.Component)
	assert.Equal(t, "Killing", list.Items[1].Reason)

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, "10:00:00  Warning  Unhealthy     default/web  app  Liveness probe failed: HTTP probe failed with statuscode: 500", lines[0])
}

func TestEventNeverBlocksAndKeepsABoundedSet(t *testing.T) {
	unblock := make(chan struct{})
	r := New(blockingWriter{unblock})
	t0 := time.Now()
	for i := range MaxEvents + queueLen + 10 {
		r.Event(ev(t0.Add(time.Duration(i)*time.Millisecond), "R", strings.Repeat("x", i%50)+string(rune('a'+i%26))+time.Duration(i).String()))
	}
	assert.Len(t, r.List().Items, MaxEvents)
	unblock <- struct{}{}
	close(unblock)
	r.Close()
}

// blockingWriter blocks every Write until unblock is closed (after one more send).
type blockingWriter struct{ unblock chan struct{} }

func (w blockingWriter) Write(p []byte) (int, error) {
	<-w.unblock
	return len(p), nil
}
