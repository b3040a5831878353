// Package sharder is a cluster member's pod placement: an actor that subscribes to the membership
// (cluster/membership, started with AwaitApplied) and runs the member's share of one pod set on a
// PodRunner, as decided by cluster/ownership's Reconcile. It is a thin shell: it keeps the inputs
// (the last view, the pod set, what it started), performs the plan's starts and stops, and
// acknowledges each view (Membership.Applied) once its effects were issued, so peers are told a
// view only after the stops it implies (the break-before-make handoff of cluster/ownership). The
// core is judged against the clock (ownership.Input.Now: a lease's end, a lost member's bound), so
// the sharder also reconciles at the plan's Next time, and at once when a view comes. A view that
// renews the lease after it had run out (a lapse the recheck at its end did not catch first) makes
// the sharder act as at the lease's end before it applies the view: every pod stops, since its
// shims fenced the containers, and starts again only under the rules — a fenced container is
// never restarted by the runtime alone.
//
// A member without its quorum lease stops every pod and starts none; State.Quorate/Reason and
// Config.Quorum say so (node turns it into the /pods Warning and the fleet's ClusterQuorum
// condition). Grace periods are kubelet's: the pod's, never below 2 s (podapi.MinimumGracePeriod).
//
// Messages: SetPods (the whole pod set; every member reads the same one), Release (stop every pod
// and start nothing again: the first step of leaving the cluster, before membership.Member.Stop),
// GetState. A PodRunner's Start and Stop must not block; node's is cluster/runner's (which spawns
// the sharder and carries its starts and stops out on node's pod host, each stop on a goroutine).
// A pod is identified by its UID; a failed Start is retried on the next view or pod set change.
//
// Metrics (with a Registerer): probeactor_cluster_pods_owned, _waiting (owned but not started yet:
// views not agreed, a peer still stopping it, a lost member's bound), _running,
// probeactor_cluster_quorum (1 while it holds its lease) and probeactor_cluster_pod_changes_total{action}.
package sharder
