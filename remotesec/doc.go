// Package remotesec is the trust boundary of protoactor's remote (gRPC) in probeactor: Start
// configures and starts protoactor's own remote package with a guard and safe settings, without
// forking it. Every process with a remote starts it here: the fleet aggregator, and node's one
// remote part (Server, a lifecycle component), which the fleet uplink and the cluster membership
// share (cluster/membership's RemoteConfig adds the membership's types to the Config).
//
// What the pinned protoactor (v0.0.0-20240822202345-3c0e61ca19c9) does with hostile input, and
// what the guard does instead (../shared/design/scaleout.md §1.2, each case a test against a real
// aggregator process, the one `node fleet` runs, in fleet/aggregator/hostile_test.go):
//
//	peer sends                                         unguarded protoactor           guard
//	an unregistered type name                          process dies (nil deref)       stream closed, PermissionDenied
//	type_id / target / sender index out of range       process dies (index panic)     closed
//	serializer_id other than 0 (9; 1 = JSON)           dies / JsonMessage delivered   closed
//	unary ListProcesses, GetProcessDiagnostics         process dies (implement me)    Unimplemented
//	actor.Stop / PoisonPill to a named actor           the actor is stopped           closed (types off the list)
//	a target not exposed (eventstream, activator, …)   published / spawned            closed (target allow-list)
//	a target on another address                        relayed: this process dials it closed
//	a sender, watcher or terminated PID elsewhere      replies/terminations sent there closed (bound to the peer)
//	batches before ConnectRequest, ClientConnection    undefined                      closed
//
// The guard is a stream interceptor (grpc.ChainStreamInterceptor through remote.WithServerOptions)
// wrapping RecvMsg: each RemoteMessage is checked before protoactor's endpoint reader sees it, and
// a refusal returns PermissionDenied, which ends that peer's stream (the peer's endpoint writer
// reconnects; a well-behaved peer never triggers it). Checks, per stream:
//   - the first message is a ConnectRequest with a ServerConnection whose address the peer owns:
//     with mTLS its host must be named by the peer's verified certificate (IP or DNS SAN), without
//     TLS it must be the peer's own IP (loopback only, see below);
//   - in every MessageBatch: each type name is on the allow-list (Config.Accept plus actor.Watch,
//     Unwatch, Terminated and DeadLetterResponse) and registered in this process; serializer 0; all
//     indexes in range; every target is this process's address and an exposed actor
//     (Config.Targets) or, with Config.Futures, a reply to one of its futures; every sender, and the
//     PID inside Watch/Unwatch/Terminated, is at the stream's announced address;
//   - every unary RPC and any other stream method is refused (Unimplemented).
//
// Refusals are logged (Warn) and counted (probeactor_remote_refused_total{reason}).
//
// Settings Start applies (both sides, since every member serves and dials): a listener on a
// non-loopback address is refused unless mutual TLS is configured (TLS 1.3, client certificates
// required and verified against the fleet CA; the member's certificate must name the advertised
// host and allow serverAuth and clientAuth, checked at start); endpoint writer queues of 4,096
// instead of protoactor's 1,000,000 (~15 MiB of heap per peer); gRPC keepalives (10 s ping, 5 s
// timeout; the server permits 5 s) so a silent peer is detected; a message size bound (16 MiB)
// both ways; at most 16 concurrent streams per connection and a 10 s handshake timeout; blocking
// dials with a 2 s timeout (protoactor's endpoint writer replaces its connection on every failed
// connect attempt without closing it: a non-blocking dial leaked a connection and its reconnect
// loop per attempt while a peer was down; a failed blocking dial is closed by gRPC). Start also
// turns remote.Start's panic on a busy address into an error, and Stop survives the graceful
// shutdown's "send on closed channel" panic (an endpoint reader closing its disconnect channel as
// the manager signals it, when peers stop together) by stopping the gRPC server hard.
//
// Config.Inspect lets the process add message-level identity checks with what the guard knows of
// the peer (its verified certificate): the aggregator binds a node's name to its certificate there.
//
// Deliberate limits: the guard validates envelopes, not message contents (fleet/aggregator
// validates its messages: fleetv1 Validate); remote.Start replaces gRPC's process-wide logger
// (protoactor's behaviour; two remotes in one process race on it, see internal/racecheck). One
// shutdown race Stop cannot prevent from outside protoactor: its endpoint manager sets its
// connection map to nil after unsubscribing from the event stream, while an endpoint writer whose
// peer stopped first may still deliver an EndpointTerminatedEvent to it from a subscriber list it
// copied earlier. Seen once (the read came first: a race report, nothing else); had the read come
// after the nil, that writer's goroutine would have panicked on the nil map as the process exits.
package remotesec
