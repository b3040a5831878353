// Package events is node's event recorder: it receives messages.Event from the actor core and the
// process runtime, aggregates them as kubelet's recorder does (one v1.Event per involved object,
// type, reason and message, with a count and first/last timestamps) and prints each occurrence as
// one line.
//
// Invariants: Event never blocks (printing happens on the recorder's own goroutine through a bounded
// queue; lines that do not fit are counted and reported, never waited for); at most MaxEvents
// distinct events are kept, the least recently seen dropped first; Close drains the queue and ends the
// goroutine.
package events
