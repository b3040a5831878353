// Package uplink is a node's side of the fleet: an actor that mirrors the node's local state (a
// Source) to the fleet aggregator (package fleet/aggregator) over protoactor's remote, with credit
// end to end.
//
// The protocol (wire/fleetv1): Hello → Welcome opens a session, the uplink watches the
// aggregator's fleet actor and subscribes to its Source, whose first batch is a snapshot; each
// batch goes as Changes{seq} with RequestFuture + ReenterAfter and the Source is acknowledged only
// when the aggregator answers APPLIED or DUPLICATE. Up to Config.Window batches (default
// DefaultWindow) are in flight at a time, in seq order over the one stream to the aggregator, so
// a change need not wait for the round trip of the batch ahead; while the window is full (the
// aggregator slow or down) changes coalesce per key at the Source: memory is bounded by the number
// of keys and the window, never by time. The aggregator applies a delta only on top of seq-1, so
// an answer APPLIED or DUPLICATE for a batch acknowledges every batch before it in the window too
// (cumulative, oldest first); a batch lost in transit makes it answer RESYNC to every later one,
// and the first RESYNC drops the window and resubscribes (a snapshot, with a seq above every batch
// before it). A Heartbeat goes when idle (Config.Heartbeat) so the aggregator keeps the node Ready,
// and so an idle node learns of a restarted aggregator (RESYNC); batches do not wait for it.
//
// Recovery: a timeout, a dead letter, STALE/INVALID or the watch's Terminated drops the session
// (the subscription is cancelled, the Source keeps coalescing) and a new Hello follows after a
// capped exponential back-off with jitter (Backoff; Rand and Clock injected); every new session
// and every RESYNC starts with a new subscription, hence a snapshot. seq is never reused within an
// incarnation (Config.Incarnation: the process start time), so the aggregator's dedup holds across
// reconnects. Measured: an aggregator SIGKILLed under load and restarted matches the node's state
// ~1.2 s after its restart, dominated by protoactor's endpoint writer, which retries a connect
// every 2 s.
//
// Core holds every decision (pure, table-tested); uplinkActor performs its effects. Coalescer is a
// Source fed by calls (SetResult, SetPod, RemovePod; the node's own SetCondition, SetNode and
// SetUsage), usable from any goroutine. A usage (the node's and its containers' rates over a
// sampling window) is not a keyed state but a sequence: each one set is a change, the latest
// winning while the window is full, and a snapshot carries the latest; one the wire refuses is
// not kept, so that it cannot poison every batch of every session.
//
// `node run --fleet ADDR --node-name NAME` runs it through package fleet/link, over a Coalescer fed by
// the probe tree's result subscription and the node's merged pod statuses.
package uplink
