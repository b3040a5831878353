// Package explain is node explain without its shell: for each probe of each container of a valid,
// defaulted pod, what its numbers mean in time — when a failing container is killed (earliest and
// latest after the failure begins), how long a startup probe lets it start, how late a healthy
// container becomes Ready (with kubelet's manual readiness trigger and its start-up jitter) —
// and warnings for the classic mistakes, each at its field path:
//
//   - livenessProbe and readinessProbe on the same handler with the same failureThreshold and
//     periodSeconds (a restart just when readiness would have shed load);
//   - a livenessProbe whose timeoutSeconds is not below its periodSeconds;
//   - a startup probe whose budget (the earliest its failure threshold can be reached) is shorter
//     than the livenessProbe initialDelaySeconds it replaces;
//   - an exec probe with a 1 s timeout;
//   - a livenessProbe without a readinessProbe;
//   - a preStop hook with terminationGracePeriodSeconds 0 (kubelet runs none), and a preStop sleep
//     that uses the grace period up (the pod's, or a livenessProbe's own), leaving the application
//     kubelet's 2 s floor after SIGTERM.
//
// The arithmetic is package internal/probetiming's; this package chooses what to say and prints
// it. Invariants: pure (no clock, no I/O besides the writer Print is given); a pod is explained
// only after node validate's checks passed, so every probe has its defaults; warnings never fail
// the command (node explain exits 0 with warnings, 1 only for an invalid manifest).
package explain
