package proc

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/internal/lifecycle"
)

// Runtime is one of node's lifecycle parts.
var _ lifecycle.Component = (*Runtime)(nil)

// The fan-out on its own: subscribers in subscription order, a cancelled one skipped, the others'
// order kept.
func TestSubscribersInOrder(t *testing.T) {
	t.Parallel()
	var s subscribers
	var got []string
	hear := func(name string) func(PodEvent) {
		return func(e PodEvent) { got = append(got, name+":"+e.Kind.String()+":"+e.Pod.Name) }
	}
	s.add(hear("a"))
	cancelB := s.add(hear("b"))
	s.add(hear("c"))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}

	s.publish(PodEvent{Kind: PodStarted, Pod: pod})
	cancelB()
	s.publish(PodEvent{Kind: PodStatusChanged, Pod: pod})
	cancelB()
	s.add(hear("d"))
	s.publish(PodEvent{Kind: PodRemoved, Pod: pod})

	assert.Equal(t, []string{
		"a:started:p", "b:started:p", "c:started:p",
		"a:status-changed:p", "c:status-changed:p",
		"a:removed:p", "c:removed:p", "d:removed:p",
	}, got)
}

// cancel waits for a call under way; once it has returned, the subscriber is never called again.
func TestCancelWaitsForACallUnderWay(t *testing.T) {
	t.Parallel()
	var s subscribers
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	calls := 0
	cancel := s.add(func(PodEvent) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			close(entered)
			<-release
		}
	})
	published := make(chan struct{})
	go func() { // ends once the first call is released
		defer close(published)
		s.publish(PodEvent{Kind: PodStarted})
	}()
	<-entered
	cancelled := make(chan struct{})
	go func() { // ends once cancel returns: after the call under way
		defer close(cancelled)
		cancel()
	}()
	select {
	case <-cancelled:
		t.Fatal("cancel returned while a call was under way")
	default:
	}
	close(release)
	<-cancelled
	<-published
	s.publish(PodEvent{Kind: PodRemoved})
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, calls, "no call after cancel returned")
}

func TestPodEventKindString(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "PodEventKind(0)", PodEventKind(0).String())
}
