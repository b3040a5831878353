// Package killrecord is the pure core of the probe tree's syncLoop: which pods it knows (with the
// syncLoop's copy of each), and which container ID it last killed per container. It decides whether a result change asks for a kill
// (Book.Result) and whether a kill goes ahead when it is performed, at once or when the restart
// budget lets it through (Book.Take). No actor, clock, goroutine or I/O: the syncLoop's shell
// (actors/syncloop.go) turns each message into a call and performs what it gets back (the runtime's
// KillContainer in the background, the Killing event, the log lines, the restart budget's gate).
//
// It mirrors kubelet 1.37's sync loop for liveness and startup results (pkg/kubelet/kubelet.go
// syncLoopIteration → handleProbeSync, pod workers → SyncPod → computePodActions → killContainer):
// a Failure of a pod the pod manager does not know is an "irrelevant update" and is ignored, and a
// container is killed for the Failure of its current container ID. kubelet keeps no record of what
// it killed (SyncPod reads the runtime's state, where a killed container no longer runs); the tree
// kills from result changes instead, so it keeps one.
//
// Invariants:
//   - Only a Failure asks for a kill (Result); any other result asks nothing.
//   - A Failure asks for a kill only when its pod is known: added (Add) and neither removed (Remove)
//     nor left out of a cleanup (Cleanup) since.
//   - A container ID is killed at most once while its pod is known: a liveness and a startup Failure
//     of the same container ID, or a repeat, take one kill. Result only asks; Take decides again
//     and records the kill, so a kill that waited (for the restart budget) is refused if its pod
//     was forgotten or its container ID killed meanwhile.
//   - One entry per container (pod UID and container name): the container ID last killed. A new
//     container ID of the same container is killed again on its own Failure; a late Failure of an
//     even older ID is not remembered as killed either and asks again (the runtime ignores a kill
//     of a container ID that no longer runs).
//   - Adding a known pod again keeps its record; forgetting a pod drops its record with it, so a
//     pod added again after that starts with none.
//
// Not safe for concurrent use: the syncLoop calls it from its Receive only.
package killrecord
