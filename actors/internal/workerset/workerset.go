// Package workerset is the pure core of the probe tree's probeManager: which keys have a worker,
// per pod; which workers were told to stop (once each) or given up on; which pods' key sets
// Changed since statusManager was told; and the workers' child names (Name, KeyOf). Table-tested;
// no actor code but the PID it records.
//
// Invariants: a key has at most one worker in the set (probeManager spawns under Name(key), which
// protoactor refuses while a worker of that name is registered, and spawns only keys the set does
// not have); a worker leaves the set only through Terminated; every pod whose key set changed is
// reported by Changed once until it changes again. The set is indexed by pod only: a worker is
// found from its PID through its name (KeyOf), so adding one costs one map slot per pod and no index
// by PID as well: that index was more than half of Add's cost (BenchmarkAdd, 1,000,000 workers:
// 1.9-2.0 µs a worker with it, 0.8 without, on the 2-vCPU VM), which puts it at about a sixth of
// probeManager's set-up CPU in the 16-core profile (ARCHITECTURE.md, "Set-up since the 16-core run").
package workerset

import (
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/messages"
)

// Member is what a Set holds per worker: in the tree the worker itself (*workerActor), which
// carries its key and the set's bookkeeping (membership), so the set allocates nothing per worker
// but its map slot.
type Member interface {
	comparable
	ProbeKey() messages.ProbeKey
	Membership() *Membership
}

// Membership is a worker's entry in probeManager's Set.
type Membership struct {
	PID      *actor.PID
	Stopping bool // told to stop (by probeManager or by its supervisor); leaves when terminated
	GaveUp   bool // its supervisor gave up on it (the reason is in Set.reasons)
}

// Set is probeManager's bookkeeping as a plain value (the pure core of the probeManager
// actor): which keys have a worker, per pod; which workers were told to stop, once; which were given
// up on; and which pods' key sets changed since statusManager was told. Workers leave the set only
// when they have terminated (kubelet: a worker removes itself when it exits). Not safe for
// concurrent use.
type Set[W Member] struct {
	n       int // workers in the set
	pods    map[types.UID]*podWorkers[W]
	reasons map[messages.ProbeKey]any // last panic, for workers given up on and not terminated yet
	dirty   []types.UID               // pods whose key set changed since changed() (each once)
	// reported lists the pods Changed reported since their last AddPod (see ReportedSinceAdd);
	// Cleanup forgets the pods it drops.
	reported map[types.UID]struct{}
}

type podWorkers[W Member] struct {
	workers []W
	dirty   bool // listed in Set.dirty
}

func New[W Member]() *Set[W] {
	return &Set[W]{pods: map[types.UID]*podWorkers[W]{}, reasons: map[messages.ProbeKey]any{},
		reported: map[types.UID]struct{}{}}
}

// typeNames are the probe types as they appear in child names.
var typeNames = [...]string{messages.Liveness: "liveness", messages.Readiness: "readiness", messages.Startup: "startup"}

// Name is the child name of k's worker, "<uid>.<container>.<type>". It is deterministic, so that a
// key cannot have two workers (protoactor refuses a second child of the same name while the first
// is registered), and KeyOf reads the key back from it.
func Name(k messages.ProbeKey) string {
	t := "unknown"
	if k.Type >= 0 && int(k.Type) < len(typeNames) {
		t = typeNames[k.Type]
	}
	return string(k.PodUID) + "." + k.Container + "." + t
}

// KeyOf returns the key whose worker Name names name; false if no key's is. Container names are
// DNS labels and type names have no dot, so the last two dots split a name whatever its UID holds.
func KeyOf(name string) (messages.ProbeKey, bool) {
	rest, typ, ok := cutLast(name)
	if !ok {
		return messages.ProbeKey{}, false
	}
	uid, container, ok := cutLast(rest)
	if !ok || container == "" {
		return messages.ProbeKey{}, false
	}
	for t, n := range typeNames {
		if n == typ {
			return messages.ProbeKey{PodUID: types.UID(uid), Container: container, Type: messages.ProbeType(t)}, true
		}
	}
	return messages.ProbeKey{}, false
}

func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// Len is the number of workers (including those told to stop and not terminated yet).
func (s *Set[W]) Len() int { return s.n }

// Get returns k's worker.
func (s *Set[W]) Get(k messages.ProbeKey) (W, bool) {
	if p := s.pods[k.PodUID]; p != nil {
		if w, ok := find(p.workers, k); ok {
			return w, true
		}
	}
	var zero W
	return zero, false
}

// find returns the worker of ws whose key is k.
func find[W Member](ws []W, k messages.ProbeKey) (W, bool) {
	for _, w := range ws {
		if w.ProbeKey() == k {
			return w, true
		}
	}
	var zero W
	return zero, false
}

// AddPod is an AddPod's workers joining the set: ws are the pod's workers (every key's PodUID is
// uid, each key once), and those whose key has no worker yet are spawned: spawn starts one and
// returns its PID, or nil if it could not (a worker of that name is still stopping), and the set
// records each one started. It reports whether any could not be started. The pod is looked up once
// however many workers it has (the lookup of each key before its spawn was 7 % of probeManager's
// set-up CPU in the 16-core profile), and entered only when a worker of it was started.
func (s *Set[W]) AddPod(uid types.UID, ws []W, spawn func(W) *actor.PID) (failed bool) {
	p := s.pods[uid]
	had := 0
	if p != nil {
		had = len(p.workers)
	}
	for _, w := range ws {
		if had > 0 {
			if _, ok := find(p.workers[:had], w.ProbeKey()); ok {
				continue // the key has a worker: w is never spawned
			}
		}
		pid := spawn(w)
		if pid == nil {
			failed = true
			continue
		}
		if p == nil {
			p = &podWorkers[W]{workers: make([]W, 0, len(ws))}
			s.pods[uid] = p
		}
		*w.Membership() = Membership{PID: pid}
		s.n++
		p.workers = append(p.workers, w)
	}
	return failed
}

