// Package sharder is a cluster member's pod placement: an actor that subscribes to the membership
// (cluster/membership, started with AwaitApplied) and runs the member's share of one pod set on a
// PodRunner, as decided by cluster/ownership's Reconcile. It is a thin shell: it keeps the inputs
// (the last view, the pod set, what it started), performs the plan's starts and stops, and
// acknowledges each view (Membership.Applied) once its effects were issued, so peers are told a
// view only after the stops it implies (the break-before-make handoff of cluster/ownership).
//
// Messages: SetPods (the whole pod set; every member reads the same one), Release (stop every pod
// and start nothing again: the first step of leaving the cluster, before membership.Member.Stop),
// GetState. A PodRunner's Start and Stop must not block; node's is cluster/runner's (which spawns
// the sharder and carries its starts and stops out on node's pod host, each stop on a goroutine).
// A pod is identified by its UID; a failed Start is retried on the next view or pod set change.
//
// Metrics (with a Registerer): probeactor_cluster_pods_owned, _waiting (owned but held back until
// every live peer has seen this member), _running, and probeactor_cluster_pod_changes_total{action}.
package sharder
