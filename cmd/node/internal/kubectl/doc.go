// Package kubectl prints pods the way `kubectl get pods` does: NAME, READY, STATUS (kubectl 1.37's
// printPod reasoning: Init:N/M, CrashLoopBackOff, Completed, Error, NotReady, Terminating, ...;
// the app containers decide once the Initialized condition is True, a failed container's error
// beats NotReady beside a completed one, a deleted pod of a terminal phase keeps its status),
// RESTARTS (with "(12s ago)"; while initializing the init containers', after it the sidecars' and
// app containers') and AGE in kubectl's short human form, optionally with NAMESPACE (-A) and NODE (a
// fleet aggregator's pods); and nodes as `kubectl get nodes` does (NAME, STATUS, AGE). It is pure:
// the current time is a parameter.
package kubectl
