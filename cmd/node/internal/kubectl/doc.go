// Package kubectl prints pods the way `kubectl get pods` does: NAME, READY, STATUS (kubectl's
// printPod reasoning: Init:N/M, CrashLoopBackOff, Completed, Error, NotReady, ...), RESTARTS (with
// "(12s ago)") and AGE in kubectl's short human form. It is pure: the current time is a parameter.
package kubectl
