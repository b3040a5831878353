package describe

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/internal/probetiming"
	"github.com/probeactor/probeactor/messages"
)

// Probe is one probe's state as node describe shows it, and as a node serves it at
// /probes/{namespace}/{name} (JSON). From a node it is the worker's live state (Live true); from a
// fleet aggregator only the published result is known (Live false, Node set).
type Probe struct {
	Container string `json:"container"`
	Type      string `json:"type"` // Liveness, Readiness, Startup
	// Live is true when the state comes from the worker itself (a node), false when only the
	// published result is known (a fleet aggregator).
	Live        bool   `json:"live"`
	Node        string `json:"node,omitempty"`
	ContainerID string `json:"containerID,omitempty"`
	// Published is what the worker last published for ContainerID ("" none).
	Published    string    `json:"published,omitempty"`
	Streak       int       `json:"streak"`
	StreakResult string    `json:"streakResult,omitempty"`
	LastResult   string    `json:"lastResult,omitempty"` // UNKNOWN: the prober itself failed (an error)
	LastAt       time.Time `json:"lastAt,omitzero"`
	OnHold       bool      `json:"onHold,omitempty"`
	KillDeferred bool      `json:"killDeferred,omitempty"`
	Busy         bool      `json:"busy,omitempty"`
	NextRun      time.Time `json:"nextRun,omitzero"`
	Running      bool      `json:"running,omitempty"`
	Started      bool      `json:"started,omitempty"`
	StartedAt    time.Time `json:"containerStartedAt,omitzero"`
}

// List is /probes/{namespace}/{name}.
type List struct {
	Items []Probe `json:"items"`
}

// FromStates converts the tree's worker states (Tree.ProbeStates).
func FromStates(states []messages.ProbeState) []Probe {
	out := make([]Probe, 0, len(states))
	for _, s := range states {
		p := Probe{Container: s.Key.Container, Type: s.Key.Type.String(), Live: true, ContainerID: string(s.ContainerID),
			Streak: s.Streak, OnHold: s.OnHold, KillDeferred: s.KillDeferred, Busy: s.Busy, NextRun: s.NextRun,
			Running: s.Running, Started: s.Started, StartedAt: s.ContainerStartedAt, LastAt: s.LastAt}
		if s.HasPublished {
			p.Published = s.Published.String()
		}
		if s.Streak > 0 {
			p.StreakResult = s.StreakResult.String()
		}
		if !s.LastAt.IsZero() {
			p.LastResult = s.LastResult.String()
		}
		out = append(out, p)
	}
	return out
}

// Next is a probe's summary line and the worst-case time to its next action, computed at
// describe time.
type Next struct {
	Container string `json:"container"`
	Type      string `json:"type"`
	// Streak: "failing 2/3"; Action: "restarts in ≤ 5s if it keeps failing".
	Streak        string  `json:"streak"`
	Action        string  `json:"action"`
	WithinSeconds float64 `json:"withinSeconds,omitempty"`
}

// Document is node describe's -o json: the pod, its probes' states, what they mean now, and the
// pod's events.
type Document struct {
	Kind   string     `json:"kind"` // PodDescription
	Server string     `json:"server"`
	Pod    v1.Pod     `json:"pod"`
	Probes []Probe    `json:"probes"`
	Next   []Next     `json:"next"`
	Events []v1.Event `json:"events"`
}

// NewDocument assembles a pod's description at now: its probes' states and the pod's events
// (picked from all of them by the involved object's namespace, name and, when both are known,
// UID), oldest first.
func NewDocument(server string, pod v1.Pod, probes []Probe, events []v1.Event, now time.Time) Document {
	d := Document{Kind: "PodDescription", Server: server, Pod: pod, Probes: probes, Next: []Next{}, Events: []v1.Event{}}
	if d.Probes == nil {
		d.Probes = []Probe{}
	}
	for _, e := range events {
		o := e.InvolvedObject
		if o.Namespace == pod.Namespace && o.Name == pod.Name && (o.UID == "" || pod.UID == "" || o.UID == pod.UID) {
			d.Events = append(d.Events, e)
		}
	}
	sort.SliceStable(d.Events, func(i, j int) bool { return d.Events[i].LastTimestamp.Before(&d.Events[j].LastTimestamp) })
	for _, p := range d.Probes {
		if l, ok := live(&pod, p, now); ok {
			a := probetiming.NextAction(l)
			n := Next{Container: p.Container, Type: p.Type, Streak: probetiming.StreakText(l), Action: a.Text}
			if a.Pending {
				n.WithinSeconds = a.Within.Seconds()
			}
			d.Next = append(d.Next, n)
		}
	}
	return d
}

// find returns the next-action line of a container's probe.
func (d *Document) find(container, typ string) (Next, bool) {
	for _, n := range d.Next {
		if n.Container == container && n.Type == typ {
			return n, true
		}
	}
	return Next{}, false
}

// probe returns the state of a container's probe.
func (d *Document) probe(container, typ string) (Probe, bool) {
	for _, p := range d.Probes {
		if p.Container == container && p.Type == typ {
			return p, true
		}
	}
	return Probe{}, false
}

// live is a live probe's state in probetiming's terms; false when the state is not live or its
// spec is not in pod.
func live(pod *v1.Pod, p Probe, now time.Time) (probetiming.Live, bool) {
	if !p.Live {
		return probetiming.Live{}, false
	}
	c, sidecar := podapi.Container(pod, p.Container)
	if c == nil {
		return probetiming.Live{}, false
	}
	pt, ok := probeType(p.Type)
	if !ok || pt.Spec(c) == nil {
		return probetiming.Live{}, false
	}
	l := probetiming.Live{
		Type: pt, Timing: probetiming.Of(pt.Spec(c)), Now: now,
		NoRestart: pod.Spec.RestartPolicy == v1.RestartPolicyNever && !sidecar,
		Running:   p.Running, Started: p.Started, StartedAt: p.StartedAt,
		Streak: int32(p.Streak), OnHold: p.OnHold, Deferred: p.KillDeferred, Busy: p.Busy, NextTick: p.NextRun,
	}
	if r, ok := result(p.Published); ok {
		l.Published, l.HasPublished = r, true
	}
	if r, ok := result(p.StreakResult); ok {
		l.StreakResult = r
	}
	return l, true
}

func probeType(s string) (messages.ProbeType, bool) {
	for _, pt := range messages.ProbeTypes {
		if pt.String() == s {
			return pt, true
		}
	}
	return 0, false
}

func result(s string) (messages.Result, bool) {
	for _, r := range []messages.Result{messages.Success, messages.Failure, messages.Unknown} {
		if r.String() == s {
			return r, true
		}
	}
	return 0, false
}
