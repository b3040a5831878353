package statusbook

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/internal/podstatus"
	"github.com/probeactor/probeactor/messages"
)

// startup is what the book keeps of one container instance's start: whether and how long after
// its start it first read Started and Ready (the probe-adjusted flags).
type startup struct {
	name    string
	id      messages.ContainerID
	adopted bool // running and reported ready or started when first seen: taken over, not measured
	started bool
	ready   bool
	// measured from the container's State.Running.StartedAt
	startedAfter time.Duration
	readyAfter   time.Duration
}

// Observation is a container instance's first Started or first Ready, measured from its start:
// what probeactor_container_time_to_started_seconds and ..._ready_seconds observe.
type Observation struct {
	Namespace string
	Container string
	Ready     bool // false: Started
	After     time.Duration
}

// TakeObservations returns the observations Recompute made since the last call.
func (b *Book) TakeObservations() []Observation {
	out := b.observed
	b.observed = nil
	return out
}

// observe records the first Started and the first Ready after each start of the running
// containers of rt, as flags (the adjusted flags) say at now. A container first seen running and
// already reported ready or started by the runtime (one node re-adopts after its own restart) was
// started and ready before: it is not measured. Nothing is observed before the pod's AddPod:
// until then the book does not know its probes, so "no startup worker" would read as started.
func (b *Book) observe(e *podEntry, rt *v1.PodStatus, flags []podstatus.Flags, now time.Time) {
	if !e.added {
		return
	}
	n := len(rt.ContainerStatuses)
	for i := range flags {
		var cs *v1.ContainerStatus
		if i < n {
			cs = &rt.ContainerStatuses[i]
		} else {
			cs = &rt.InitContainerStatuses[i-n]
		}
		if cs.State.Running == nil || cs.ContainerID == "" {
			continue
		}
		s := e.startupOf(cs)
		after := now.Sub(cs.State.Running.StartedAt.Time)
		if flags[i].Started && !s.started {
			s.started, s.startedAfter = true, after
			b.observed = append(b.observed, Observation{Namespace: e.pod.Namespace, Container: cs.Name, After: after})
		}
		if flags[i].Ready && !s.ready {
			s.ready, s.readyAfter = true, after
			b.observed = append(b.observed, Observation{Namespace: e.pod.Namespace, Container: cs.Name, Ready: true, After: after})
		}
	}
}

// startupOf returns the record of cs's instance, made when first seen.
func (e *podEntry) startupOf(cs *v1.ContainerStatus) *startup {
	id := messages.ContainerID(cs.ContainerID)
	for i := range e.starts {
		if e.starts[i].id == id {
			return &e.starts[i]
		}
	}
	adopted := cs.Ready || (cs.Started != nil && *cs.Started)
	e.starts = append(e.starts, startup{name: cs.Name, id: id, adopted: adopted, started: adopted, ready: adopted})
	return &e.starts[len(e.starts)-1]
}

// dropStarts forgets the instances status no longer lists (a restarted container has a new ID).
func (e *podEntry) dropStarts() {
	kept := e.starts[:0]
	for _, s := range e.starts {
		if e.runtime.has(s.id) {
			kept = append(kept, s)
		}
	}
	clear(e.starts[len(kept):])
	e.starts = kept
}

// Startups returns how long each running container instance of a pod took to start and to become
// ready (none before the pod's first recomputation).
func (b *Book) Startups(uid types.UID) []messages.ContainerStartup {
	e := b.pods[uid]
	if e == nil {
		return nil
	}
	out := make([]messages.ContainerStartup, 0, len(e.starts))
	for _, s := range e.starts {
		c := messages.ContainerStartup{Container: s.name, ContainerID: s.id, Adopted: s.adopted}
		if !s.adopted {
			c.Started, c.StartedAfter = s.started, s.startedAfter
			c.Ready, c.ReadyAfter = s.ready, s.readyAfter
		}
		out = append(out, c)
	}
	return out
}
