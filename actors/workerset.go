package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/messages"
)

// member is what a workerSet holds per worker: in the tree the worker itself (*workerActor), which
// carries its key and the set's bookkeeping (membership), so the set allocates nothing per worker
// but its map slot.
type member interface {
	comparable
	probeKey() messages.ProbeKey
	membership() *membership
}

// membership is a worker's entry in probeManager's workerSet.
type membership struct {
	pid      *actor.PID
	stopping bool // told to stop (by probeManager or by its supervisor); leaves when terminated
	gaveUp   bool // its supervisor gave up on it (the reason is in workerSet.reasons)
}

// workerSet is probeManager's bookkeeping as a plain value (the pure core of the probeManager
// actor): which keys have a worker, per pod; which workers were told to stop, once; which were given
// up on; and which pods' key sets changed since statusManager was told. Workers leave the set only
// when they have terminated (kubelet: a worker removes itself when it exits). Not safe for
// concurrent use.
type workerSet[W member] struct {
	byID    map[string]W
	pods    map[types.UID]*podWorkers[W]
	reasons map[string]any // PID.Id → last panic, for workers given up on and not terminated yet
	dirty   []types.UID    // pods whose key set changed since changed() (each once)
}

type podWorkers[W member] struct {
	workers []W
	dirty   bool // listed in workerSet.dirty
}

func newWorkerSet[W member]() *workerSet[W] {
	return &workerSet[W]{byID: map[string]W{}, pods: map[types.UID]*podWorkers[W]{}, reasons: map[string]any{}}
}

// len is the number of workers (including those told to stop and not terminated yet).
func (s *workerSet[W]) len() int { return len(s.byID) }

// has reports whether k has a worker.
func (s *workerSet[W]) has(k messages.ProbeKey) bool {
	_, ok := s.get(k)
	return ok
}

// get returns k's worker.
func (s *workerSet[W]) get(k messages.ProbeKey) (W, bool) {
	if p := s.pods[k.PodUID]; p != nil {
		for _, w := range p.workers {
			if w.probeKey() == k {
				return w, true
			}
		}
	}
	var zero W
	return zero, false
}

// add records w as its key's worker with the PID pid (the key must not have one).
func (s *workerSet[W]) add(pid *actor.PID, w W) {
	*w.membership() = membership{pid: pid}
	s.byID[pid.Id] = w
	k := w.probeKey()
	p := s.pods[k.PodUID]
	if p == nil {
		p = &podWorkers[W]{}
		s.pods[k.PodUID] = p
	}
	p.workers = append(p.workers, w)
}

// changedPod marks the pod's key set as changed (for changed()), when the caller's view of it
// (statusManager's, which counted the keys AddPod would add) is off.
func (s *workerSet[W]) changedPod(uid types.UID) {
	p := s.pods[uid]
	if p == nil { // no worker at all: reported once with no keys, then forgotten
		p = &podWorkers[W]{}
		s.pods[uid] = p
	}
	s.markDirty(uid, p)
}

// byIdentity returns the worker of a PID id.
func (s *workerSet[W]) byIdentity(id string) (W, bool) {
	w, ok := s.byID[id]
	return w, ok
}

// workers returns the pod's workers (read-only).
func (s *workerSet[W]) workers(uid types.UID) []W {
	if p := s.pods[uid]; p != nil {
		return p.workers
	}
	return nil
}

// stop marks w as told to stop and reports whether it was not before: each worker is stopped once.
func (s *workerSet[W]) stop(w W) bool {
	m := w.membership()
	if m.stopping {
		return false
	}
	m.stopping = true
	return true
}

// stopWhere marks the pod's workers whose key matches as told to stop and returns those that were
// not already.
func (s *workerSet[W]) stopWhere(uid types.UID, match func(messages.ProbeKey) bool) []W {
	var out []W
	for _, w := range s.workers(uid) {
		if match(w.probeKey()) && s.stop(w) {
			out = append(out, w)
		}
	}
	return out
}

// cleanup marks the workers of every pod not in desired as told to stop and returns those that
// were not already.
func (s *workerSet[W]) cleanup(desired map[types.UID]struct{}) []W {
	var out []W
	for uid := range s.pods {
		if _, ok := desired[uid]; !ok {
			out = append(out, s.stopWhere(uid, func(messages.ProbeKey) bool { return true })...)
		}
	}
	return out
}

// gaveUp records that w's supervisor gave up on it (and stopped it) because of reason.
func (s *workerSet[W]) gaveUp(w W, reason any) {
	m := w.membership()
	m.stopping, m.gaveUp = true, true
	s.reasons[m.pid.Id] = reason
}

// gone is a worker that terminated: whether it was given up on, and why.
type gone[W member] struct {
	w      W
	gaveUp bool
	reason any
}

// terminated removes the worker of PID id (false if unknown) and marks its pod's key set changed.
func (s *workerSet[W]) terminated(id string) (gone[W], bool) {
	w, ok := s.byID[id]
	if !ok {
		return gone[W]{}, false
	}
	delete(s.byID, id)
	g := gone[W]{w: w, gaveUp: w.membership().gaveUp, reason: s.reasons[id]}
	delete(s.reasons, id)
	uid := w.probeKey().PodUID
	p := s.pods[uid]
	for i, x := range p.workers {
		if x == w {
			last := len(p.workers) - 1
			p.workers[i] = p.workers[last]
			var zero W
			p.workers[last] = zero
			p.workers = p.workers[:last]
			break
		}
	}
	s.markDirty(uid, p)
	return g, true
}

func (s *workerSet[W]) markDirty(uid types.UID, p *podWorkers[W]) {
	if !p.dirty {
		p.dirty = true
		s.dirty = append(s.dirty, uid)
	}
}

// changed returns the pods whose key set changed (a worker terminated, or changedPod) since the
// last call, with their current keys, and forgets pods that have no worker left (after reporting
// them once with no keys).
func (s *workerSet[W]) changed() []protocol.ProbeWorkers {
	if len(s.dirty) == 0 {
		return nil
	}
	out := make([]protocol.ProbeWorkers, 0, len(s.dirty))
	for _, uid := range s.dirty {
		p := s.pods[uid]
		p.dirty = false
		out = append(out, protocol.ProbeWorkers{PodUID: uid, Keys: s.keys(uid)})
		if len(p.workers) == 0 {
			delete(s.pods, uid)
		}
	}
	clear(s.dirty)
	s.dirty = s.dirty[:0]
	return out
}

// keys lists the keys that have a worker in the pod.
func (s *workerSet[W]) keys(uid types.UID) []messages.ProbeKey {
	ws := s.workers(uid)
	keys := make([]messages.ProbeKey, len(ws))
	for i, w := range ws {
		keys[i] = w.probeKey()
	}
	return keys
}
