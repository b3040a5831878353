// Package proc is node's container runtime: every container of a pod is a local process.
//
// It owns, per pod, a pure decision core (podState: kubelet's init-container ordering, sidecars,
// restart policies and CrashLoopBackOff back-off, and the v1.PodStatus those imply — phase, container
// states, restart counts, lastState, the Initialized condition) and a thin shell (podRunner: one
// goroutine per pod that starts and kills processes, arms timers and publishes status changes; the
// rest of the runtime talks to it only through the named messages in pod_messages.go).
// Runtime implements the actor core's Runtime interface: KillContainer for liveness/startup kills and
// RunInContainer for exec probes (run locally with the container's env and working directory).
//
// Every container instance runs under a shim — the node binary re-executed with ShimArg — which:
// puts the container in its own process group; is the child subreaper of everything the container
// forks; obeys TERM/KILL lines on its stdin, and treats end-of-file (node exited, even by SIGKILL)
// as KILL; and, once the container's main process exits, kills and reaps every remaining
// descendant before reporting the exit status. So nothing a container started outlives it, or node.
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
// Lifecycle: Runtime is a lifecycle.Component. It runs from New on (Start does nothing); Stop ends
// the exec-probe guard. Pods are not the runtime's to stop at Stop: whoever ran them terminates
// them first (Shutdown, Remove).
//
// Invariants: only a pod's own goroutine touches its podState, processes and timers; status is
// published (to the subscribers, then to the function ReportStatus gave it: the tree's
// SetPodStatus) only when it changed; a pod's events are published in order: PodStarted, its
// statuses, PodRemoved; a sidecar with a startup probe counts as started when StartupSucceeded
// says so (node feeds it from a subscription to the tree's startup results; nothing polls);
// container IDs ("proc://<random hex>") are new on every start; time comes from the injected
// clock, so back-off and grace periods are testable without waiting; Shutdown returns only after
// every process of every pod has been reaped; Stop reaps the guard.
package proc
