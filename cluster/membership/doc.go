// Package membership is cluster membership on the addresses the user gave and nothing else: a
// failure detector over full-mesh heartbeats, sent over this process's guarded protoactor remote
// (remotesec), with a small surface (New, Start, Subscribe, Applied, Stop; View; RemoteConfig).
//
// # What it owns
//
// Every decision is in core (core.go, with the detector in detector.go): a pure state machine,
// etcd-raft style, that takes events (start, a tick, a heartbeat heard, a TCP probe's result, a
// view applied, the leave) and returns effects (endpoints to reset, heartbeats to send and to
// whom, the view to publish, peers to probe, a reply). It holds all of the member's state: who is
// live, the published view and its version, the view peers are told (and, with AwaitApplied, the
// published views not applied yet), the heartbeat seq, the probes in flight, whether it leaves.
// memberActor (actor.go) only routes messages to it and performs its effects (sends, its timer,
// TCP dials, publishing to subscribers, logs, metrics); Member (member.go) keeps a copy of the
// last published view for readers on other goroutines and implements internal/lifecycle's
// Start/Stop. The remote is not its own: the process runs one (remotesec.Start with
// RemoteConfig) before Member.Start and stops it (remotesec.Stop) after Member.Stop.
//
// # What the detector does
//
//   - heartbeats every live peer's "membership" actor over the guarded remote (fire and forget,
//     probeactor.cluster.v1.Heartbeat) every HeartbeatInterval, and at once when its view changes;
//   - holds a peer live while its heartbeats keep arriving within FailureTimeout (the detection
//     time of a killed member is FailureTimeout ± one interval; measured in ARCHITECTURE.md);
//   - completes a first round before publishing any view (every peer heard, or FailureTimeout
//     passed), so a starting member never believes it is alone while its peers run;
//   - publishes the live set with the view each live peer last reported (View.Reported);
//   - with AwaitApplied, tells peers only the view its subscriber acknowledged (Applied), which
//     makes handoffs break-before-make (see cluster/ownership);
//   - heals a false suspicion (below);
//   - on Stop tells the live peers it leaves (a heartbeat with leaving set, requested until they
//     acknowledge, at most LeaveTimeout), so they drop it at once; unless pods still stop here
//     (SetStopping: a stop that outlasted node's budget, a pod held for the next node), in which
//     case it tells no one and the peers wait for it as after a crash (a member that left is
//     waited for no longer, so the leave would let a peer start such a pod at once).
//
// # Why protoactor's remote alone, not its cluster membership
//
// This package used protoactor's cluster (Cluster, MemberList, ClusterTopology events, a
// static-peers ClusterProvider of its own) and switched most of it off; what was left only
// relayed the detector's own decision:
//   - the bundled providers do not fit: consul, etcd, k8s and zk need an outside service; the test
//     provider works in one process only; automanaged serves a plain-HTTP /_health on a second
//     port bound to a literal 0.0.0.0, outside the remote's guard and mTLS, keeps its mutexes as
//     package globals and reports members under IDs MemberList blocks for good the first time a
//     health check misses. So the liveness decision was this package's anyway;
//   - gossip was off (a one-year interval): the full-mesh heartbeats already carry everything,
//     gossip is where most of the reported cluster races are (internal/racecheck lists the ones
//     the tests hit), and its blocked-member state would let one peer evict another cluster-wide;
//   - grains are unused (pods are ordinary local actors, see ../../../shared/design/scaleout.md
//     §2–4): it needed a no-op IdentityLookup;
//   - MemberList.UpdateClusterTopology only handed the live set back as a ClusterTopology event,
//     and blocked every departed member ID for good, so member IDs had to carry an admission
//     count for a peer dropped and heard again; blocking also raced with the remote's endpoint
//     readers (BlockList.Block against IsBlocked);
//   - Cluster.StartMember sleeps 1 s, and Cluster.Shutdown 2 s (for grain handoffs there are none
//     of), so neither fit a lifecycle part; the cluster also insisted on starting and stopping the
//     remote, which node runs once for the fleet link as well.
//
// What MemberList did that still matters is done here: when a peer is dropped from the view, its
// endpoint is reset (remote.EndpointTerminatedEvent), so no writer to a peer that is gone (or a
// stale one to its next incarnation) outlives the drop.
//
// # Invariants
//
//   - Views are published in order, each with a Version one higher than the last; no view before
//     the first round is complete; none after Stop began.
//   - Peers are told only a published view (with AwaitApplied, only an applied one), and never
//     a view older than one they were told.
//   - Heartbeats go only to live peers; a peer that is not live gets one only after a TCP connect
//     to its listed address succeeded (see below).
//   - A peer's endpoint is reset when it is dropped, when a new incarnation of it is heard while it
//     is live, and when its acknowledgements show this member's heartbeats are lost (a repair);
//     nothing else resets endpoints.
//   - An incarnation that announced its leave is never admitted again; a newer one is, and so is
//     a dropped one heard again (a suspicion is never final).
//   - The actor's timer stops when it stops; every probe goroutine ends within one heartbeat
//     interval, and Stop waits for them.
//
// # protoactor's remote quirks this package works around (scaleout.md §1.4)
//
// An endpoint writer created for a peer that is down blocks in its connect loop for up to ~20 s
// with everything queued behind it, and stopping the remote then waits 10 s for it. So heartbeats
// go only to live peers (and the leave only to those that still accept a TCP connect: a whole
// cluster stopped at once would otherwise hold each member's stop 10 s); a peer that is not live
// is probed with a bare TCP connect to its listed address each interval and greeted once it
// listens; a new incarnation of a peer still believed live gets its endpoint reset
// (EndpointTerminatedEvent), and so does a dropped peer. A writer's
// close makes protoactor drop the address's current endpoint too, so a message can be lost around
// a reconnect: heartbeats are repeated anyway and the leave is requested until acknowledged.
//
// # Quorum and leases (no pod runs twice)
//
// Every heartbeat acknowledges, for each peer live to its sender, the newest heartbeat heard from
// it (Heartbeat.acks) and lists the pods its sender still stops (Heartbeat.stopping, SetStopping).
// An acknowledgement is a grant: the sender heard the receiver's heartbeat made at time s (the
// receiver's clock) and drops the receiver no earlier than the failure timeout after it heard
// it, so the receiver may count on the grant until s + FailureTimeout. A member holds its quorum
// lease (View.LeaseUntil) while the grants that still hold, with itself, are a quorum of the
// configured members (ownership.Quorate). Heartbeats buffered while a member was frozen grant
// nothing new: their acknowledgements name heartbeats made before the freeze. A peer's report is
// current (View.Current) while its grant holds: it was sent after the peer heard a heartbeat made
// within the failure timeout. View.Gone records since when a quorum (this member once it has run
// for the failure timeout, and peers whose current reports leave the member out and whose
// incarnation was first heard a failure timeout ago — a restarted peer forgets the grants it gave)
// has left a member out: from then on that member holds no lease, since every quorum it could use
// includes a member of that quorum, whose last grant ran out when it dropped it. Config.Lease hands
// the lease's end to node, which gives it to every container's shim as a CLOCK_MONOTONIC deadline
// (cmd/node/internal/proc): a frozen or dead node's containers stop at the lease's end by
// themselves.
//
// The bound (ownership.Reconcile, rule 3): a survivor starts a lost member's pod no earlier than
// Gone + the pod's grace period + the margin. Derivation, with T the failure timeout, g the grace
// period and c the last contact (the lost member's last heartbeat a quorum member heard): its
// lease ends by c + T on its own clock (its last grant from that member lasts T from a heartbeat
// made before c), which is no later than that member's drop, which is no later than Gone; its
// node and shims begin the stop there and the pod is gone by c + T + g. The margin
// (sharder.Margin: (T + g)/10 + T/8 + 500 ms) covers a lost member's clock running up to 10 %
// slower than the survivors' over T + g, one heartbeat interval for its node to notice (its shims
// act at the deadline itself), and half a second for a SIGKILL's delivery and the exit's reaping.
// With T = 2 s and g = 2 s: detection ≈ 2 s, Gone ≈ 2.25 s (a peer's report), start ≈ 2.25 + 2 +
// 1.15 ≈ 5.4 s after the fault, while the lost member's pods are stopped within 4 s.
//
// # How a false suspicion heals, and why a one-way loss no longer makes one
//
// A peer silent for longer than FailureTimeout is dropped even when it is alive (CPU starvation,
// a pause): a suspicion is never final. The dropping member keeps probing the peer's listed
// address (TCP) every interval and greets it when it listens; the peer's next heartbeat that
// arrives admits it again (the detector never rejects a known incarnation for having been
// dropped, and the guard checks envelopes, not liveness). That alone heals a silence that ends.
//
// A one-way loss — this member's heartbeats to a peer lost without an error here while the peer's
// reach it — used to end in a view that did not heal (seen under a load average over 100: the
// member that lost the heartbeats dropped the other for good while the other kept it, and both ran
// its pods). Its cause is in the pinned protoactor: a writer that fails a send stops itself and
// leaves the endpoint's removal to its receive goroutine, which publishes no termination when the
// stream ended with io.EOF, so the address stays mapped to a dead writer and everything sent to it
// is a dead letter; a writer's connect waits for the peer's ConnectResponse without a deadline; an
// endpoint reset around a drop cascades. None reconnects by itself. The fix is on the side whose
// writer is dead, at the first sign of it: every heartbeat acknowledges the newest heartbeat its
// sender heard from each live peer (the lease grants), so a member that hears a live peer whose
// acknowledgements name none of its heartbeats made in the last repairAfter (half the failure
// timeout; heartbeats go every eighth) knows its own sends are lost, resets its endpoint to that
// peer (EndpointTerminatedEvent: a new writer and connection on the next send) and greets it, at
// most once per repairAfter per peer (counted: probeactor_cluster_connection_repairs_total). The
// peer hears it again before its failure timeout: no false suspicion (TestAFalseSuspicionHeals,
// which loses one member's heartbeats to one peer until that endpoint is reset: repaired ~0.5 s
// after the loss began with a 1 s timeout, and the peer never dropped it). The same check resets
// the connections of a member resumed after a freeze or a partition (its peers acknowledge none
// of its heartbeats until they hear it again), so a connection that hangs from before is replaced.
// A reset that was not needed costs one reconnect. Even while a loss lasts, no pod runs twice (see
// Quorum and leases): the member that does not hear the other grants it nothing.
//
// # The shared restart budget
//
// With Config.RestartBudget (node run --restart-budget N/DURATION with --cluster; every member
// must be given the same budget) the members share one budget: at most N kills caused by liveness
// or startup failures across the cluster in any DURATION. The decisions are in ledger.go, a pure
// part of the core. A kill node wants to make is a claim (Want, by pod UID/container/container ID)
// ordered in the cluster by (lamport, origin, incarnation): a member makes a claim with a lamport
// higher than every claim it has heard of. Every heartbeat carries the sender's own claims
// (waiting and taken, with the taken ones' ages) and relays every other claim it knows
// (Heartbeat.claims). A member takes one of its own waiting claims (View.Taken, Taken: node kills
// the container then) only when
//
//	lease    it holds its quorum lease;
//	acks     every other configured member has acknowledged a heartbeat of this member made after
//	         the claim (Heartbeat.acks, the lease's grants), or was fenced — left out by a quorum
//	         (View.Gone) a quarter of the failure timeout earlier, or announced its leave — before
//	         the claim was made; a member fenced after the claim was made makes it anew, last in
//	         the order (so the acknowledgements it waits for come after the fence);
//	room     fewer than N claims it knows come before it: every taken claim still in the window,
//	         wherever it is in the order, and every waiting claim ordered before it.
//
// A taken claim counts for the window plus a tenth of it (clock rates) plus the failure timeout
// (a relay's age is measured on the sender's clock and heard later); a waiting one counts until
// its origin withdraws or takes it. What a member no longer hears (dropped, restarted) may have
// been taken since: its waiting claims count as taken from then on, and so does a waiting claim
// relayed about a member that is not live here.
//
// Why at most N: take two claims u and v taken in one window by members U and V that each
// acknowledged the other's claim, u before v in the order. U's acknowledgement of v went in a
// heartbeat that listed U's claims; U made u before it (had U made u after hearing v, u would come
// after v), so V, which took v only after that acknowledgement, knew u (waiting and before v, or
// taken) and counted it. So the taker of the claim last in the order counted every other claim of
// the window, and took it only with fewer than N of them: at most N. The other rules cover members
// that did not acknowledge each other: a member fenced when the claim was made holds no lease from
// then on (see Quorum and leases) and takes nothing; what it took before, a quorum acknowledged,
// and the quorum that acknowledges the claim (made after the fence) shares a member with it, which
// relays it; a restarted member, which forgets the claims it heard, learns them again from the
// relays of the peers whose acknowledgements it waits for, and counts every taken claim whatever
// its place. That part is not proved but checked: the simulation (simulation_test.go,
// TestSimulatedClusterKeepsTheSharedRestartBudget: three and five members, crashes, restarts,
// freezes, one-way and symmetric partitions, clock rates 0.95–1.05, containers that fail and
// recover at random) checks at every event that no window of DURATION (real time) holds more than
// N kills, and that once the faults healed kills are taken again; it fails when the
// acknowledgements, the lease, the count of the waiting claims before the own one or of the taken
// ones after it, or the window's margin are switched off.
//
// What it costs: a kill waits for one heartbeat round trip (the acknowledgements) even when the
// budget has room; no kill is taken while the member has no quorum lease, or while a configured
// member is out of its view and not yet fenced (about a failure timeout after it went silent); a
// claim a member could not confirm (its origin went silent while it waited) holds a place in the
// budget for a window; every heartbeat carries every claim its sender knows, about 100 bytes each
// (at most clusterv1.MaxClaims), so a cluster with a thousand kills waiting sends heartbeats of
// ~100 KB. Without --cluster the budget is node's own (internal/restartbudget).
//
// # Trust boundary
//
// The remote runs behind remotesec's guard. RemoteConfig adds to the caller's own types
// probeactor.cluster.v1.Heartbeat to the "membership" actor and answers to this process's
// futures (leave acknowledgements); protoactor's cluster messages (gossip, activations, pub/sub)
// are refused like any unlisted type (they are not even registered: nothing imports protoactor's
// cluster package), and its Inspect binds a heartbeat's address to the address the stream
// announced (verified by the guard: the peer's IP without TLS, its certificate with mTLS).
// Heartbeats of another cluster, from an address that is not a listed peer, or malformed are
// ignored and counted (probeactor_cluster_heartbeats_ignored_total{reason}). A listener on a
// non-loopback address needs mTLS (remotesec). Identity is per host: on one host without TLS any
// local process can speak for any listed port (the fleet's boundary is the same).
package membership
