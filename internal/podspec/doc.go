// Package podspec is what the API server would do to a pod before kubelet sees it, for the rules
// probing depends on: SetDefaults fills the defaults (namespace, restart policy, grace period, every
// probe's fields), Validate refuses what the API would refuse (names, restart policies and kubelet
// 1.37's container restart rules, grace period, container names, env entries, every probe), each
// problem naming its field path in the API server's words
// ("spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal
// to 1"; tests/upstream TestValidationIsTheAPIServers and TestDefaultsAreTheAPIServers hold both to
// the API server's v1 defaults and ValidatePodCreate). Both the probe tree's AddPod and node's
// manifests (node validate, node run, static pods) use it, so a pod is accepted or refused the same
// way everywhere.
//
// Feature gates: Validate accepts every field kubelet 1.37 knows (the API server with every gate on);
// ValidateGates refuses the fields whose gate is off (features.Gates), and SetGatedDefaults fills
// the defaults a gate adds. node applies both with its --feature-gates; the probe tree, which takes
// no gates, only Validate (its embedder, like node, decides the gates).
//
// Invariants: pure functions of the pod (no clock, no I/O); SetDefaults is idempotent and never
// invents an identity (a UID is the caller's: node generates one for a manifest, AddPod requires
// one); Validate expects a defaulted pod, as the API server's validation does, and reports each
// problem once.
package podspec
