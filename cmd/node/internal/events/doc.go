// Package events is node's event recorder: it receives messages.Event from the actor core and the
// process runtime, aggregates them as kubelet's recorder does (one v1.Event per involved object,
// type, reason and message, with a count and first/last timestamps) and prints each occurrence as
// one line.
//
// Invariants: Event never blocks (printing happens on the recorder's own goroutine through a bounded
// queue; lines that do not fit are counted and reported, never waited for); at most MaxEvents
// distinct events are kept, the least recently seen dropped first; Close drains the queue and ends the
// goroutine.
//
// Deliberate deviations from kubelet's recorder (client-go tools/record's EventCorrelator), whose
// two other stages protect an API server node does not have: no spam filter (kubelet drops every
// event of a source and object beyond a burst of 25, refilled one per 5 minutes, so a probe that
// fails each second stops counting there; node keeps counting), and no aggregation of similar
// events (kubelet folds the 11th and later events of one object, type and reason with different
// messages within 10 minutes into one "(combined from similar events): ..."; node keeps each
// message, within MaxEvents).
package events
