// Package ownership decides which cluster member runs which pod: rendezvous hashing of the pod
// UID over the live members (Owner), and the reconciler core (Reconcile) that turns a member's
// view, the pod set and what it runs into pods to start and stop. It is pure: no actors, no
// clock, no randomness; cluster/sharder is the actor shell around it.
//
// Rendezvous hashing mirrors protoactor's cluster.Rendezvous: every member scores the key
// (identity + member address), the highest score owns it, so removing a member moves only its
// keys and adding one moves to it only the keys it now owns. Deliberate differences, both tested:
//   - the score is FNV-1a 64 of key, NUL, address, then murmur3's fmix64 finalizer; protoactor's
//     plain FNV-1a 32 gives the first of three adjacent loopback ports half of the keys;
//   - a tie goes to the lowest address (protoactor: the order of member IDs, which are per
//     process here).
//
// The handoff rule (Reconcile):
//
//	loser  stops a pod as soon as its own view says it no longer owns it (with the pod's grace period)
//	gainer starts it once its view says it owns it AND every live peer in that view has reported a
//	       view containing the gainer (mutual visibility)
//
// Mutual visibility is enough to keep a pod from running twice while members agree on who is
// alive: a peer that has seen the gainer scores lower for the pod in any view, so it does not own
// it. With cluster/membership's AwaitApplied, a member reports a view only after its sharder has
// issued the stops that view implies, so the gainer's start follows the loser's stop:
//
//   - failover (the owner died): no overlap; the gap is the survivors' detection time (the failure
//     timeout, ± one heartbeat interval) plus a reconcile (well under a millisecond);
//   - a member (re)joins: no overlap at the PodRunner (the loser's Stop is issued before its
//     heartbeat with the joiner leaves); the pod's own termination (up to its grace period) is the
//     only time it may still run on the loser. The gap is one network hop and a reconcile (tens of
//     milliseconds; measured in ../../ARCHITECTURE.md "Cluster");
//   - a member leaves gracefully: it stops its pods first, then announces the leave; the gap is
//     that message's delivery.
//
// What is not covered: two live members that disagree about a third being alive (a false
// suspicion: a member silent for longer than the failure timeout, or an asymmetric partition) may
// both run that member's pods until they agree again (cluster/membership bounds that for a false
// suspicion: see its doc); there is no split-brain resolver or quorum.
// Once the views have settled every pod runs on exactly one member (the simulation in
// simulation_test.go checks both properties over random interleavings of deaths, restarts,
// detections and heartbeats).
package ownership
