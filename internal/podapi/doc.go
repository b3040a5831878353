// Package podapi holds the few facts about kubelet's v1.Pod that the probe tree (actors,
// internal/podstatus) and node (its process runtime, API and kubectl tables) all need, written once:
// a container's status by name, all container statuses, the event field path of a container, and
// termination grace periods (the pod's, and a probe kill's).
//
// It is plain data code (no goroutines, no I/O, no clock).
package podapi
