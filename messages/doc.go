// Package messages holds the plain value types that travel between probeactor's actors: commands
// (imperative: AddPod, SetResult, KillContainer), events (past tense: ResultChanged, PodStatusChanged)
// and request/response pairs (GetResult → ResultResponse).
//
// Every type's doc comment says who sends it to whom. Messages are values: a sender never mutates a
// pointer it has sent (pods and statuses are deep-copied at the edge by whoever builds the message),
// and receivers treat them as read-only.
//
// This package imports only the Kubernetes API types; it never imports protoactor or hclog, so that
// probes, tests and embedders can use the vocabulary without the actor runtime.
package messages
