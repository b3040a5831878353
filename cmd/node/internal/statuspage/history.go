package statuspage

import (
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
)

// Depth is how many recent attempts History keeps per probe (the page shows them all).
const Depth = 32

// MaxMessage caps the bytes of an attempt's message (a probe's output or error) that History keeps:
// an HTTP probe's body may be 10 KiB, and the page shows a line of it.
const MaxMessage = 256

// Outcome is what one call of the prober gave.
type Outcome uint8

// The outcomes, as kubelet's prober sees them. Error is a prober error (kubelet retries it up to
// three times, then discards it: the previous result stands).
const (
	Success Outcome = iota + 1
	Warning         // success with a warning (an HTTP redirect to another host)
	Failure
	Unknown
	Error
)

// String is the outcome's name, also its CSS class on the page.
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Warning:
		return "warning"
	case Failure:
		return "failure"
	case Unknown:
		return "unknown"
	case Error:
		return "error"
	default:
		return "none"
	}
}

// Attempt is one call of the prober.
type Attempt struct {
	At      time.Time
	Outcome Outcome
	Message string // the probe's output or the prober's error for anything but a success; ≤ MaxMessage bytes
}

// Key names one probe of one container of one pod.
type Key struct {
	Pod       types.UID
	Container string
	Probe     messages.ProbeType
}

// Probe is what History knows of one probe: its recent attempts, oldest first, and its last
// failure or error (kept when later successes have pushed it out of Recent).
type Probe struct {
	Recent      []Attempt
	LastFailure Attempt // zero: none since the pod was first seen
}

// Last is the most recent attempt (zero: none yet).
func (p Probe) Last() Attempt {
	if len(p.Recent) == 0 {
		return Attempt{}
	}
	return p.Recent[len(p.Recent)-1]
}

// ring is one probe's attempts: buf[(next-n+i) mod Depth] for i < n, oldest first.
type ring struct {
	buf         [Depth]Attempt
	next, n     int
	lastFailure Attempt
}

func (r *ring) add(a Attempt) {
	r.buf[r.next] = a
	r.next = (r.next + 1) % Depth
	r.n = min(r.n+1, Depth)
	if a.Outcome != Success && a.Outcome != Warning {
		r.lastFailure = a
	}
}

func (r *ring) probe() Probe {
	p := Probe{Recent: make([]Attempt, r.n), LastFailure: r.lastFailure}
	for i := range r.n {
		p.Recent[i] = r.buf[(r.next-r.n+i+Depth)%Depth]
	}
	return p
}

// containerRef is which pod's container a container ID is.
type containerRef struct {
	pod  types.UID
	name string
}

// History is the pure core of the attempt recorder: per probe a ring of its last Depth attempts,
// and the index that attributes an attempt (which the prober sees only with a container ID) to its
// pod and container. It is not safe for concurrent use (Recorder locks it).
//
// Bounds: an attempt is kept only for a container ID that the pod's latest status names (Observe),
// so rings exist only for containers of pods History has seen and not forgotten; Forget and Retain
// remove a pod's index entries and rings together. Memory is therefore O(pods × probes × Depth),
// each attempt at most MaxMessage bytes of message.
type History struct {
	rings map[Key]*ring
	ids   map[string]containerRef // container ID → its pod and container
	byPod map[types.UID][]string  // the container IDs of each pod's latest status

	unattributed uint64 // attempts dropped: their container ID is not (or no longer) in the index
}

// NewHistory returns an empty History.
func NewHistory() *History {
	return &History{rings: map[Key]*ring{}, ids: map[string]containerRef{}, byPod: map[types.UID][]string{}}
}

// Observe replaces what History knows of a pod's container IDs: ids maps each current container ID
// to its container's name (a restarted container has a new ID; the old one is dropped here).
func (h *History) Observe(pod types.UID, ids map[string]string) {
	for _, id := range h.byPod[pod] {
		delete(h.ids, id)
	}
	list := make([]string, 0, len(ids))
	for id, name := range ids {
		if id == "" {
			continue
		}
		h.ids[id] = containerRef{pod: pod, name: name}
		list = append(list, id)
	}
	h.byPod[pod] = list
}

// Record keeps one attempt of the typ probe of the container with containerID. It reports whether
// the attempt was attributed; one that was not is only counted (its pod is gone, or the container
// was restarted while it ran).
func (h *History) Record(containerID string, typ messages.ProbeType, a Attempt) bool {
	ref, ok := h.ids[containerID]
	if !ok {
		h.unattributed++
		return false
	}
	a.Message = truncate(a.Message, MaxMessage)
	k := Key{Pod: ref.pod, Container: ref.name, Probe: typ}
	r := h.rings[k]
	if r == nil {
		r = &ring{}
		h.rings[k] = r
	}
	r.add(a)
	return true
}

// Unattributed counts an attempt that names no probe of its container (see Recorder.Prober).
func (h *History) Unattributed() { h.unattributed++ }

// Probe returns a copy of what History knows of one probe (ok false: no attempt recorded).
func (h *History) Probe(k Key) (Probe, bool) {
	r, ok := h.rings[k]
	if !ok {
		return Probe{}, false
	}
	return r.probe(), true
}

// Forget removes everything History keeps for a pod.
func (h *History) Forget(pod types.UID) {
	for _, id := range h.byPod[pod] {
		delete(h.ids, id)
	}
	delete(h.byPod, pod)
	for k := range h.rings {
		if k.Pod == pod {
			delete(h.rings, k)
		}
	}
}

// Retain forgets every pod not in desired (node's housekeeping: the pods the runtime still runs).
func (h *History) Retain(desired map[types.UID]struct{}) {
	for pod := range h.byPod {
		if _, ok := desired[pod]; !ok {
			h.Forget(pod)
		}
	}
	for k := range h.rings { // a ring always has its pod in byPod; this is belt and braces
		if _, ok := desired[k.Pod]; !ok {
			delete(h.rings, k)
		}
	}
}

// Stats is History's size, for tests and the page's footer.
type Stats struct {
	Pods, ContainerIDs, Probes int
	Unattributed               uint64
}

// Stats returns History's size.
func (h *History) Stats() Stats {
	return Stats{Pods: len(h.byPod), ContainerIDs: len(h.ids), Probes: len(h.rings), Unattributed: h.unattributed}
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
