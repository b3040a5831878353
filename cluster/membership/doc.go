// Package membership is cluster membership from protoactor's cluster package, on the addresses
// the user gave and nothing else: protoactor's Cluster, MemberList and ClusterTopology events,
// driven by this package's static-peers ClusterProvider, over a remote guarded by remotesec. It
// hides protoactor behind a small surface (New, Start, Subscribe, Applied, Stop; View) because
// protoactor's cluster code races (internal/racecheck lists what the tests tolerate).
//
// Why not the bundled providers: consul, etcd, k8s and zk need an outside service; the test
// provider works in one process only; automanaged serves a plain-HTTP /_health on a second port
// bound to a literal 0.0.0.0 (the only seam is NewWithTesting with a caller-made echo instance),
// outside the remote's guard and mTLS, keeps its mutexes as package globals, and reports members
// under their actor system IDs, which MemberList blocks for good the first time a health check
// misses. The static-peers provider instead:
//   - heartbeats every listed peer's "membership" actor over the guarded remote (fire and forget,
//     probeactor.cluster.v1.Heartbeat) every HeartbeatInterval, and at once when its view changes;
//   - holds a peer live while its heartbeats keep arriving within FailureTimeout (the detection
//     time of a killed member is FailureTimeout ± one interval; measured in ARCHITECTURE.md);
//   - completes a first round before publishing any view (every peer heard, or FailureTimeout
//     passed), so a starting member never believes it is alone while its peers run;
//   - reports the live set to protoactor's MemberList (UpdateClusterTopology) with member IDs
//     "address#admissions", so a member dropped and heard again is a new member to MemberList
//     (which blocks departed IDs forever), and publishes the ClusterTopology that comes back,
//     together with the view each live peer last reported (View.Reported);
//   - with AwaitApplied, tells peers only the view its subscriber acknowledged (Applied), which
//     makes handoffs break-before-make (see cluster/ownership);
//   - heals a false suspicion (below);
//   - on Stop tells the live peers it leaves (a heartbeat with leaving set, requested until they
//     acknowledge, at most LeaveTimeout), so they drop it at once.
//
// protoactor parts that are off: gossip (its interval is set to a year, Stop ends its loop; the
// full-mesh heartbeats already carry everything, gossip is where most of the reported cluster
// races are, and its blocked-member state would let one peer evict another cluster-wide) and
// grains (a no-op IdentityLookup: pods are ordinary local actors, see ../../../shared/design/
// scaleout.md §2–4). Cluster.Shutdown is not used (it sleeps 2 s for grain handoffs); StartMember
// is (it sleeps 1 s; New lets a subscriber attach first, so the views flow during that second).
//
// protoactor's remote quirks this package works around (scaleout.md §1.4): an endpoint writer
// created for a peer that is down blocks in its connect loop for up to ~20 s with everything queued
// behind it, and stopping the remote then waits 10 s for it. So heartbeats go only to live peers;
// a peer that is not live is probed with a bare TCP connect to its listed address each interval
// and greeted once it listens; a new incarnation of a peer still believed live gets its endpoint
// reset (EndpointTerminatedEvent). A writer's close makes protoactor drop the address's current
// endpoint too, so a message can be lost around a reconnect: heartbeats are repeated anyway and the
// leave is requested until acknowledged.
//
// How a false suspicion heals. A peer silent for longer than FailureTimeout is dropped even when it
// is alive (CPU starvation, a pause): a suspicion is never final. The dropping member keeps
// probing the peer's listed address (TCP) every interval and greets it when it listens; the peer's
// next heartbeat that arrives admits it again under a new protoactor member ID (address#admissions;
// MemberList blocks departed IDs, the detector never rejects a known incarnation for having been
// dropped, and the guard checks envelopes, not liveness). That alone heals a silence that ends.
// It does not heal a one-way loss: the dropping member's heartbeats reach the peer (so the peer's
// view keeps it) while the peer's heartbeats to it are lost without an error at the peer (seen
// under a load average over 100; the exact trigger was not reproduced). The pinned protoactor
// has such paths, none of which ever reconnects by itself: a writer that fails a send stops itself
// and leaves the endpoint's removal to its receive goroutine, which publishes no termination when
// the stream ended with io.EOF, so the address stays mapped to a dead writer and everything sent
// to it becomes a dead letter; a writer's connect waits for the peer's ConnectResponse without a
// deadline, with everything queued behind it; and an endpoint reset around a drop cascades (each
// closed writer's receive goroutine publishes a termination that closes the next writer: the
// "closed four times in a second" of the report). The repair does not depend on the
// peer's endpoint to the dropping member: the peer learns it from the views the dropping member
// reports in its own heartbeats. A live peer that keeps reporting non-empty views without this
// member for half the failure timeout (repairAfter) gets this member's endpoint reset
// (EndpointTerminatedEvent: a new writer and connection on the next send) and a greeting, at most
// once per repairAfter per peer (counted: probeactor_cluster_connection_repairs_total). The bound,
// from the drop until every view has all members again: for a silence, one heartbeat interval
// after the peer speaks again plus a hop and the subscriber's apply; for a one-way loss, half the
// failure timeout plus two heartbeat intervals plus a connect and a reconcile (measured in
// TestAFalseSuspicionHeals: ~0.7 s after the drop with a 1 s timeout; with the defaults ≤ 1.5 s
// + a connect). Meanwhile the two disagree, and both may run the dropped member's pods (no quorum;
// see cluster/ownership). A reset that was not needed costs one reconnect.
//
// Trust boundary: the remote runs behind remotesec's guard. Besides the caller's own types, it
// accepts probeactor.cluster.v1.Heartbeat to the "membership" actor and answers to this process's
// futures (leave acknowledgements); protoactor's cluster messages (gossip, activations, pub/sub)
// are refused like any unlisted type, and Inspect binds a heartbeat's address to the address the
// stream announced (verified by the guard: the peer's IP without TLS, its certificate with mTLS).
// Heartbeats of another cluster, from an address that is not a listed peer, or malformed are
// ignored and counted (probeactor_cluster_heartbeats_ignored_total{reason}). A listener on a
// non-loopback address needs mTLS (remotesec). Identity is per host: on one host without TLS any
// local process can speak for any listed port (the fleet's boundary is the same).
package membership
