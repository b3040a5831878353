// Package kubectl prints pods the way `kubectl get pods` does: NAME, READY, STATUS (kubectl's
// printPod reasoning: Init:N/M, CrashLoopBackOff, Completed, Error, NotReady, ...), RESTARTS (with
// "(12s ago)") and AGE in kubectl's short human form, optionally with NAMESPACE (-A) and NODE (a
// fleet aggregator's pods); and nodes as `kubectl get nodes` does (NAME, STATUS, AGE). It is pure:
// the current time is a parameter.
package kubectl
