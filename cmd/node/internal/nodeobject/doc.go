// Package nodeobject is node's own v1.Node, the object kubelet 1.37 registers for its machine and
// keeps posting (pkg/kubelet/kubelet_node_status.go, pkg/kubelet/nodestatus): node serves it at
// /nodes as a one-item v1.NodeList, so `node get nodes` and `node top node` read a node as they
// read a fleet aggregator, and kubectl-minded tools find what they expect.
//
// Build (pure, over Info) reports, as kubelet does:
//   - metadata.name: --node-name, else the hostname as kubelet canonicalizes it (trimmed,
//     lowercased; CanonicalHostname); creationTimestamp: node's start; the labels kubelet sets on
//     its node: kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch and the
//     beta.kubernetes.io/os and /arch that 1.37 still sets;
//   - status.capacity and status.allocatable: cpu, the CPUs online (/proc/stat), and memory,
//     MemTotal, in cadvisor's quantities ("16", "16374232Ki");
//   - status.nodeInfo: machineID, systemUUID, bootID, kernelVersion and osImage read as cadvisor
//     reads them (Host, ReadHost), operatingSystem and architecture (Go's), containerRuntimeVersion
//     "probeactor-node://VERSION" and kubeletVersion KubeletVersion's "v1.37.2+probeactor.VERSION":
//     node implements kubelet 1.37.2's semantics but is not kubelet, which semver build metadata
//     says without breaking a version check (k3s reports "v1.30.4+k3s1" the same way);
//   - status.addresses: the Hostname; status.daemonEndpoints.kubeletEndpoint.port: node's API port;
//   - status.conditions: node's own (a cluster member's ClusterQuorum, as it reports it to the
//     fleet aggregator), then Ready, last as kubelet keeps it: True, KubeletReady, "kubelet is
//     posting ready status" while every health check passes (node's /healthz checks), else False,
//     KubeletNotReady, the failing checks as kubelet aggregates errors ("runtime: no answer: ..."; several:
//     "[a, b]"). Every heartbeat is the time of the read.
//
// Reporter is the shell: Machine is the node without conditions and no check run (what a fleet
// node sends its aggregator once at start, which makes its own Ready); each Node call reads the machine, runs the health checks (within
// DefaultCheckTimeout) and keeps, between calls, when Ready last changed and node's own
// conditions (SetCondition keeps a condition's transition while its status, reason and message
// stay, as the fleet uplink does).
//
// Deliberate differences from kubelet:
//   - no `pods` and no `ephemeral-storage` in capacity or allocatable: node enforces neither a
//     pod count nor ephemeral storage (kubelet would be NotReady without them: "missing node
//     capacity for resources"; node's Ready is its health checks only). No hugepages, device plugin
//     resources or nodeInfo.swap. Allocatable equals capacity: node reserves nothing
//     (kube-reserved, system-reserved and eviction thresholds are kubelet's);
//   - no InternalIP: kubelet takes it from --node-ip, a DNS lookup of its name or the default
//     route's interface; node's API listens on loopback by default and has no --node-ip, and a
//     guessed address would name one node does not serve on. The Hostname address and the
//     kubernetes.io/hostname label are the machine's hostname, also with --node-name (which names
//     the node, as a cloud provider's node name does, unlike kubelet's --hostname-override, which
//     sets all three);
//   - without --node-name the node is named after the host, while its pods keep an empty
//     spec.nodeName (kubelet's static pods carry the node's name): naming pods that already run
//     would change their spec, which the next node, adopting them after an upgrade, reads as a
//     changed pod and restarts (proc's spec hash);
//   - no MemoryPressure, DiskPressure or PIDPressure: node has no eviction manager, and a
//     condition that never changes would say nothing;
//   - Ready is node's health checks, not kubelet's runtime, network and storage errors; they run
//     when the object is read, so a change is dated by the read that sees it (kubelet's, by its
//     next status update, every 10 s by default) and the first read dates Ready from node's start;
//   - no images (node pulls none), volumes, kubeProxyVersion, features, runtime handlers, spec
//     (podCIDR, taints, providerID), annotations, uid or resourceVersion: there is no API server
//     and nothing node does would fill them.
package nodeobject
