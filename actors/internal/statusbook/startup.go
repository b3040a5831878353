package statusbook

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/internal/podstatus"
	"github.com/probeactor/probeactor/messages"
)

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
		s := e.startupOf(rt, i)
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

// startupOf returns the record of cs's instance (the container status at index i of rt), made when
// first seen. An ID listed twice has one record, at its first index.
func (e *podEntry) startupOf(rt *v1.PodStatus, i int) *container {
	if j := e.runtime.indexByID(messages.ContainerID(containerStatusAt(rt, i).ContainerID)); j >= 0 {
		i = j
	}
	s := &e.containers[i]
	if s.rank == 0 {
		cs := containerStatusAt(rt, i)
		adopted := cs.Ready || (cs.Started != nil && *cs.Started)
		s.rank, s.adopted, s.started, s.ready = maxRank(e.containers)+1, adopted, adopted, adopted
	}
	return s
}

func containerStatusAt(rt *v1.PodStatus, i int) *v1.ContainerStatus {
	if n := len(rt.ContainerStatuses); i >= n {
		return &rt.InitContainerStatuses[i-n]
	}
	return &rt.ContainerStatuses[i]
}

func maxRank(cs []container) uint16 {
	var m uint16
	for i := range cs {
		m = max(m, cs[i].rank)
	}
	return m
}

// renumber gives the instances of cs (a pod's containers) the ranks 1…n in the order of their
// ranks, so ranks stay at most the number of containers however often they restart.
func renumber(cs []container) {
	var next, last uint16 // last: the rank renumbered last (before renumbering)
	for {
		k := -1
		for i := range cs {
			if r := cs[i].rank; r > last && (k < 0 || r < cs[k].rank) {
				k = i
			}
		}
		if k < 0 {
			return
		}
		next, last = next+1, cs[k].rank
		cs[k].rank = next
	}
}

// Startups returns how long each running container instance of a pod took to start and to become
// ready (none before the pod's first recomputation), in the order they were first seen running.
func (b *Book) Startups(uid types.UID) []messages.ContainerStartup {
	e := b.pods[uid]
	if e == nil {
		return nil
	}
	n := maxRank(e.containers) // the ranks are 1…n
	out := make([]messages.ContainerStartup, 0, n)
	for r := uint16(1); r <= n; r++ {
		i := slices.IndexFunc(e.containers, func(c container) bool { return c.rank == r })
		s, cs := &e.containers[i], e.runtime.at(i)
		c := messages.ContainerStartup{Container: cs.Name, ContainerID: messages.ContainerID(cs.ContainerID), Adopted: s.adopted}
		if !s.adopted {
			c.Started, c.StartedAfter = s.started, s.startedAfter
			c.Ready, c.ReadyAfter = s.ready, s.readyAfter
		}
		out = append(out, c)
	}
	return out
}
