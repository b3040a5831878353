// Package restartpolicy is kubelet 1.37.2's answer to "is this exited container restarted?", with
// ContainerRestartRules and RestartAllContainersOnContainerExits on (their defaults): a container's
// own restartPolicy and restartPolicyRules (KEP-5307) before the pod's restartPolicy, and the rule
// action RestartAllContainers (KEP-5532) that restarts the whole pod in place. Written from
// pkg/api/v1/pod (ContainerShouldRestart, FindMatchingContainerRestartRule,
// AllContainersCouldRestart) and pkg/kubelet/container (ShouldAllContainersRestart); the
// differential suite (tests/upstream) checks them against those functions.
//
// Node's restarts and pod phase (cmd/node/internal/proc) and the probe workers' keep-going after
// termination (actors/internal/worker) read the same functions, so the three agree.
//
// With either gate off, the fields these rules read are refused before a pod runs (internal/podspec
// ValidateGates), so answering as with both gates on gives kubelet's gate-off answer too: with no
// container restartPolicy and no rules, ShouldRestart is the pod's restartPolicy.
//
// Pure functions of the spec (and, for AllRestarting, the status): no clock, no I/O, no allocation.
package restartpolicy
