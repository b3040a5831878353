// Package podstatus holds kubelet's pure pod-status rules that probing feeds: UpdatePodStatus
// (spec §5.1: container Started/Ready from probe results and worker existence, manual readiness
// triggers), SetContainerReadiness/SetContainerStartup (§5.2) and condition generation (§5.3:
// ContainersReady, Ready, Initialized, lastTransitionTime only on a status change).
// tests/upstream TestConditionsAreKubelets holds the three generators to kubelet 1.37's own
// (pkg/kubelet/status), down to kubelet reading "no statuses" from append(init, app...) == nil.
//
// Nothing here reads a clock or talks to an actor; callers pass now and a Probes view. The
// statusManager actor and the node helper both use it.
package podstatus
