// Package aggregator is the fleet aggregator (`node fleet`): nodes' uplinks (package
// fleet/uplink) report their pods and probe results to it over protoactor's remote, and it serves
// them in the API server's shapes on its HTTP address.
//
// Actors and state: one fleet actor (ActorName "fleet", the only actor a peer may address) owns a
// Book, the pure core holding node → (incarnation, last seq, results, pods) and making every
// decision; the actor only answers wire messages (fleetv1 Hello → Welcome, Changes and Heartbeat →
// Ack), ticks the node monitor and answers the HTTP server's queries. The remote is started by
// remotesec (the guard, mTLS, small queues, keepalives).
//
// Lifecycle (internal/lifecycle's contract): New validates a Config, each error naming its `node
// fleet` flag, and starts nothing; Start binds the HTTP listener and the remote, spawns the fleet
// actor and serves, returning once both listen (an error undoes all of it); Stop shuts the HTTP
// server down within its ctx, stops the remote, then the fleet actor, then the actor system;
// Failed yields the HTTP server's failure. The `node fleet` command (flags, logger, signals) lives
// in cmd/node; package aggregatortest runs an aggregator as internal/fleettest's child.
//
// Invariants (Book, table-tested):
//   - dedup by (node, incarnation, seq): a snapshot replaces a node's view; a delta applies only on
//     top of seq-1 of the same incarnation; a late or replayed batch is DUPLICATE, an older
//     incarnation STALE, a gap or a missing baseline RESYNC (the node sends a snapshot). So a key
//     never moves backwards and the view is always a snapshot plus every later delta in order;
//   - results are kept per probe (pod UID, container, probe type), latest container ID and result,
//     so container restarts do not accumulate keys; a pod's removal drops its results;
//   - pod statuses are kept as received (Kubernetes' protobuf bytes) and decoded only when /pods
//     is rendered: ~300 bytes per pod instead of the decoded struct;
//   - node lifecycle as kube-controller-manager's node lifecycle controller: Ready True while a node
//     is in contact (any Hello, Changes or Heartbeat of its current incarnation), Unknown with
//     reason NodeStatusUnknown and "Kubelet stopped posting node status." once
//     --node-monitor-grace-period (default 40 s) passed without contact, evaluated every
//     min(1 s, grace/4); the pods of an Unknown node get their Ready condition False
//     (MarkPodsNotReady) while their container statuses stay the node's last word;
//   - events: RegisteredNode, NodeReady, NodeNotReady (node and each pod), Rebooted (a new
//     incarnation); at most 1,000 kept, oldest dropped.
//
// Identity: with mutual TLS a node's Hello, Changes and Heartbeat must name the node its
// certificate's Common Name names (system:node:<name>, as kubelets' client certificates, or just
// <name>); anything else closes the stream (remotesec Config.Inspect), so an authenticated member
// cannot report as another node. Without TLS the remote listens on loopback only.
//
// HTTP (read-only, every response carries Probeactor-Server: fleet-aggregator): /pods (v1.PodList
// of every node's pods, spec.nodeName set), /nodes (v1.NodeList: each node's name, Ready and
// InternalIP as the aggregator sees them, and what the node says of itself, its labels, capacity,
// allocatable, daemon endpoint, system info and Hostname, from its own Node object when it sends
// one), /events (v1.EventList),
// /results (every node's probe results, a probeactor extension), /metrics (Go, process,
// probeactor_fleet_* and probeactor_remote_refused_total), /healthz, and metrics.k8s.io/v1beta1
// (below).
//
// Resource metrics (the aggregator is the fleet's metrics-server: nodes send their usage instead of
// being scraped): each node's latest Changes.usage, one sampling window with its rates already
// taken, is kept as its other state (a snapshot replaces it, one without clears it; a delta with
// one replaces it, one without keeps it; a new incarnation drops it from its first message on, as
// its containers restarted). It is served only while the node is Ready and for max(3 windows, grace
// period) after it arrived (a node in contact whose sampling stopped has no metrics either), as
// metrics-server serves its latest scrape only. /apis/metrics.k8s.io/v1beta1/nodes[/NAME]
// (NodeMetricsList, ?labelSelector= on the node's labels; NodeMetrics) and .../pods,
// .../namespaces/NAMESPACE/pods[/NAME] (PodMetricsList; PodMetrics) answer in metrics-server 0.8's
// shapes: CPU in nanocores, memory in bytes, the node's labels, creationTimestamp the time of the
// request, the window's end and length; what has no metrics is the API server's NotFound Status
// ("nodemetrics.metrics.k8s.io \"NAME\" not found", "podmetrics.metrics.k8s.io \"NAMESPACE/NAME\"
// not found"). Only pods the node reports are listed, and only with a container measured; pods
// carry no labels (the wire has none), so a pods labelSelector is a BadRequest; two nodes' pods of
// one namespace and name are both listed, ordered by node (a GET answers the first).
//
// Deliberate differences from Kubernetes: nodes are never deleted (a node that left stays Unknown
// until the aggregator restarts); there is no eviction or taint; a node's creationTimestamp is its
// first contact with this aggregator process; a node's nodeInfo.bootID is the incarnation of its
// node process (a restart of node is what the aggregator sees, and its Rebooted event names it).
package aggregator
