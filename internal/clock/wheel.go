package clock

import "math/bits"

// wheelSlots is the size of a Scheduler's timing wheel: one slot per grid step, so 16.4 s at the
// default 1 ms resolution, which covers kubelet's default probe period (10 s) and everything shorter.
// An entry due further out waits in the heap until the wheel's span reaches it.
const wheelSlots = 1 << 14

// wheel holds a Scheduler's near entries, one list per grid point: slot k (counted in grid steps
// since the scheduler's base) is due once k*res has come, and lives at index k&mask for as long as
// cursor <= k < cursor+size. Scheduling, rescheduling and cancelling are O(1) and firing takes a
// slot's list head first; a bitmap of the non-empty slots finds the next deadline in a few word
// reads. A wake-up before the cursor's point walks its list once (passed) for entries whose own
// deadlines have come. The lists are threaded through the Scheduler's entry slab (next, prev: the
// head's prev is the tail), so the wheel itself is an index per slot and a bit.
//
// Invariants (the Scheduler's lock held):
//   - every entry in slot index i has the grid point cursor + ((i - cursor) & mask);
//   - the overdue list (index size) holds entries scheduled for a grid point before cursor, which has
//     been fired: they are due at once;
//   - bits has bit i set exactly when the list at index i (< size) is not empty;
//   - a list is in scheduling order.
type wheel struct {
	cursor int64    // the earliest grid point not yet fired
	mask   int64    // size-1
	head   []int32  // per slot index, and one more for the overdue list: the first entry or -1
	bits   []uint64 // the non-empty slots
	mods   uint64   // unlinks so far: a scan resumes only if no other unlink came between
	scan   scan     // where passed resumes within one firing
}

// scan is passed's place in the cursor's slot: every entry up to after (-1: none yet) was visited
// at now and was not due, so the scan goes on from after's successor while now, the slot and the
// lists (mods) are as they were. Appends go to the tail, so they are visited too.
type scan struct {
	now   int64
	slot  int64
	after int32
	mods  uint64
}

func newWheel(size int) *wheel {
	if size < 64 || size&(size-1) != 0 {
		panic("clock: the wheel's size must be a power of two, at least 64")
	}
	w := &wheel{mask: int64(size - 1), head: make([]int32, size+1), bits: make([]uint64, size/64)}
	for i := range w.head {
		w.head[i] = -1
	}
	return w
}

// end is the first grid point after the wheel's span.
func (w *wheel) end() int64 { return w.cursor + w.mask + 1 }

// overdue is the index of the overdue list.
func (w *wheel) overdue() int { return len(w.head) - 1 }

// add appends entry idx to the list of grid point k (the overdue list if k < cursor); k must be
// below cursor+size.
func (w *wheel) add(entries []entry, idx int32, k int64) {
	i := w.overdue()
	if k >= w.cursor {
		i = int(k & w.mask)
		w.bits[i/64] |= 1 << (i % 64)
	}
	e := &entries[idx]
	e.slot, e.next = int32(i), -1
	h := w.head[i]
	if h < 0 {
		w.head[i], e.prev = idx, idx
		return
	}
	tail := entries[h].prev
	entries[tail].next = idx
	e.prev = tail
	entries[h].prev = idx
}

// unlink removes entry idx from its list.
func (w *wheel) unlink(entries []entry, idx int32) {
	w.mods++
	e := &entries[idx]
	i := int(e.slot)
	h := w.head[i]
	switch {
	case idx == h:
		w.head[i] = e.next
		if e.next >= 0 {
			entries[e.next].prev = e.prev
		} else if i != w.overdue() {
			w.bits[i/64] &^= 1 << (i % 64)
		}
	default:
		entries[e.prev].next = e.next
		if e.next >= 0 {
			entries[e.next].prev = e.prev
		} else {
			entries[h].prev = e.prev // idx was the tail
		}
	}
	e.slot, e.next, e.prev = -1, -1, -1
}

// next returns the earliest grid point with a non-empty slot, if any (the overdue list aside).
func (w *wheel) next() (int64, bool) {
	n := len(w.bits)
	start := int(w.cursor & w.mask)
	word, bit := start/64, start%64
	// The first word from the cursor's bit on, then whole words around the wheel, then the first
	// word's bits below the cursor's.
	if b := w.bits[word] >> bit; b != 0 {
		return w.cursor + int64(bits.TrailingZeros64(b)), true
	}
	for j := 1; j <= n; j++ {
		wi := (word + j) % n
		b := w.bits[wi]
		if j == n {
			b &= 1<<bit - 1
		}
		if b != 0 {
			i := wi*64 + bits.TrailingZeros64(b)
			return w.cursor + (int64(i)-int64(start))&w.mask, true
		}
	}
	return 0, false
}

// passed returns the first entry of the cursor's slot, in scheduling order, whose own deadline is at
// or before now (the slot's grid point is after now), or -1. Within one firing it resumes where
// it stopped, so a slot of n entries costs n visits per firing, however many chunks it takes.
func (w *wheel) passed(entries []entry, now int64) int32 {
	if w.scan.now != now || w.scan.slot != w.cursor || w.scan.mods != w.mods {
		w.scan = scan{now: now, slot: w.cursor, after: -1, mods: w.mods}
	}
	idx := w.head[w.cursor&w.mask]
	if w.scan.after >= 0 {
		idx = entries[w.scan.after].next
	}
	for ; idx >= 0; idx = entries[idx].next {
		if entries[idx].when <= now {
			return idx
		}
		w.scan.after = idx
	}
	return -1
}
