// Package podhost is the set of pods node runs, over its two halves: the probe tree (actors) and
// the process runtime (proc). It is kubelet's pod lifecycle as node has it: a pod joins the tree
// before its containers start and leaves it once they are gone; stopping node terminates every
// pod the way kubelet's SyncTerminatingPod does (liveness and startup probes stop, containers are
// killed with their grace periods while readiness goes on probing, then the workers go).
//
// Three things run pods through a Host: its own Start (the -f pods, all or none), the static pod
// watcher (StartPod, StopPod) and the cluster's pod runner (the same two). Housekeeping is
// kubelet's housekeeping loop: every HousekeepingPeriod the tree, and whatever else keeps per-pod
// state (the status page's recorder), forget every pod the runtime no longer runs.
//
// Orphans sweeps what an earlier node left that no source claims, once every source was read
// (kubelet's sourcesReady). Host also answers what node's HTTP API and fleet link ask (Pods, View,
// LogPath, Events).
//
// Invariants:
//   - A pod is in the tree whenever it is in the runtime: StartPod adds it to the tree first and
//     takes it out again when the runtime refuses it; housekeeping, which removes from the tree
//     what the runtime does not run, holds the same lock, so it never sees a pod half-started.
//   - Stop terminates every pod the Host started that still runs, within the deadline of the
//     longest grace period among them (StopTimeout: twice it plus 10 s, apps then sidecars).
//   - No pod starts after Stop began (the runtime refuses it).
//   - Nothing an earlier node left is stopped before every pod source has been read successfully
//     once (Orphans' seen): a source that cannot be read yet may still claim it.
package podhost
