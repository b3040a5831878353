// Package worker holds the pure core of a probe worker, with no actor system, clock or goroutine:
// Machine, kubelet's per-key worker (doProbe, spec §2.4), its run-loop timing (§2.2: start-up
// jitter, period, manual trigger) and the bookkeeping of the actor that hosts it, as one state
// machine in etcd raft's Step/Ready shape; and RunProbe, kubelet's prober wrapper (§3.1).
//
// It follows kubelet 1.37.2 (pkg/kubelet/prober/worker.go).
//
// The actor shell in package actors turns each message into an Event (Started, Tick, Trigger,
// View, Done, Panicked, Restarting, Stopping), calls Step, and performs the Ready it gets back, in
// order: cancel the attempt in flight, write the results cache, record events and the metric
// observation, re-arm or stop its one timer, start an attempt, ask to be stopped. The shell keeps
// no decision state of its own.
//
// Invariants:
//   - Step never reads a clock (every Event carries its time) and allocates nothing.
//   - At most one attempt is in flight, and only Machine knows whether one is: an attempt is known
//     by its number, and a Done or Panicked of any other number (an attempt abandoned by a restart,
//     a duplicate) is stale and ignored; so is a Tick before the armed deadline (the timer was
//     re-armed after it fired) or after the timer was stopped.
//   - A result is written only for the container ID the Machine tracks, and only when it changes
//     what the cache holds for the key (kubelet's cache drops repeats; dropping them here saves the
//     message). An attempt that ran while the container was replaced is discarded (deviation from
//     kubelet, whose doProbe is synchronous and cannot observe a restart mid-attempt).
//   - A new container ID gets InitialValue, except an adopted one (Adopted: running and reported
//     ready or started by the runtime, as node reports the containers it re-adopts after its own
//     restart), which gets Success with the streaks at zero (kubelet 1.35+, KEP-4781), and one
//     that started more than RestartGrace (10 s) before the tree (TakenOver: kubelet 1.37's isRestart
//     with ChangeContainerStatusOnKubeletRestart off), which gets nothing: it keeps what it had
//     until a probe result reaches a threshold. statusbook reads the same rules before the
//     worker's first publish, so both agree.
//   - A terminated container's worker exits only when neither its restart rules and policy, else
//     the pod's restartPolicy (internal/restartpolicy.ShouldRestart), restart it, nor the pod is
//     restarting all its containers (ContainerView.AllRestarting): kubelet 1.37's doProbe with
//     ContainerRestartRules and RestartAllContainersOnContainerExits on (a sidecar's restartPolicy
//     is Always, so its worker keeps going).
//   - A restart (Restarting, then Started) keeps the run counters, the hold and the tracked
//     container, abandons the attempt in flight and probes at once.
//   - An attempt that errored (the prober failed after its tries) is discarded, as kubelet does, and
//     counted as prober_probe_total{result="unknown"} (deliberate deviation: kubelet counts nothing
//     for it; probe errors are the prober's own failures, issue 10).
package worker
