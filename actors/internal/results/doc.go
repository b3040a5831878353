// Package results is the pure core of the resultsCache actor: kubelet's results.Manager (one map
// for all three probe types, keyed by container ID and probe type) plus a non-blocking fan-out to
// any number of subscribers.
//
// Invariants:
//   - Set reports a change (and queues it for subscribers) only when the key is new or its value
//     differs (kubelet's dedup); Remove never reports anything.
//   - Each subscriber has at most one unacknowledged batch. While it is out, changes coalesce per key
//     to the latest value, so a subscriber's queue holds at most one change per live key (a removed
//     key's pending change is dropped with it; its slot in the order list is a tombstone until the
//     list, at twice the live count plus a small slack, is compacted), producers never wait, and
//     after the last Ack the subscriber has seen every key's final value.
//   - Every operation is O(1) amortised per key and subscriber (Remove included), so a stuck
//     subscriber does not make pod churn quadratic.
package results
