// Package clusterv1 is the cluster membership wire protocol: the one protobuf message members of a
// probeactor cluster exchange (package cluster/membership), carried by protoactor's remote (gRPC)
// behind remotesec's guard.
//
//	member A                                   member B ("membership" actor)
//	Heartbeat{cluster, address, incarnation,   →  B marks A live until the failure timeout passes
//	          seq, view, leaving}                  without a newer one; A's view is what A claims
//
// Every member sends one to every configured peer each heartbeat interval, and at once when its view
// changes. seq increases per incarnation (a process start, Unix nanoseconds), so a late heartbeat
// (protoactor's remote may deliver queued messages late, see ../../ARCHITECTURE.md "Fleet") never
// moves a peer's view backwards. cluster.pb.go is generated and committed (`make proto`; CI's `make
// proto-check` fails when it is stale).
//
// Values from the wire are untrusted: Heartbeat.Validate rejects what no member sends, naming the
// field; the membership checks the rest against its configuration (cluster name, peer list).
package clusterv1
