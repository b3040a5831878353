package uplink

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
)

// Batch is one delivery of a node's local state from a Source.
type Batch struct {
	// Snapshot marks the first batch of a subscription: it holds every current result and pod, and
	// replaces whatever was delivered before.
	Snapshot bool
	Results  []messages.ResultChanged
	Pods     []PodUpdate
}

// PodUpdate is a pod's current identity, spec and status (Pod, read-only) or, with Pod nil, the
// removal of the pod with UID.
type PodUpdate struct {
	UID types.UID
	Pod *v1.Pod
}

// Source is the node-local state an uplink mirrors to the aggregator.
//
// Subscribe starts a subscription: the source calls deliver with a snapshot first (Snapshot true,
// every current result and pod, possibly none), then with changes. It calls deliver again only
// after the previous batch's ack was called; changes that happen meanwhile coalesce per key (a
// result per probe key, a pod per UID) to the latest value, so an unacknowledged subscription
// costs memory bounded by the number of keys, never by time. deliver may be called from any
// goroutine and must not block. cancel ends the subscription; an ack called after cancel is
// ignored.
//
// Coalescer is an implementation fed by calls; an adapter over the probe tree's snapshot
// subscription (issue 11's Tree.SubscribeFunc with a snapshot) is the other one node needs.
type Source interface {
	Subscribe(deliver func(b Batch, ack func())) (cancel func())
}

// resultKey is a probe's identity: the latest result per probe is what a node reports.
type resultKey struct {
	pod       types.UID
	container string
	typ       messages.ProbeType
}

// entry is one key's current value; dirty says it changed since the last delivery (and is then in
// Coalescer.dirty exactly once). A removed pod's entry stays, with pod nil, until it is delivered.
type entry struct {
	result   messages.ResultChanged
	isResult bool
	rk       resultKey
	uid      types.UID
	pod      *v1.Pod
	dirty    bool
	gone     bool // removed from its map: skip it when delivering
}

// Coalescer is a Source fed by SetResult, SetPod and RemovePod from any goroutine. It keeps the
// current value of every key (for snapshots) and the keys changed since the last delivery, in the
// order they first changed: memory is bounded by the number of keys. It supports one subscription
// at a time (a new Subscribe replaces the previous one). Delta batches carry at most MaxBatch
// changes.
type Coalescer struct {
	// MaxBatch bounds the changes of one delta batch (default 1024); snapshots are whole.
	MaxBatch int

	mu      sync.Mutex
	results map[resultKey]*entry
	pods    map[types.UID]*entry
	dirty   []*entry
	sub     *subscription
}

type subscription struct {
	deliver     func(Batch, func())
	outstanding bool // a delivered batch awaits its ack
	cancelled   bool
}

// NewCoalescer returns an empty Coalescer.
func NewCoalescer() *Coalescer {
	return &Coalescer{results: map[resultKey]*entry{}, pods: map[types.UID]*entry{}}
}

// SetResult records a probe's latest result.
func (c *Coalescer) SetResult(r messages.ResultChanged) {
	k := resultKey{pod: r.PodUID, container: r.Container, typ: r.Type}
	c.mu.Lock()
	e, ok := c.results[k]
	switch {
	case !ok:
		e = &entry{isResult: true, rk: k}
		c.results[k] = e
	case e.result == r:
		c.mu.Unlock()
		return
	}
	e.result = r
	c.markLocked(e)
	c.flushLocked()
}

// SetPod records a pod's current state (the pointer is kept: do not modify the pod afterwards).
func (c *Coalescer) SetPod(pod *v1.Pod) {
	c.mu.Lock()
	e, ok := c.pods[pod.UID]
	if !ok {
		e = &entry{uid: pod.UID}
		c.pods[pod.UID] = e
	}
	e.pod = pod
	c.markLocked(e)
	c.flushLocked()
}

