// Package link is node's fleet link (`node run --fleet ADDR --node-name NAME`): one lifecycle
// component (internal/lifecycle's Start/Stop contract) that reports the node's pods (the merged
// status /pods serves, spec.nodeName set) and its probe results to a fleet aggregator
// (fleet/aggregator, `node fleet`).
//
// # What it owns
//
// Three things, all in the node's actor system, made by Start and ended by Stop:
//
//   - the feed, an actor named "fleet-feed": it turns the probe tree's results and the node's pods
//     into the Coalescer's state. Its decisions (which pods to read, which to report removed,
//     whether a read pod changed, when to schedule a read) are podSync's, a pure type; the actor
//     routes messages and performs them.
//   - an uplink.Coalescer: the node's state per key (a result per probe, a pod per UID) and the
//     keys changed since the last delivery.
//   - the uplink (fleet/uplink), an actor named uplink.ActorName that mirrors the Coalescer to the
//     aggregator with credit end to end: a snapshot per session, reconnects with capped
//     exponential back-off and jitter (200 ms doubling to 2 s).
//
// It does not own the remote: node starts it before the link (the aggregator answers the uplink
// over it; its guard must accept fleetv1.ToNode() and target uplink.ActorName) and stops it after.
//
// # Message flow
//
//	probe tree --ResultChanges--> feed --SetResult--> Coalescer --Batch--> uplink --Changes--> aggregator
//	           <--AckResults-----  |                      ^                  <--Ack-----------
//	Link.PodChanged --podDirty--> feed --(after 100 ms) View--> SetPod / RemovePod
//	Link.SetCondition, SetNode, SetUsage ------------------------> Coalescer (node's own, any goroutine)
//
// The feed subscribes to the tree's results with a snapshot first (Start subscribes before node
// adds any pod, so the snapshot is empty then) and acknowledges every batch at once. A result, or
// a pod that started, stopped or changed status (Link.PodChanged, which node subscribes to the
// runtime's pod events), marks the pod dirty; fleetRefreshDelay (100 ms) later the feed reads the
// dirty pods' merged statuses (Config.View) and hands the changed ones to the Coalescer, the pods
// no longer running as removals (which drop their results too). Every fleetFullSync (10 s) it
// reads every pod again, a safety net: nothing is missed for longer. A restarted feed reads every
// pod at once.
//
// # Invariants
//
//   - Memory is bounded by keys, never by time: while the aggregator is slow or down, changes
//     coalesce per key in the Coalescer (and per pod in podSync's marks); the tree's own
//     subscription coalesces while the feed has not acknowledged.
//   - The last state is flushed before the uplink goes: Stop has the feed read every pod, then
//     waits until the aggregator acknowledged everything or the uplink has no session, at most
//     fleetFlushTimeout (2 s) and never past Stop's ctx; only then it stops the uplink.
//   - Nothing runs after Stop: the uplink and the feed are stopped (each cancels its timers on
//     Stopping), the feed is unsubscribed from the tree, the flush's ticker is stopped, and
//     PodChanged is a no-op. PodChanged before Start is a no-op too.
package link
