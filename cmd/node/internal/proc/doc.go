// Package proc is node's container runtime: every container of a pod is a local process.
//
// It owns, per pod, a pure decision core (podState: kubelet's init-container ordering, sidecars,
// restart policies — kubelet 1.37's container restartPolicy and restartPolicyRules before the pod's,
// internal/restartpolicy — and CrashLoopBackOff back-off, and the v1.PodStatus those imply — phase,
// container states, restart counts, lastState, the Initialized and AllContainersRestarting
// conditions) and a thin shell (podRunner: one
// goroutine per pod that starts and kills processes, arms timers and publishes status changes; the
// rest of the runtime talks to it only through the named messages in pod_messages.go).
// Runtime implements the actor core's Runtime interface: KillContainer for liveness/startup kills and
// RunInContainer for exec probes (run locally with the container's env and working directory).
//
// Every container instance runs under a shim — the node binary re-executed with ShimArg, in its
// own session — which: puts the container in its own process group; is the child subreaper of
// everything the container forks; and, once the container's main process exits, kills and reaps
// every remaining descendant before reporting the exit status. So nothing a container started
// outlives its main process.
//
// Shim protocol. fd 3 carries only the start handshake ("started" with the container's pid, or
// "error"). Before "started" the shim listens on <RootDir>/shims/<container id>.sock (mode 0600, in
// a 0700 directory; bound and dialled through /proc/self/fd/<dir fd>/, so a root dir of any length
// works; the container inherits neither it nor any connection). Everything else goes over one
// connection at a time (a new one replaces the old): node sends TERM, KILL and LEASE lines (a TERM
// carries the kill's grace period, and the shim SIGKILLs the tree when it ends even if node is gone
// by then: a node that dies in a grace period does not stretch it; LEASE: see Cluster lease); the
// shim sends JSON lines, a "hello" on every connect (the pid; whether the main process has exited,
// and its status) and later "exited" (both say Fenced when the lease ended the container). The node
// that started the shim connects right after "started" (until then its end of the shim's stdin
// stands for the connection) and also reaps the shim. When the connection closes without a KILL —
// node died, even by SIGKILL, or Detach — the shim kills the container's tree at once if
// Options.ReattachTimeout is 0 (containers die with node), or keeps it running, its log written,
// for ReattachTimeout counted from the close: a node that connects within it takes over (an exit
// meanwhile is kept and told in the hello, then the shim exits); if none does, the shim stops the
// container as node would (SIGTERM to the group, the pod's grace period, SIGKILL to the group and
// every descendant, setsid'd ones included) and exits. SIGTERM, SIGINT or SIGHUP sent to a shim by
// hand kill its container's tree. Of two stops under way (a TERM, the window's end, the lease's)
// the earlier SIGKILL deadline holds. Every one of these decisions is the shim's pure core
// (shimCore: events in, effects and deadlines out; table-tested, and checked after every step of
// a random simulation: the shim exits only after the container's main process, a pending SIGKILL
// never moves later, a fenced container's SIGKILL is due by the lease's deadline plus its grace,
// none outlives node's connection by more than the window plus the grace); the shim's loop is a
// shell that carries out its effects and arms one timer per deadline.
//
// Cluster lease (fencing). In cluster mode another member starts this node's pods once a time bound
// after its lease passed, whether node is frozen, dead or cut off; so every container is gone by
// then without node's help. Runtime.SetLease (the membership calls it every ~250 ms) turns the
// lease's end into an absolute CLOCK_MONOTONIC deadline — read the clock first, then add the time
// left, so it errs early — which is one instant for node and every shim on the host, however late a
// starved process reads it. Every shim holds it: a new one from its spec (LeaseDeadline, armed
// before the container starts; a deadline already passed and it does not start it), running and
// adopted ones from "LEASE <deadline ns> <grace ns>" lines (grace: the pod's), written by a
// per-instance goroutine that keeps only the latest, so SetLease never waits for a shim. A deadline
// is only ever extended. When it passes, the shim stops the container by itself, connected or not —
// SIGTERM to the group, SIGKILL to the group and every descendant once the pod's grace period has
// passed since the deadline (or when a kill under way ends, if earlier) — and reports the exit with
// Fenced: the container is terminated, reason Fenced ("the node's cluster lease ran out; the shim
// stopped the container"), by the deadline plus the grace period. No renewal undoes it. While
// node's lease has run out, nothing starts (decide's input): a container that would start, first
// start or restart, init and sidecar containers included, waits, Waiting/Fenced ("the node's
// cluster lease ran out: no container of this pod starts here again; the cluster places the pod
// anew"), spending no back-off step, and it stays so for the pod's life here, renewal or not: the
// member that lost its lease stops every pod and starts one again only under a current quorum, and
// a renewal that reached the runtime before that stop must not start what may run elsewhere. Before
// the first SetLease there is no lease and none of this applies. A recovered pod no Run claimed,
// and a shim no record claims, keep the lease an earlier node gave them (if any) until stopped.
//
// What survives node, and when it is written. Per pod, <RootDir>/state/<uid>.json (podRecord):
// the UID, namespace/name, the sha256 of the spec's JSON, the grace period, the pod's start time,
// and per container its restart count, current and previous instance (ID, start, exit), whether a
// sidecar has started, its back-off (delay, last restart, until, last BackOff shown), its shim's
// socket, and the latest readiness and startup results node reported (ProbeResult). It is written
// atomically (temporary file, fsync, rename, fsync of the directory) by the pod's goroutine
// whenever it changed: after every decision (start, exit, restart, back-off) and every probe
// result kept. It is enough because podState is a pure function of those fields and the spec
// (snapshot and restore are a tested pair), and the live part — each running instance — is
// reached through its socket, whose hello says whether it still runs. The record is deleted when
// the pod terminated completely (Terminate, Shutdown, Remove: every process reaped); Detach and
// node's death leave it. A container started after the last write is claimed by no record: it is
// stopped as an orphan.
//
// Lifecycle hooks (hooks.go), as kubelet 1.37's kuberuntime and handler runner. postStart runs
// on a goroutine of its own right after the container started; while it runs, decide starts
// nothing of the pod (its input postStart; and a container with a postStart hook is the last start
// of a plan), as kubelet's SyncPod waits for the hook before it starts the next container; a
// failed one is the event FailedPostStartHook and a kill. Every kill (beginKill) with a grace
// period runs preStop first: SIGTERM goes when it ends (hookDone) or when the grace period has
// passed (preStopTimedOut), whichever is first, with the grace period less the whole seconds the
// hook took, at least the 2 s floor. A hook is cancelled when its instance exits, when a kill
// begins during postStart, and at Detach; exec hooks run as exec probes do (probes.RunLocal, the
// container's env and directory, the guard) with no timeout of their own, httpGet hooks are
// probes.HTTPHook, sleep hooks wait on the injected clock. Stops node does not make (the shim's
// window or lease, an earlier node's replaced instances) run no preStop.
//
// activeDeadlineSeconds is decide's too (decideDeadline, kubelet's activeDeadlineHandler): decide
// wakes at the pod's start time plus the deadline; past it the pod is Failed, DeadlineExceeded
// (status reason and message, one Normal event on the pod), every running container is stopped and
// none starts again, unless the pod had Succeeded already. The start time is in the record, so a
// restarted node keeps the same deadline.
//
// Termination messages (termination.go), as kubelet's: at an instance's exit, what it wrote to its
// terminationMessagePath, else (FallbackToLogsOnError, a failed exit that is not a StartError) its
// log's tail; kubelet's bounds (4 KiB, 80 lines and 2 KiB, 12 KiB per pod). node mounts nothing:
// the path is read on the host (relative: under workingDir), and only when the file differs from
// what the instance found at its start (size and modification time), so a file left by an earlier
// run or another process is not this run's message. The message is kept in the pod's record.
//
// Re-adoption. Start reads the records; one that cannot be used is logged once (error, its path
// and why) and its containers become orphans (sockets no valid record claims). Run of a recorded
// UID with the same spec hash adopts: running instances are attached (same container ID, start
// time, restart count, lastState and log file; no new process, no Started event; reported Ready
// and Started as last recorded, KEP-4781), an instance that exited meanwhile is applied as any
// exit (the carried back-off follows), one whose shim is gone ended unseen (exit 137,
// ContainerStatusUnknown). With another hash the old instances are stopped (SIGTERM, the recorded
// grace, SIGKILL), the record deleted, and the pod starts afresh. StopOrphans stops every
// recovered pod no Run claimed (its grace period) and every unclaimed shim (30 s) and deletes
// their records; recovered pods are not listed by Pods.
//
// RestartAllContainers (KEP-5532, kubelet 1.37). A container whose exit code matches its rule
// with action RestartAllContainers (not while the pod terminates) marks the pod: the
// AllContainersRestarting condition turns True (RestartAllContainersStarted), every running
// container is killed (Killing "killing", grace 0: kubelet's 2 s floor, then SIGKILL), and once none
// runs every container that ran is removed as kubelet removes it — Waiting, RestartingAllContainers,
// no container ID, lastState kubelet's stand-in (exit 137, RestartingAllContainers), its restart
// counted — and the pod starts again from its first init container, without back-off; the
// condition turns False. Until then the phase stays Running (the removed containers count as
// restarting). kubelet kills the containers one after another, node all at once. The state is in
// the pod's record, so a node restarted in the middle carries on.
//
// Logs. Opening a run's log (<RootDir>/pods/<pod>/<container>/<restartCount>.log) is part of starting
// it, as with containerd ("failed to create container loggers"): when node cannot open it — out of
// descriptors, a read-only or missing root, something else in the way — that run is not started
// (terminated StartError, exit 128, a Failed event "Error: open container log: …") and is retried
// with the CrashLoopBackOff back-off; no other container is touched. Once running, a container
// writes into a pipe its shim copies to the log, which the shim alone holds open: output the log
// refuses (disk full, I/O error) is dropped and the container never sees a write fail, as with
// containerd's shim, and nothing that happens to node's own descriptors reaches a running
// container. The shim reports the exit only once the last output is in the log (waiting at most
// 1 s for it).
//
// Exec probes run with probes.RunLocal (Pdeathsig kills the command if node dies) plus a guard: one
// helper process, the node binary re-executed with GuardArg and started with the first exec probe,
// told each running probe's process group on its stdin; at end-of-file (Stop, or node's death) it
// SIGKILLs the groups still listed, so what a probe command forked dies with node as well.
// A group is told only once its command has started, so node's death in that instant (between the
// fork and one pipe write) leaves what the command forks to Pdeathsig's limit: the command dies,
// its children do not.
//
// Pod events. Subscribe is the one place node's parts learn of pods: each pod's start (Run), every
// change of its status, and its removal (Remove), delivered synchronously to every subscriber in
// subscription order. A status reaches the subscribers before the tree's push (ReportStatus): the
// status page's history must know a new container ID before the tree probes it.
//
// Lifecycle: Runtime is a lifecycle.Component. It runs from New on; Start reads what an earlier
// node left (see Re-adoption); Stop ends the exec-probe guard. Pods are not the runtime's to stop
// at Stop: whoever ran them terminates them first (Shutdown, Remove), or leaves them to the next
// node (Detach: every shim connection closed without a KILL, every pod goroutine and timer
// ended, the records kept; a shim this runtime started is still reaped when it exits).
//
// Invariants: only a pod's own goroutine touches its podState, processes and timers; status is
// published (to the subscribers, then to the function ReportStatus gave it: the tree's
// SetPodStatus) only when it changed; a pod's events are published in order: PodStarted, its
// statuses, PodRemoved; a sidecar with a startup probe counts as started when StartupSucceeded
// says so (node feeds it from a subscription to the tree's startup results; nothing polls);
// container IDs ("proc://<random hex>") are new on every start; time comes from the injected
// clock, so back-off and grace periods are testable without waiting (the shim's re-attach window
// runs on real time: it must outlive node); Shutdown returns only after every process of every pod
// has been reaped; Stop reaps the guard; a pod's record on disk is never older than its last
// start (a later start is only a possible orphan); no container outlives the re-attach window
// without a node; once SetLease was called, no container outlives node's cluster lease by more
// than its pod's grace period (its shim's deadline, not node, ends it), none starts while the
// lease has run out, and a lease is only ever extended.
package proc
