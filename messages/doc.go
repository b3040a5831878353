// Package messages is probeactor's public vocabulary: what an embedder reads and answers. Probe
// identity and verdicts (ProbeType, ProbeKey, ContainerID, Result), the result changes a subscriber
// receives and acknowledges (ResultChanges of ResultChanged, AckResults), the kill request a Runtime
// receives (KillContainer) and the events an EventSink receives (Event).
//
// The probe tree's own protocol (results published by workers, container views, readiness
// triggers, queries) is private to package actors; the only way to drive the tree is its Tree type.
//
// Every type's doc comment says who sends it to whom. Messages are values: a sender never mutates a
// pointer it has sent (pods and statuses are deep-copied at the edge by whoever builds the message),
// and receivers treat them as read-only.
//
// This package imports only the Kubernetes API types; it never imports protoactor or hclog, so that
// probes, tests and embedders can use the vocabulary without the actor runtime.
package messages
