// Package describe is node describe without its shell: a pod in kubectl describe's layout (the
// pod, its containers with their probes as kubectl prints them, conditions, events) and, beyond
// kubectl, each probe's live state: its streak against its threshold ("failing 2/3"), its last
// attempt and when, and the worst-case time to its next action if the streak continues
// ("restarts in ≤ 5s if it keeps failing", package internal/probetiming).
//
// A node serves its workers' states at /probes/{namespace}/{name} as a List (FromStates converts
// Tree.ProbeStates); a fleet aggregator knows each probe's spec and published result, not its
// streak, so the description then shows the result with the node that published it (Live false).
//
// Everything else is kubectl 1.37's describePod, line for line, for the fields a node's pod can
// carry (tests/upstream TestDescribeIsKubectls holds it to k8s.io/kubectl v0.37.2's PodDescriber
// on 2,000 random pods with their events): node/hostIP, annotations as "key: value", Terminating
// (lasts …) only before the phase is terminal, IPs, controller and nominated node, ports and host
// ports with their names, image IDs, no state lines for a container with no status yet, events
// with their object's field path and first time; PrintWith's Settings.ShowEvents leaves the
// events out as kubectl's DescriberSettings does (several pods described at once). Deliberate
// deviations: no Mounts, Volumes, QoS
// Class, Node-Selectors or Tolerations (node has none of them to show); a fieldRef shows its value
// for every field node fills in (kubectl's scheme resolves only metadata.name and
// metadata.namespace and prints the others empty); a gRPC probe without a service prints an empty
// one (kubectl dereferences it).
//
// Invariants: pure (the present is a parameter; no I/O besides the writer Print is given); the
// kubelet texts it shows (events, probe lines) are printed as received, never reworded.
package describe
