// Package fleetv1 is the fleet wire protocol: the protobuf messages that cross a process boundary
// between a node's uplink (package fleet/uplink) and the fleet aggregator (package
// fleet/aggregator), carried by protoactor's remote (gRPC), and the conversions to and from the
// project's Go types.
//
// Only what crosses a process boundary is defined here (fleet.proto); everything inside a process
// stays a plain Go struct in package messages. fleet.pb.go is generated and committed: `make proto`
// regenerates it (Debian's protoc driving protoc-gen-go at the version go.mod pins) and CI's `make
// proto-check` fails when it is stale.
//
// The protocol, per node session:
//
//	uplink                                 aggregator
//	Hello{node, incarnation, address}  →   Welcome{aggregator incarnation}
//	Changes{seq=n, snapshot=true, …}    →   Ack{n, APPLIED}           (replaces the node's view)
//	Changes{seq=n+1, delta}             →   Ack{n+1, APPLIED}
//	Heartbeat (while idle)              →   Ack{last seq, APPLIED}
//
// seq increases by one per batch within an incarnation (a process start); the aggregator applies a
// delta only on top of seq-1 and answers RESYNC otherwise, so a lost, late or replayed batch never
// moves a key backwards (DUPLICATE for seq it already has, STALE for an older incarnation).
//
// A pod's status travels as bytes in Kubernetes' own protobuf encoding (v1.PodStatus.Marshal),
// ~300 bytes for a running single-container pod; PodMeta carries the pod's labels (clients select
// the fleet's pods by them), the few spec fields a pod list needs (names, images, sidecars) and
// each container's probes (v1.Probe in the same encoding, ~40 bytes each, for node describe from
// the aggregator), not the spec. A node's own v1.Node (its
// /nodes, less its conditions) travels the same way, in a snapshot and when it changes. Values from
// the wire are untrusted: ToResultChanged, ToPod and the Validate methods reject what no node sends,
// naming the field.
package fleetv1
