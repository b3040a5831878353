// Package podapi holds the few facts about kubelet's v1.Pod that several parts of node need, written
// once: a container's status by name, all container statuses, the event field path of a container,
// and termination grace periods.
//
// It is plain data code (no goroutines, no I/O). actors/ keeps its own copies of some of these
// (actors/podstatus, actors/manager.go, actors/syncloop.go) until shared helpers move under internal/.
package podapi
