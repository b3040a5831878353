// Package runner is a cluster member's pod runner: one lifecycle component (internal/lifecycle's
// Start/Stop) that spawns the sharder (cluster/sharder), gives it the pod set (the -f pods, which
// are always in it, and the static pods of --pod-manifest-path as the watcher hands them over:
// SetStaticPods) and carries out its starts and stops on node's pod host (PodOps). It also gives
// -f pods without metadata.uid a UID every member derives alike (ClusterUID).
//
// It owns the sharder actor, the stop goroutines, and the bookkeeping of which instance of each
// pod runs or stops here. It does not own the membership: the list starts it before the runner
// (with AwaitApplied) and stops it after.
//
// # The stop-then-start rule
//
// The sharder may not block, so a stop (up to the pod's grace period) runs on a goroutine, and the
// sharder may start a pod again while its previous instance still stops (its share came back).
// The rule for one pod is a pure table (transition, in rule.go: phases idle, running, stopping,
// restarting; events start, stop, stopDone, startFailed, closing) applied by a pure book; the
// shell (pods.go: a mutex, one goroutine per stop, a WaitGroup) only carries out the effects.
//
// # Invariants
//
//   - Never two instances of a UID here at once: a pod started again while it stops starts once
//     StopPod returned, and not at all if its share went away again meanwhile.
//   - Break before make across members: a pod is reported as stopping (Membership.SetStopping)
//     from the moment its Stop is issued until StopPod returned (the container exited), and the
//     report goes before the sharder acknowledges the view that caused the stop (Membership.Applied,
//     with the membership's AwaitApplied), so a peer that gains the pod starts it only after the
//     container here has exited (cluster/ownership's rule 2).
//   - Nothing starts after Stop began: Stop has the sharder release every pod (it stops them and
//     starts nothing again), then refuses every start, stops whatever the sharder did not release,
//     and returns once every stop finished (or its ctx ended), so the membership, stopped next,
//     announces the leave only when nothing of the share runs here.
//   - Every goroutine ends with its pod's stop, and the sweep's when it ended or Stop cancelled it;
//     Stop returns nil only once all of them have ended and the sharder has stopped.
//
// # Pods an earlier node left, and a planned restart
//
// With Config.Recovered, the pods an earlier node on the same --root-dir left running here are held
// from Start on: reported to the peers as still stopping (with the pods whose stop is under way), so
// no peer starts them while they run here. A held pod the sharder starts is adopted (node's StartPod
// takes over the same containers) and its claim ends; HoldFor after Start, Config.Sweep stops what
// was not adopted and the claims end. A sweep that fails (something may still run) ends no claim:
// it is tried again every HoldFor until one succeeds. Leave (node's SIGUSR2) makes Stop stop no pod: the containers
// run on, within the member's lease, for the next node.
//
// Errors and logs: the sharder's Start gets errRunnerClosed ("node is shutting down") once Stop
// began; a pod set the sharder refuses leaves the previous one in force and is logged ("the
// cluster's pod set was not updated; the previous one stands"); every change of the set is
// logged with its added and removed counts.
package runner
