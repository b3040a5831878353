// Package demo is node's embedded demo: a pod whose containers are copies of the node binary
// itself (the hidden `__demo` subcommand) serving HTTP, gRPC and TCP health endpoints whose answers
// follow a script, so that within about 30 seconds a first run shows a startup probe holding back
// liveness and readiness, readiness going false and true again, a liveness failure with a restart,
// and all four probe kinds (HTTP, TCP, gRPC, exec).
//
// Invariants: the script is a pure function of the time since the container started (table-tested);
// the liveness failure happens once per demo run (a marker file in the container's working
// directory, written at the first unhealthy answer, even when that is the container's first), so the
// restarted container stays healthy and the demo settles. A demo container's serve returns only once
// every server and goroutine it started has ended, also when one of its ports cannot be opened
// (goleak guards the package's tests).
package demo
