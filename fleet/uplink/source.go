package uplink

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// Batch is one delivery of a node's local state from a Source.
type Batch struct {
	// Snapshot marks the first batch of a subscription: it holds every current result and pod, and
	// replaces whatever was delivered before.
	Snapshot bool
	Results  []messages.ResultChanged
	Pods     []PodUpdate
	// Conditions are the node's own conditions beyond Ready (a snapshot: all of them; a delta:
	// those that changed), e.g. a cluster member's ClusterQuorum.
	Conditions []Condition
	// Node is the node's own Node object (its /nodes, read-only): a snapshot carries the current
	// one, if any; a delta carries it when it changed (nil: unchanged).
	Node *v1.Node
	// Usage is what the node and its containers used over its latest sampling window (read-only):
	// a snapshot carries the latest, if any; a delta the latest set since the last delivery (nil:
	// none since).
	Usage *fleetv1.Usage
}

// Condition is one of the node's own conditions, keyed by Type (v1.NodeCondition's fields).
type Condition struct {
	Type, Status, Reason, Message string
	Transition                    time.Time
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
// every current result and pod, possibly none), then with changes, one call at a time and in the
// order the batches were made. At most window batches (at least 1) are unacknowledged at any
// time; changes that happen while the window is full coalesce per key (a result per probe key, a
// pod per UID) to the latest value, so an unacknowledged subscription costs memory bounded by the
// number of keys and the window, never by time. Acks may come in any order; each frees one slot.
// deliver may be called from any goroutine and must not block. cancel ends the subscription; an
// ack called after cancel is ignored.
//
// Coalescer is an implementation fed by calls; an adapter over the probe tree's snapshot
// subscription (issue 11's Tree.SubscribeFunc with a snapshot) is the other one node needs.
type Source interface {
	Subscribe(window int, deliver func(b Batch, ack func())) (cancel func())
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
	cond     *Condition     // a node condition's entry
	node     *v1.Node       // the node object's entry
	usage    *fleetv1.Usage // the usage's entry
	dirty    bool
	gone     bool // removed from its map: skip it when delivering
}

// Coalescer is a Source fed by SetResult, SetPod and RemovePod from any goroutine. It keeps the
// current value of every key (for snapshots) and the keys changed since the last delivery, in the
// order they first changed: memory is bounded by the number of keys. It supports one subscription
// at a time (a new Subscribe replaces the previous one). Delta batches carry at most MaxBatch
// changes. Batches are made under the lock and handed to deliver through an outbox that one
// caller at a time drains, so deliveries keep the order the batches were made in even when
// changes come from many goroutines (a key's later value never goes out before its earlier one).
type Coalescer struct {
	// MaxBatch bounds the changes of one delta batch (default 1024); snapshots are whole.
	MaxBatch int

	mu      sync.Mutex
	results map[resultKey]*entry
	pods    map[types.UID]*entry
	conds   map[string]*entry // by condition type
	node    *entry            // the node's own Node object; nil until SetNode
	usage   *entry            // the node's latest usage; nil until SetUsage
	dirty   []*entry
	sub     *subscription
	// outbox holds batches made and not yet handed to deliver; draining says a caller is
	// handing them over (the others leave it to that caller).
	outbox   []delivery
	draining bool
}

type subscription struct {
	deliver     func(Batch, func())
	window      int
	outstanding int // batches made (in the outbox or delivered) awaiting their ack
	cancelled   bool
}

type delivery struct {
	s   *subscription
	b   Batch
	ack func()
}

// NewCoalescer returns an empty Coalescer.
func NewCoalescer() *Coalescer {
	return &Coalescer{results: map[resultKey]*entry{}, pods: map[types.UID]*entry{}, conds: map[string]*entry{}}
}

// SetCondition records one of the node's own conditions (by type); an unchanged one (status,
// reason and message) is not delivered again.
func (c *Coalescer) SetCondition(cond Condition) {
	c.mu.Lock()
	e, ok := c.conds[cond.Type]
	if !ok {
		e = &entry{}
		c.conds[cond.Type] = e
	} else if e.cond.Status == cond.Status && e.cond.Reason == cond.Reason && e.cond.Message == cond.Message {
		c.mu.Unlock()
		return
	}
	e.cond = &cond
	c.markLocked(e)
	c.flushLocked()
}

// SetNode records the node's own Node object (the pointer is kept: do not modify it afterwards);
// one semantically equal to the current is not delivered again.
func (c *Coalescer) SetNode(n *v1.Node) {
	c.mu.Lock()
	if c.node == nil {
		c.node = &entry{}
	} else if equality.Semantic.DeepEqual(c.node.node, n) {
		c.mu.Unlock()
		return
	}
	c.node.node = n
	c.markLocked(c.node)
	c.flushLocked()
}

// SetUsage records the node's latest usage (the pointer is kept: do not modify it afterwards).
// Each one is a change: the next delta carries it, or a later one set meanwhile (the latest wins
// while the window is full). nil is ignored. A usage the wire refuses ((*fleetv1.Usage).Validate)
// is not kept, and is the error: the aggregator would drop every batch carrying it, the snapshot
// of each new session too.
func (c *Coalescer) SetUsage(u *fleetv1.Usage) error {
	if u == nil {
		return nil
	}
	if err := u.Validate(); err != nil {
		return err
	}
	c.mu.Lock()
	if c.usage == nil {
		c.usage = &entry{}
	}
	c.usage.usage = u
	c.markLocked(c.usage)
	c.flushLocked()
	return nil
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
	if c.sub.outstanding > 0 {
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
func (c *Coalescer) Subscribe(window int, deliver func(Batch, func())) func() {
	c.mu.Lock()
	if c.sub != nil {
		c.sub.cancelled = true
	}
	s := &subscription{deliver: deliver, window: max(1, window)}
	c.sub = s
	// The snapshot covers every key: nothing is dirty after it.
	b := Batch{Snapshot: true, Results: make([]messages.ResultChanged, 0, len(c.results))}
	for _, e := range c.results {
		b.Results = append(b.Results, e.result)
	}
	for uid, e := range c.pods {
		b.Pods = append(b.Pods, PodUpdate{UID: uid, Pod: e.pod})
	}
	for _, e := range c.conds {
		b.Conditions = append(b.Conditions, *e.cond)
	}
	if c.node != nil {
		b.Node = c.node.node
	}
	if c.usage != nil {
		b.Usage = c.usage.usage
	}
	for _, e := range c.dirty {
		e.dirty = false
	}
	c.dirty = c.dirty[:0]
	s.outstanding = 1
	c.outbox = append(c.outbox, delivery{s: s, b: b, ack: c.acker(s)})
	c.drainLocked()
	return func() {
		c.mu.Lock()
		s.cancelled = true
		if c.sub == s {
			c.sub = nil
		}
		c.mu.Unlock()
	}
}

// acker returns the ack of one delivered batch: it frees one slot of the window (once).
func (c *Coalescer) acker(s *subscription) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			if s.cancelled || c.sub != s {
				c.mu.Unlock()
				return
			}
			s.outstanding--
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

// flushLocked makes delta batches while the subscription's window has room and changes are
// pending, hands them over (drainLocked), and unlocks c.
func (c *Coalescer) flushLocked() {
	s := c.sub
	limit := c.MaxBatch
	if limit <= 0 {
		limit = 1024
	}
	for s != nil && s.outstanding < s.window && len(c.dirty) > 0 {
		var b Batch
		n := 0
		for n < len(c.dirty) && len(b.Results)+len(b.Pods)+len(b.Conditions) < limit {
			e := c.dirty[n]
			n++
			e.dirty = false
			switch {
			case e.gone:
			case e.cond != nil:
				b.Conditions = append(b.Conditions, *e.cond)
			case e.node != nil:
				b.Node = e.node
			case e.usage != nil:
				b.Usage = e.usage
			case e.isResult:
				b.Results = append(b.Results, e.result)
			default:
				b.Pods = append(b.Pods, PodUpdate{UID: e.uid, Pod: e.pod}) // nil Pod: removed
			}
		}
		c.dirty = append(c.dirty[:0], c.dirty[n:]...)
		if len(b.Results)+len(b.Pods)+len(b.Conditions) == 0 && b.Node == nil && b.Usage == nil {
			continue // only keys gone since they changed
		}
		s.outstanding++
		c.outbox = append(c.outbox, delivery{s: s, b: b, ack: c.acker(s)})
	}
	c.drainLocked()
}

// drainLocked hands the outbox's batches to their subscriptions' deliver, in order, unless
// another caller is doing so (it will hand over these too), and unlocks c. deliver is called
// without the lock, so it may call the ack (or anything else) at once.
func (c *Coalescer) drainLocked() {
	if c.draining {
		c.mu.Unlock()
		return
	}
	c.draining = true
	for len(c.outbox) > 0 {
		d := c.outbox[0]
		c.outbox[0] = delivery{}
		c.outbox = c.outbox[1:]
		if d.s.cancelled {
			continue
		}
		c.mu.Unlock()
		d.s.deliver(d.b, d.ack)
		c.mu.Lock()
	}
	c.outbox = nil
	c.draining = false
	c.mu.Unlock()
}
