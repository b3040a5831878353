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
// The rules (Reconcile; issue 21: a pod never runs on two members):
//
//	quorum   a member runs pods only while it holds its quorum lease (cluster/membership): a
//	         strict majority of the configured members (Quorate; exactly half with the lowest
//	         address breaks a tie), itself included, has granted it one; without it, it stops
//	         every pod (with its grace period) and starts none
//	loser    stops a pod as soon as its own view says it no longer owns it
//	gainer   starts it only when (1) every live peer currently reports exactly the gainer's view,
//	         (2) no live peer reports that it still stops the pod, and (3) every configured member
//	         outside the view was left out by a quorum at least the pod's grace period plus the
//	         margin ago (or announced its leave, having stopped its pods first)
//
// Why no pod runs twice: two members that start a pod under two quorate agreed views share a
// member whose reports carried both views in turn; it reports a view only after it issued the
// stops that view implies and keeps reporting those pods as stopping until they exited, so the
// later start waits for the earlier container's exit (rules 1 and 2). A member outside an agreed
// quorate view has lost every grant a quorum could give it (the quorum left it out, and a grant
// lasts the failure timeout from the heartbeat it acknowledges), so its lease ran out by the time
// the quorum left it out; its node stops its pods then, and its shims do even when its node is
// frozen: the pods are gone a grace period later (rule 3; the margin covers clock rates and
// scheduling, see cluster/membership's doc). A running pod is kept under the member's own view
// while it holds its lease: a peer that would start it needs the agreement above first.
//
// The simulation in cluster/membership (simulation_test.go: the real membership core and this
// Reconcile, with crashes, restarts, freezes, one-way and symmetric partitions, clock rates
// 0.95–1.05 and grace periods 0–3 s) checks at every event that no pod has two live containers,
// counting a container until its termination finished, and that every pod runs exactly once
// after the faults heal; it fails within a few runs when rule 3 is switched off.
//
// What it costs: a failover waits for the lost member's fencing (failure timeout, then the
// longest grace period of its pods, then the margin); a hand-back waits for the old container's
// exit; starts wait while views disagree.
package ownership
