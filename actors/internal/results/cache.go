package results

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/messages"
)

// Key identifies a cached result.
type Key struct {
	ContainerID messages.ContainerID
	Type        messages.ProbeType
}

// Send is a batch the shell must deliver to subscriber To.
type Send[S comparable] struct {
	To    S
	Batch messages.ResultChanges
}

type subscriber struct {
	types   uint8 // bit per probe type
	pending map[Key]slot
	// order lists pending keys in first-change order. Remove only tombstones its entry (O(1)); the
	// slice is compacted once tombstones outnumber live entries, so len(order) stays below
	// 2×len(pending)+compactSlack.
	order  []orderEntry
	outSeq uint64 // seq of the unacknowledged batch, 0 if none
}

type slot struct {
	change messages.ResultChanged
	pos    int // index in order
}

type orderEntry struct {
	key  Key
	live bool
}

// compactSlack keeps small queues from being compacted over and over.
const compactSlack = 64

// queue makes ch the pending change of key k (its position stays where k first changed).
func (s *subscriber) queue(k Key, ch messages.ResultChanged) {
	if sl, ok := s.pending[k]; ok {
		sl.change = ch
		s.pending[k] = sl
		return
	}
	s.pending[k] = slot{change: ch, pos: len(s.order)}
	s.order = append(s.order, orderEntry{key: k, live: true})
}

func (s *subscriber) remove(k Key) {
	sl, ok := s.pending[k]
	if !ok {
		return
	}
	delete(s.pending, k)
	s.order[sl.pos].live = false
	if len(s.order) <= 2*len(s.pending)+compactSlack {
		return
	}
	live := s.order[:0]
	for _, o := range s.order {
		if o.live {
			sl := s.pending[o.key]
			sl.pos = len(live)
			s.pending[o.key] = sl
			live = append(live, o)
		}
	}
	clear(s.order[len(live):])
	s.order = live
}

// Cache is the results store and per-subscriber queues. S identifies a subscriber (the shell uses the
// PID's string form). Not safe for concurrent use.
type Cache[S comparable] struct {
	entries map[Key]entry
	subs    map[S]*subscriber
	out     map[uint64]S // outstanding batch seq → subscriber
	seq     uint64       // last batch seq, unique across subscribers
}

// entry is a cached result with the pod and container it belongs to (a snapshot reports them; the
// strings are the worker's, shared, not copied).
type entry struct {
	result    messages.Result
	podUID    types.UID
	container string
}

// New returns an empty Cache.
func New[S comparable]() *Cache[S] {
	return &Cache[S]{entries: map[Key]entry{}, subs: map[S]*subscriber{}, out: map[uint64]S{}}
}

func mask(types []messages.ProbeType) uint8 {
	if len(types) == 0 {
		return 0xff
	}
	var m uint8
	for _, t := range types {
		m |= 1 << uint(t)
	}
	return m
}

// Get returns the cached result for a key.
func (c *Cache[S]) Get(id messages.ContainerID, t messages.ProbeType) (messages.Result, bool) {
	e, ok := c.entries[Key{id, t}]
	return e.result, ok
}

// Count returns how many cached results equal r.
func (c *Cache[S]) Count(r messages.Result) int {
	n := 0
	for _, e := range c.entries {
		if e.result == r {
			n++
		}
	}
	return n
}

// Len returns the number of cached results.
func (c *Cache[S]) Len() int { return len(c.entries) }

// Set stores a result. It reports whether the value changed and returns the batches to send now
// (to subscribers with no batch outstanding).
func (c *Cache[S]) Set(r protocol.SetResult) (bool, []Send[S]) {
	k := Key{r.ContainerID, r.Type}
	if old, ok := c.entries[k]; ok && old.result == r.Result {
		return false, nil
	}
	ch := messages.ResultChanged(r)
	c.entries[k] = entry{result: r.Result, podUID: r.PodUID, container: r.Container}
	var out []Send[S]
	for id, s := range c.subs {
		if s.types&(1<<uint(r.Type)) == 0 {
			continue
		}
		s.queue(k, ch)
		if s.outSeq == 0 {
			out = append(out, c.flush(id, s))
		}
	}
	return true, out
}

