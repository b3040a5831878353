package proc

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// PodEventKind says what happened to a pod.
type PodEventKind int

// What the runtime publishes, in this order for each pod: PodStarted once, PodStatusChanged for
// every new status, PodRemoved once if Remove forgets the pod. A pod that is only terminated
// (Terminate, Shutdown) stays listed: its last status says it has finished, and no PodRemoved
// follows.
const (
	// PodStarted: Run accepted the pod; its containers start next.
	PodStarted PodEventKind = iota + 1
	// PodStatusChanged: the runtime's status of the pod changed; PodEvent.Status is the new one.
	PodStatusChanged
	// PodRemoved: Remove forgot the pod; every process of it was reaped and its logs deleted
	// (or could not be: Remove's error says so).
	PodRemoved
)

func (k PodEventKind) String() string {
	switch k {
	case PodStarted:
		return "started"
	case PodStatusChanged:
		return "status-changed"
	case PodRemoved:
		return "removed"
	default:
		return fmt.Sprintf("PodEventKind(%d)", int(k))
	}
}

// PodEvent is one change of one pod, as Subscribe delivers it. Pod is the runtime's copy of the
// pod's spec and Status (PodStatusChanged only) a copy that every subscriber shares: read them,
// never modify them.
type PodEvent struct {
	Kind   PodEventKind
	Pod    *v1.Pod
	Status v1.PodStatus
}

// Subscribe has fn called with every pod event from now on, until cancel is called. It is how
// node's parts learn of pods (the status page's history, the fleet link, the tries bookkeeping);
// the tree, which must learn each status after them, gets it through ReportStatus.
//
// Delivery: fn is called synchronously, subscribers in the order they subscribed — PodStarted
// from Run's caller before Run returns, PodStatusChanged from the pod's own goroutine before the
// function ReportStatus gave (the tree's push) sees that status, PodRemoved from Remove's caller
// before Remove returns. So the events of one pod reach fn one at a time and in order (see
// PodEventKind); events of different pods may reach it concurrently. fn must not block and must
// not call cancel.
//
// cancel stops the delivery: once it has returned (it waits for a call of fn under way), fn is
// not called again. Calling it again does nothing.
func (r *Runtime) Subscribe(fn func(PodEvent)) (cancel func()) {
	return r.subscribers.add(fn)
}

// subscribers is the runtime's fan-out of pod events: a list replaced (never changed in place)
// on each Subscribe and cancel, so a delivery walks the list it found without a lock.
type subscribers struct {
	mu   sync.Mutex
	list []*subscriber
}

// subscriber is one Subscribe. mu is held for reading while fn runs, so cancel (which takes it
// for writing) returns only once no call is under way, and later ones see cancelled.
type subscriber struct {
	fn        func(PodEvent)
	mu        sync.RWMutex
	cancelled bool
}

func (s *subscribers) add(fn func(PodEvent)) (cancel func()) {
	sub := &subscriber{fn: fn}
	s.mu.Lock()
	s.list = append(s.list[:len(s.list):len(s.list)], sub) // a new array: deliveries keep theirs
	s.mu.Unlock()
	return func() {
		sub.mu.Lock()
		sub.cancelled = true
		sub.mu.Unlock()
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, other := range s.list {
			if other == sub {
				s.list = append(s.list[:i:i], s.list[i+1:]...)
				return
			}
		}
	}
}

// publish calls every subscriber with e, in subscription order.
func (s *subscribers) publish(e PodEvent) {
	s.mu.Lock()
	list := s.list
	s.mu.Unlock()
	for _, sub := range list {
		sub.deliver(e)
	}
}

func (sub *subscriber) deliver(e PodEvent) {
	sub.mu.RLock()
	defer sub.mu.RUnlock()
	if !sub.cancelled {
		sub.fn(e)
	}
}