// ChangedPod marks the pod's key set as changed (for changed()), when the caller's view of it
// (statusManager's, which counted the keys AddPod would add) is off.
func (s *Set[W]) ChangedPod(uid types.UID) {
	p := s.pods[uid]
	if p == nil { // no worker at all: reported once with no keys, then forgotten
		p = &podWorkers[W]{}
		s.pods[uid] = p
	}
	s.markDirty(uid, p)
}

// ByName returns the worker whose child name is name (Name of its key).
func (s *Set[W]) ByName(name string) (W, bool) {
	k, ok := KeyOf(name)
	if !ok {
		var zero W
		return zero, false
	}
	return s.Get(k)
}

// Workers returns the pod's workers (read-only).
func (s *Set[W]) Workers(uid types.UID) []W {
	if p := s.pods[uid]; p != nil {
		return p.workers
	}
	return nil
}

// Stop marks w as told to stop and reports whether it was not before: each worker is stopped once.
func (s *Set[W]) Stop(w W) bool {
	m := w.Membership()
	if m.Stopping {
		return false
	}
	m.Stopping = true
	return true
}

// StopWhere marks the pod's workers whose key matches as told to stop and returns those that were
// not already.
func (s *Set[W]) StopWhere(uid types.UID, match func(messages.ProbeKey) bool) []W {
	var out []W
	for _, w := range s.Workers(uid) {
		if match(w.ProbeKey()) && s.Stop(w) {
			out = append(out, w)
		}
	}
	return out
}

// Cleanup marks the workers of every pod not in desired as told to stop and returns those that
// were not already.
func (s *Set[W]) Cleanup(desired map[types.UID]struct{}) []W {
	var out []W
	for uid := range s.pods {
		if _, ok := desired[uid]; !ok {
			out = append(out, s.StopWhere(uid, func(messages.ProbeKey) bool { return true })...)
		}
	}
	for uid := range s.reported {
		if _, ok := desired[uid]; !ok {
			delete(s.reported, uid)
		}
	}
	return out
}

// ReportedSinceAdd reports whether Changed reported the pod since the last AddHandled(uid). Such a
// report may reach statusManager after statusManager registered the keys of the AddPod being
// handled (it registers them before forwarding the AddPod) and drop them: that AddPod's keys must
// then be reported again.
func (s *Set[W]) ReportedSinceAdd(uid types.UID) bool {
	_, ok := s.reported[uid]
	return ok
}

// AddHandled records that the pod's latest AddPod has been handled and reported where needed.
func (s *Set[W]) AddHandled(uid types.UID) { delete(s.reported, uid) }

// GaveUp records that w's supervisor gave up on it (and stopped it) because of reason.
func (s *Set[W]) GaveUp(w W, reason any) {
	m := w.Membership()
	m.Stopping, m.GaveUp = true, true
	s.reasons[w.ProbeKey()] = reason
}

// Gone is a worker that terminated: whether it was given up on, and why.
type Gone[W Member] struct {
	W      W
	GaveUp bool
	Reason any
}

// Terminated removes the worker whose child name is name (false if unknown) and marks its pod's
// key set changed.
func (s *Set[W]) Terminated(name string) (Gone[W], bool) {
	w, ok := s.ByName(name)
	if !ok {
		return Gone[W]{}, false
	}
	s.n--
	k := w.ProbeKey()
	g := Gone[W]{W: w, GaveUp: w.Membership().GaveUp, Reason: s.reasons[k]}
	delete(s.reasons, k)
	uid := k.PodUID
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

func (s *Set[W]) markDirty(uid types.UID, p *podWorkers[W]) {
	if !p.dirty {
		p.dirty = true
		s.dirty = append(s.dirty, uid)
	}
}

// Changed returns the pods whose key set changed (a worker terminated, or changedPod) since the
// last call, with their current keys, and forgets pods that have no worker left (after reporting
// them once with no keys).
func (s *Set[W]) Changed() []protocol.ProbeWorkers {
	if len(s.dirty) == 0 {
		return nil
	}
	out := make([]protocol.ProbeWorkers, 0, len(s.dirty))
	for _, uid := range s.dirty {
		p := s.pods[uid]
		p.dirty = false
		out = append(out, protocol.ProbeWorkers{PodUID: uid, Keys: s.Keys(uid)})
		s.reported[uid] = struct{}{}
		if len(p.workers) == 0 {
			delete(s.pods, uid)
		}
	}
	clear(s.dirty)
	s.dirty = s.dirty[:0]
	return out
}

// Keys lists the keys that have a worker in the pod.
func (s *Set[W]) Keys(uid types.UID) []messages.ProbeKey {
	ws := s.Workers(uid)
	keys := make([]messages.ProbeKey, len(ws))
	for i, w := range ws {
		keys[i] = w.ProbeKey()
	}
	return keys
}
