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
// Invariants: pure (the present is a parameter; no I/O besides the writer Print is given); the
// kubelet texts it shows (events, probe lines) are printed as received, never reworded.
package describe
