package events

import (
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/messages"
)

// MaxEvents bounds how many distinct events the recorder keeps.
const MaxEvents = 1000

// queueLen bounds the lines waiting to be printed.
const queueLen = 1024

type key struct {
	uid, fieldPath, typ, reason, message string
}

// Recorder aggregates and prints events. The zero value is not usable; use New.
type Recorder struct {
	host  string
	queue chan messages.Event
	done  chan struct{}
	out   io.Writer

	mu      sync.Mutex
	events  map[key]*v1.Event
	dropped int
	closed  bool
}

// New returns a Recorder printing to out (nil: print nothing) and starts its printer goroutine.
func New(out io.Writer) *Recorder {
	host, _ := os.Hostname()
	r := &Recorder{host: host, queue: make(chan messages.Event, queueLen), done: make(chan struct{}), out: out, events: map[key]*v1.Event{}}
	go r.print() // ends when Close closes the queue
	return r
}

// Event records one occurrence. It never blocks.
func (r *Recorder) Event(e messages.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	k := key{string(e.PodUID), e.FieldPath, e.Type, e.Reason, e.Message}
	ts := metav1.NewTime(e.Time)
	if ev, ok := r.events[k]; ok {
		ev.Count++
		ev.LastTimestamp = ts
	} else {
		if len(r.events) >= MaxEvents {
			r.evictOldest()
		}
		r.events[k] = &v1.Event{
			TypeMeta:   metav1.TypeMeta{Kind: "Event", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: eventName(e), Namespace: e.Pod.Namespace, CreationTimestamp: ts},
			InvolvedObject: v1.ObjectReference{
				Kind: "Pod", APIVersion: "v1", Namespace: e.Pod.Namespace, Name: e.Pod.Name, UID: e.PodUID, FieldPath: e.FieldPath,
			},
			Reason:              e.Reason,
			Message:             e.Message,
			Source:              v1.EventSource{Component: "kubelet", Host: r.host},
			FirstTimestamp:      ts,
			LastTimestamp:       ts,
			Count:               1,
			Type:                e.Type,
			ReportingController: "kubelet",
			ReportingInstance:   r.host,
		}
	}
	select {
	case r.queue <- e:
	default:
		r.dropped++
	}
}

func (r *Recorder) evictOldest() {
	var oldest key
	var at time.Time
	first := true
	for k, ev := range r.events {
		if first || ev.LastTimestamp.Time.Before(at) {
			oldest, at, first = k, ev.LastTimestamp.Time, false
		}
	}
	delete(r.events, oldest)
}

// eventName mimics kubelet's "<pod>.<unique suffix>".
func eventName(e messages.Event) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s/%s/%s/%s", e.PodUID, e.FieldPath, e.Type, e.Reason, e.Message)
	return fmt.Sprintf("%s.%x", e.Pod.Name, h.Sum64())
}

// List returns every kept event, oldest first (by last occurrence).
func (r *Recorder) List() v1.EventList {
	r.mu.Lock()
	items := make([]v1.Event, 0, len(r.events))
	for _, ev := range r.events {
		items = append(items, *ev.DeepCopy())
	}
	r.mu.Unlock()
	sort.Slice(items, func(i, j int) bool {
		if !items[i].LastTimestamp.Equal(&items[j].LastTimestamp) {
			return items[i].LastTimestamp.Before(&items[j].LastTimestamp)
		}
		return items[i].Name < items[j].Name
	})
	return v1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}, Items: items}
}

// Close prints what is queued and stops the printer.
func (r *Recorder) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		<-r.done
		return
	}
	r.closed = true
	close(r.queue)
	r.mu.Unlock()
	<-r.done
}

func (r *Recorder) print() {
	defer close(r.done)
	for e := range r.queue {
		if r.out == nil {
			continue
		}
		r.mu.Lock()
		dropped := r.dropped
		r.dropped = 0
		r.mu.Unlock()
		if dropped > 0 {
			fmt.Fprintf(r.out, "(%d events not printed: output too slow)\n", dropped)
		}
		fmt.Fprintln(r.out, Line(e))
	}
}

// Line formats one event for a terminal:
// "22:04:05  Warning  Unhealthy  default/web  app  Liveness probe failed: ...".
func Line(e messages.Event) string {
	container := podapi.FieldPathContainer(e.FieldPath)
	if container == "" {
		container = "-"
	}
	msg := strings.ReplaceAll(strings.TrimSpace(e.Message), "\n", `\n`)
	return fmt.Sprintf("%s  %-7s  %-12s  %s/%s  %s  %s", e.Time.Format("15:04:05"), e.Type, e.Reason, e.Pod.Namespace, e.Pod.Name, container, msg)
}
