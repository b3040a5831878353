// Package probetiming is the arithmetic of kubelet's probe timing, with no clock, actor or I/O: how
// long after a failure begins a probe reaches its failure threshold, how long a startup probe lets a
// container start, how late a healthy container becomes Ready, and, for a live worker, how long until
// its next action if its current streak continues. node explain prints the first three for a
// manifest; node describe prints the last for each running probe.
//
// The model is kubelet's worker (spec §2.2–2.4) as package actors runs it:
//
//   - A worker runs on a ticker of period P whose phase relative to the container's start is
//     arbitrary (a restarted container starts at any point of the period), except that kubelet's
//     start-up jitter delays a new worker's first run by up to P only while the node started less
//     than one period ago.
//   - A probe runs at a tick only once the container has run InitialDelaySeconds (D) whole seconds,
//     and, for liveness and readiness, once it has started; an attempt takes at most its timeout T.
//     An attempt that outlasts the period has the missed tick run as soon as it ends, so attempts
//     start at most max(P, T) apart.
//   - F consecutive failures (S consecutive successes) change what the worker publishes; a
//     liveness or startup Failure kills the container at once.
//   - The status manager triggers a started, running, not-ready container's readiness worker on
//     each status change (kubelet's manual trigger): it probes at once, if its delay has passed and
//     the worker already had its first run, and restarts its period.
//
// Invariants:
//   - Every function is pure: the present is a parameter, nothing is read from a clock.
//   - A Window's Earliest is reachable (an attempt lands exactly on the boundary and answers at
//     once); its Latest is the supremum (every wait is just short of its bound and every attempt
//     takes its full timeout), so "at the latest" reads "before".
//   - Upper bounds are never optimistic: where the exact answer depends on something unknown
//     (when the in-flight attempt began, where the next status change falls), the bound assumes
//     the worst.
//
// Deliberate simplifications: probe errors (the prober itself failing, retried and then discarded)
// do not count; a kill's grace period is not part of "restarts in" (the kill starts then);
// time spent queued in the scheduler (about a millisecond) is ignored.
package probetiming
