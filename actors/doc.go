// Package actors is kubelet 1.37.2's container prober (prober manager, workers, results managers,
// status manager and the sync loop's probe reactions) rebuilt as a tree of protoactor actors that
// embeds in any Go program:
//
//	root (Tree)                 owns the tree and its executor (actors/internal/exec: shards, each a
//	                            scheduler from internal/clock, a mailbox pool and an attempt pool)
//	├── probeManager            supervisor: one worker per ProbeKey, named "<uid>.<container>.<type>"
//	│   └── worker × N          worker.Machine in a switch-only shell; attempts run off the mailbox
//	├── resultsCache            results.Cache: dedup per (container ID, type), credit-based fan-out
//	├── statusManager           podstatus rules: Ready/Started overlay, conditions, views → probeManager
//	└── syncLoop                liveness/startup Failure → Runtime.KillContainer (in the background)
//
// # Public API
//
// Build a Runtime, then Start the tree under the caller's sys.Root or any actor WithRuntime(rt): Start
// hands the runtime the tree's SetPodStatus (Runtime.ReportStatus), so the wiring is one-way. Tree's
// methods are the only way in (the root's PID is private, so nothing bypasses its ordering): AddPod
// (validated and defaulted as the API server would: package internal/podspec, plus the runtime's
// own limits through PodValidator; a refused pod gets the field paths and starts nothing),
// SetPodStatus, StopLivenessAndStartup, RemovePod, CleanupPods, the queries PodStatus, PodStatuses
// (many pods in one request), Result, ProbeStates (each worker's streak, last attempt and hold:
// node describe) and ContainerStartups (each container's time to Started and to Ready), Check (each
// of the tree's own actors answers through its mailbox: a health check), and Stop. Result changes reach an actor (Subscribe; it
// replies messages.AckResults to each batch) or a func (SubscribeFunc; probeactor acknowledges when
// fn returns); both take OfTypes and WithSnapshot
// (the current value of every key first, then changes). The implementation (worker core, results
// cache, supervision strategy, worker set, status book, pod record, the private protocol) lives in
// actors/internal; actors/fakeruntime is a deterministic runtime for tests and actors/logging routes
// protoactor's slog into hclog.
//
// Logging: pass WithLogger; the tree logs through named subsystems (probeactor.probeManager,
// probeactor.worker with pod/container/probe bound once, ...) and logs panics with stacks. To route
// protoactor's own slog output into the same logger, build your ActorSystem with
// logging.SystemOption(log) (package actors/logging).
//
// # Invariants
//
//   - Decisions live in pure cores (worker.Machine, workerset.Set, statusbook.Book, results, podstatus);
//     Receive methods only turn messages into events and perform effects. No code here calls
//     time.Now, time.Sleep or the global rand: the clock and the jitter source are options.
//   - One copy of each pod and status: the Tree deep-copies a pod on AddPod and a status on
//     SetPodStatus (a pod on SetPodStatus only until AddPod gave it), and every actor shares these
//     copies read-only; messages are read-only by contract. statusManager keeps the status copy's
//     fields without the 384-byte v1.PodStatus around them (unless a rarely set one is set), the
//     probe adjustment as flags and condition times, and builds a full status only for a query.
//   - probeManager's goroutine only spawns: Tree.AddPod lists the pod's probes and builds their
//     workers on the caller's goroutine, the AddPod messages hand them over, and probeManager gives
//     each its container's view and spawns it (or drops it, for a key that has a worker). Every
//     worker's spawn passes through that one goroutine, the stage that bounds a large tree's set-up.
//     These workers are the one thing a message hands over rather than shares: the actors it passes
//     through before probeManager (root, syncLoop, statusManager) do not touch them.
//   - A worker at rest holds no goroutine, no attempt slot and exactly one scheduler entry; at most
//     one attempt per worker is in flight, in a goroutine the worker cancels and waits for when it
//     stops or fails.
//   - No lock on a probe's path is shared by the whole tree: each worker lives on one shard of the
//     tree's executor (dealt in turn; one shard per two procs), whose scheduler, mailbox pool and
//     attempt pool serve only that shard's workers (package actors/internal/exec has the execution
//     layer and its model test).
//   - A worker's mailbox (actor.WithMailbox) is part of the worker and runs on its shard's mailbox pool
//     (fixed goroutines); the shard's scheduler hands a due tick to the shard's attempt pool, whose goroutine
//     carries it through the worker's mailbox when it is free, runs the attempt the worker starts,
//     then carries the verdict back the same way: one hand-off between goroutines per probe. System
//     messages (which may block: a stopping worker waits for its attempt) are left to the mailbox
//     pool. The worker's own signals (tick, attempt finished) skip protoactor's invoker.
//   - The pools are owned by the tree and stopped with it; scheduling never blocks (a full or
//     stopped pool falls back to a new goroutine); the attempt pool keeps idle goroutines only up to
//     a bound and for at most two idle seconds, hands work to the most recently idle one first (LIFO,
//     so the goroutines a steady load does not need retire; an idle goroutine waits on its own channel
//     only, and one sweep timer per pool retires the ones idle for one to two seconds), and when all of its
//     goroutines are busy an attempt waits at most 1 ms (exec.BacklogWait) for one before it gets a new one.
//   - An attempt reads the clock once, when it ends; the worker's Machine times it from the start of
//     the doProbe run that started it (kubelet's startTime) and handles its verdict as of its end. Each of the tree's own
//     actors (but the root) has a long-lived goroutine for its mailbox.
//   - Workers are supervised with back-off and resumed, not re-created (supervision.Resume): their
//     mailbox turns the resume into a restart of the worker's run loop before any queued message.
//     The root supervises its four children with the same back-off but never gives up on them: a
//     tree whose cache or status manager was stopped would accept pods and publish nothing.
//   - Workers learn container state by push (statusManager → probeManager → worker), never by query.
//     Every live worker holds its container's latest view at rest: a new worker starts with the view
//     attached to its AddPod, and every later change is pushed for every probed container of the pod,
//     whatever statusManager's count of workers says at that moment (that count can lag: see below).
//   - statusManager's count of workers matches probeManager's at rest: it counts an AddPod's keys
//     before forwarding it, and probeManager's reports of its worker keys (ProbeWorkers) go through
//     resultsCache, behind the last results of the workers they remove, and again after an AddPod
//     that follows a report. TestTreeStress checks this under concurrent use of the Tree API.
//   - Nothing blocks on a subscriber: the results cache keeps at most one unacknowledged batch per
//     subscriber and coalesces the rest to the latest value per key.
//   - Tree.Stop (PoisonFuture on the root; once, later calls return the first result) returns only
//     when every actor, attempt goroutine, kill goroutine and scheduler timer of the tree is gone.
//   - Shutdown leaves no dead letters: actors send to each other only through env.tell/ask, the one
//     place that knows the rule "a stopping tree sends nothing"; the stopping root sets the flag and
//     waits until each child has finished its current message (actor.Touch round trip), so no child
//     sends to a sibling that protoactor already stopped; probeManager is the only one that stops
//     workers, once each. The tests fail on any dead letter.
//   - A message an actor of the tree does not understand is never dropped silently: it is counted in
//     probeactor_unhandled_messages_total{actor,type} (with WithRegistry) and logged once per actor
//     kind and type. protoactor's lifecycle messages are not "unhandled".
//   - SubscribeFunc's goroutine ends with its ctx (after the cache dropped the subscription) or with
//     the tree; its sends from outside the tree happen only while the root is not stopping (the same
//     rule as env.tell, ordered by env.outside), so it leaves no dead letter; Tree.Stop waits for it.
//   - Start waits for the root's Started without a timer (it is the first message the root handles).
//   - Queries (Tree.Result, Tree.PodStatus) end with the caller's ctx (10 s without a deadline) and
//     leave no goroutine or timer behind.
//   - statusManager mirrors only the results of containers its pod status currently lists; the
//     results cache queues at most one change per live key per subscriber, with O(1) Remove.
//
// # kubelet 1.37.2, and its feature gates
//
// The tree follows kubelet 1.37.2 with its default feature gates; it takes no gates of its own (the
// embedder, like node, decides them: ValidatePod of a PodValidator runtime refuses the fields of
// gates that are off, and probes.WithFeatureGates the probe protocols). What changed since 1.33
// (docs/kubelet-1.37.md lists every row):
//   - A terminated container's worker keeps going while the container restarts by its own
//     restartPolicy and restartPolicyRules, else the pod's (ContainerRestartRules, KEP-5307), or
//     while the pod restarts all its containers in place (RestartAllContainersOnContainerExits,
//     KEP-5532: the runtime's status carries the AllContainersRestarting condition or a terminated
//     container whose exit code a RestartAllContainers rule matches).
//   - A container that started more than 10 s before the tree gets no initial result: it keeps
//     what it had until a probe reaches a threshold (ChangeContainerStatusOnKubeletRestart, off).
//   - A liveness or startup kill restarts the container unless its own restartPolicy, when it has
//     one, else the pod's, is Never (kuberuntime's computePodActions with ContainerRestartRules).
//   - AddPod continues past keys that already have a worker, as kubelet 1.37 does (no longer a
//     deviation), and workers keep probing while the pod terminates gracefully until RemovePod
//     (kubelet 1.37 detaches the workers' context from the pod's sync for the same effect).
//   - AddPod accepts the 1.37 fields (container restartPolicy and restartPolicyRules,
//     httpGet.protocol, grpc.mode) with the API server's validation (internal/podspec).
//
// # Deviations from kubelet (1.37.2), on purpose
//
//   - AddPod validates and defaults the pod as the API server would (kubelet trusts the API server):
//     a pod it refuses (for example probes on a regular init container, which kubelet would skip)
//     starts nothing and the caller gets the field paths. Defaults go into the tree's copy only.
//   - StopLivenessAndStartup also stops sidecars' liveness and startup workers (PR #141766).
//   - An attempt whose container was replaced while it ran is discarded (kubelet's doProbe is
//     synchronous and cannot observe this).
//   - A manual readiness trigger that arrives while a run is busy also absorbs a pending periodic
//     tick (kubelet's ticker.Reset keeps an already-buffered tick and may probe twice back to back).
//   - statusManager recomputes the probe adjustment on every change instead of patching it with
//     SetContainerReadiness/Startup; the resulting status is kubelet's steady state. It runs on
//     every runtime status push, every readiness/startup change and every worker-set change, and
//     sends kubelet's manual readiness triggers each time (kubelet: on every status generation).
//     It reads a pod's spec from the latest AddPod (kubelet's pod manager), not from SetPodStatus.
//   - A panicking prober or worker is restarted by probeManager with exponential back-off
//     (actors/internal/supervision) and keeps its counters and cached result; after too many failures the key
//     reports Unknown with a ProbeWorkerGaveUp warning event (kubelet swallows the panic).
//   - statusManager registers the workers AddPod will create before they start, so a container the
//     runtime already reported running is not "started" for lack of a startup worker (kubelet
//     avoids this only because it starts containers after AddPod).
//   - The sync loop kills a container directly through Runtime.KillContainer with kubelet's Killing
//     event and grace period (kubelet re-syncs the whole pod); it kills each container ID at most once.
//   - Result updates never block a worker: kubelet's results managers push into a channel of 20 and
//     the 21st Set blocks the worker until the sync loop drains it; here subscribers are
//     flow-controlled (one unacknowledged batch each) and pending changes coalesce per key.
//   - A restarted worker (after a panic and its back-off) probes at once instead of waiting for its
//     next tick.
//   - A probe attempt that errored (the prober failed after its 3 tries) counts
//     prober_probe_total{result="unknown"}; kubelet counts nothing for it (issue 10 asks for it).
//   - A container the tree first sees running and reported Ready (or Started) by the runtime keeps
//     that (kubelet 1.35+ after its own restart, KEP-4781 with ChangeContainerStatusOnKubeletRestart
//     off, its default since 1.35; 1.30–1.33 report it not ready and, with a startup probe, not
//     started until its probes pass again). The trigger is exact: a container status with
//     State.Running set and Ready true (readiness) or Started true or Ready true (startup: only a
//     started container is ever ready) for a container ID with no readiness (startup) result yet.
//     The rule is one pure function, worker.Adopted, read by both cores: statusbook takes it as the
//     result until the worker's first publish, so /pods reports the container ready and started
//     from the first status, with no manual trigger, and liveness is not held back by startup;
//     worker.Machine publishes Success (not Failure/Unknown) when it first sees the container ID,
//     with its success/failure streaks at zero, so nothing flaps and a later probe result (a
//     readiness Failure after FailureThreshold consecutive failures) changes it as usual; the
//     startup probe does not run for a started container. A runtime reports Ready or Started only
//     for a container it took over (node's process runtime reports Ready and Started false
//     for every container it starts), so a fresh container is unchanged. Kubelet differs in what it
//     trusts and keeps: the previous API status (Started of a running container; Ready only for a
//     container started 10 s before kubelet and a pod whose Ready condition was True), no result
//     until a probe reaches a threshold, and a manual readiness trigger on every status generation
//     meanwhile; here the readiness probe runs at its period, after the start-up jitter.
//   - With the real clock, deadlines are rounded up to a 1 ms grid (clock.DefaultResolution), so a
//     probe may start up to ~2 ms after its period (kubelet's per-worker ticker: ~0.1 ms).
//   - WithStartupJitterWindow (off by default) extends kubelet's restart jitter, which covers the
//     workers created within one period of the start, to those created within the window.
package actors