// RemovePod forgets a pod and its probes' results (the aggregator drops them on the removal).
func (c *Coalescer) RemovePod(uid types.UID) {
	c.mu.Lock()
	for k, e := range c.results {
		if k.pod == uid {
			delete(c.results, k)
			e.gone = true
		}
	}
	e, ok := c.pods[uid]
	if ok {
		delete(c.pods, uid)
	}
	// The removal itself is a change to deliver (even for a pod never set: harmless, and the
	// aggregator may hold it from an earlier incarnation).
	if !ok || e.gone {
		e = &entry{uid: uid}
	}
	e.pod, e.gone = nil, false
	c.markLocked(e)
	c.flushLocked()
}

// Len returns the number of result keys and pods held.
func (c *Coalescer) Len() (results, pods int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.results), len(c.pods)
}

// Pending returns the number of keys changed since the last delivery (bounded by Len's total plus
// the removals not yet delivered).
func (c *Coalescer) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.dirty {
		if !e.gone {
			n++
		}
	}
	return n
}

// Idle says whether nothing more can be delivered now: without a subscription, or with one that
// acknowledged every delivered batch and has no change pending. A node waits for it (bounded) at
// shutdown so its last changes reach the aggregator.
func (c *Coalescer) Idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sub == nil {
		return true
	}
	if c.sub.outstanding {
		return false
	}
	for _, e := range c.dirty {
		if !e.gone {
			return false
		}
	}
	return true
}

// Results returns a copy of every current result, for tests and comparisons.
func (c *Coalescer) Results() []messages.ResultChanged {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]messages.ResultChanged, 0, len(c.results))
	for _, e := range c.results {
		out = append(out, e.result)
	}
	return out
}

// Subscribe implements Source.
func (c *Coalescer) Subscribe(deliver func(Batch, func())) func() {
	c.mu.Lock()
	if c.sub != nil {
		c.sub.cancelled = true
	}
	s := &subscription{deliver: deliver}
	c.sub = s
	// The snapshot covers every key: nothing is dirty after it.
	b := Batch{Snapshot: true, Results: make([]messages.ResultChanged, 0, len(c.results))}
	for _, e := range c.results {
		b.Results = append(b.Results, e.result)
	}
	for uid, e := range c.pods {
		b.Pods = append(b.Pods, PodUpdate{UID: uid, Pod: e.pod})
	}
	for _, e := range c.dirty {
		e.dirty = false
	}
	c.dirty = c.dirty[:0]
	s.outstanding = true
	c.mu.Unlock()
	deliver(b, c.acker(s))
	return func() {
		c.mu.Lock()
		s.cancelled = true
		if c.sub == s {
			c.sub = nil
		}
		c.mu.Unlock()
	}
}

// acker returns the ack of one delivered batch: it lets the next batch go (once).
func (c *Coalescer) acker(s *subscription) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			if s.cancelled || c.sub != s {
				c.mu.Unlock()
				return
			}
			s.outstanding = false
			c.flushLocked()
		})
	}
}

func (c *Coalescer) markLocked(e *entry) {
	if !e.dirty {
		e.dirty = true
		c.dirty = append(c.dirty, e)
	}
}

// flushLocked delivers the next delta batch if the subscription may take one, and unlocks c.
func (c *Coalescer) flushLocked() {
	s := c.sub
	if s == nil || s.outstanding || len(c.dirty) == 0 {
		c.mu.Unlock()
		return
	}
	limit := c.MaxBatch
	if limit <= 0 {
		limit = 1024
	}
	var b Batch
	n := 0
	for n < len(c.dirty) && len(b.Results)+len(b.Pods) < limit {
		e := c.dirty[n]
		n++
		e.dirty = false
		switch {
		case e.gone:
		case e.isResult:
			b.Results = append(b.Results, e.result)
		default:
			b.Pods = append(b.Pods, PodUpdate{UID: e.uid, Pod: e.pod}) // nil Pod: removed
		}
	}
	c.dirty = append(c.dirty[:0], c.dirty[n:]...)
	if len(b.Results)+len(b.Pods) == 0 {
		c.mu.Unlock()
		return
	}
	s.outstanding = true
	c.mu.Unlock()
	s.deliver(b, c.acker(s))
}