// Remove forgets a key without notifying anyone; pending changes of the key are dropped.
func (c *Cache[S]) Remove(id messages.ContainerID, t messages.ProbeType) {
	k := Key{id, t}
	if _, ok := c.entries[k]; !ok {
		return
	}
	delete(c.entries, k)
	for _, s := range c.subs {
		s.remove(k)
	}
}

// Subscribe adds (or re-filters) a subscriber for the given types (all when empty). It receives
// changes that happen from now on.
func (c *Cache[S]) Subscribe(id S, types ...messages.ProbeType) {
	if s, ok := c.subs[id]; ok {
		s.types = mask(types)
		return
	}
	c.subs[id] = &subscriber{types: mask(types), pending: map[Key]slot{}}
}

// SubscribeSnapshot is Subscribe that first queues the current value of every cached key of the
// given types (ordered by pod UID, container, probe type and container ID), so the subscriber's
// next batch starts with the state as it is now and later changes follow. It returns that batch when
// it can go now (no batch of this subscriber is out, and something is cached).
func (c *Cache[S]) SubscribeSnapshot(id S, types ...messages.ProbeType) (Send[S], bool) {
	c.Subscribe(id, types...)
	s := c.subs[id]
	keys := make([]Key, 0, len(c.entries))
	for k := range c.entries {
		if s.types&(1<<uint(k.Type)) != 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b Key) int {
		ea, eb := c.entries[a], c.entries[b]
		return cmp.Or(cmp.Compare(ea.podUID, eb.podUID), cmp.Compare(ea.container, eb.container),
			cmp.Compare(a.Type, b.Type), cmp.Compare(a.ContainerID, b.ContainerID))
	})
	for _, k := range keys {
		e := c.entries[k]
		s.queue(k, messages.ResultChanged{PodUID: e.podUID, Container: e.container, ContainerID: k.ContainerID,
			Type: k.Type, Result: e.result})
	}
	if s.outSeq != 0 || len(s.pending) == 0 {
		return Send[S]{}, false
	}
	return c.flush(id, s), true
}

// Unsubscribe drops a subscriber and its queue.
func (c *Cache[S]) Unsubscribe(id S) {
	if s, ok := c.subs[id]; ok && s.outSeq != 0 {
		delete(c.out, s.outSeq)
	}
	delete(c.subs, id)
}

// Subscribers returns the number of subscribers.
func (c *Cache[S]) Subscribers() int { return len(c.subs) }

// Pending returns the number of changes queued for a subscriber (not counting the batch out).
func (c *Cache[S]) Pending(id S) int {
	if s, ok := c.subs[id]; ok {
		return len(s.pending)
	}
	return 0
}

// Ack acknowledges batch seq (sequence numbers are unique across subscribers, so an ack needs no
// sender) and returns that subscriber's next batch if changes are pending. Stale or unknown acks are
// ignored.
func (c *Cache[S]) Ack(seq uint64) (Send[S], bool) {
	id, ok := c.out[seq]
	if !ok {
		return Send[S]{}, false
	}
	delete(c.out, seq)
	s := c.subs[id]
	s.outSeq = 0
	if len(s.pending) == 0 {
		s.order = s.order[:0]
		return Send[S]{}, false
	}
	return c.flush(id, s), true
}

func (c *Cache[S]) flush(id S, s *subscriber) Send[S] {
	c.seq++
	s.outSeq = c.seq
	c.out[c.seq] = id
	b := messages.ResultChanges{Seq: c.seq, Changes: make([]messages.ResultChanged, 0, len(s.pending))}
	for _, o := range s.order {
		if o.live {
			b.Changes = append(b.Changes, s.pending[o.key].change)
		}
	}
	clear(s.pending)
	clear(s.order)
	s.order = s.order[:0]
	return Send[S]{To: id, Batch: b}
}
