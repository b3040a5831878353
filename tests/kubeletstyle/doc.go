// Package kubeletstyle is the baseline of the architecture study: kubelet's prober subsystem written the
// way kubelet writes it (../shared/spec/kubelet-prober.md §1, §2, §5), from the spec and independently of
// the actor core, so that tests/conformance and tests/bench compare equals. Its doProbe is kubelet
// 1.37.2's: a terminated container's worker keeps going by the container's restart rules and policy
// (internal/restartpolicy, the one pure rule both implementations read, checked against upstream in
// tests/upstream), and a container that started more than 10 s before the manager gets no initial
// value.
//
// What it owns and how it is built (deliberately kubelet-shaped):
//   - probeManager: a sync.RWMutex-guarded map[probeKey]*worker; AddPod starts one goroutine per
//     worker (go w.run()); stop() is a non-blocking send on a 1-slot channel; workers remove themselves.
//   - worker: one goroutine and one time.Ticker each, running kubelet's doProbe step by step (status
//     lookup, container ID change, hold, non-running, deletion, initial delay, startup gating, probe,
//     run counting, thresholds, Set, hold); a panic in the prober is recovered and the worker continues
//     (kubelet's HandleCrash).
//   - resultsManager ×3 (liveness, readiness, startup): sync.RWMutex + map + a 20-slot updates channel
//     with a blocking send outside the lock, only on change.
//   - statusManager: the cached pod status (runtime view + probe overlay of kubelet's UpdatePodStatus),
//     SetContainerReadiness / SetContainerStartup, and the ContainersReady / Ready conditions. As in
//     kubelet (generateAPIPodStatus before statusManager.SetPodStatus), SetPodStatus triggers a
//     readiness worker before it stores the status, so the triggered doProbe may still read the
//     previous one and probe only at its next tick: kubelet's race, kept, and tolerated by the
//     conformance scenarios.
//   - syncLoop: one consumer goroutine draining the three updates channels (syncLoopIteration), writing
//     readiness/startup into the statusManager and asking the runtime to kill a container whose
//     liveness or startup result became Failure (kuberuntime's computePodActions), in the background.
//
// Invariants: every goroutine has an owner and ends in Stop (workers, the consumer, kill calls); Stop
// returns only when all of them have ended. Time is real time (time.Now, time.NewTicker) exactly as in
// kubelet; tests make it deterministic by running inside a testing/synctest bubble.
//
// Deviations from kubelet, all needed to stop cleanly or to measure, none visible in behaviour:
//   - a blocking results send also gives up when the whole subsystem stops (kubelet never stops);
//   - OnUpdate lets a study harness observe what the consumer receives (a slow OnUpdate is a slow
//     syncLoop, exactly the situation the fan-out benchmark studies);
//   - the "pod manager" is the set of pods given to AddPod / SetPodStatus;
//   - JitterWindow (0 by default: kubelet's rule) lets the benchmarks jitter every worker's first
//     probe, as the actor core's WithStartupJitterWindow does, so both designs get one schedule.
package kubeletstyle
