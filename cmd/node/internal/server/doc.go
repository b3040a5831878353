// Package server is node's HTTP surface, with kubelet's paths and shapes: GET /pods (v1.PodList),
// /pods/{namespace}/{name} (v1.Pod), /events (v1.EventList), /metrics, /metrics/probes and, with
// Options.Resource, /metrics/resource (Prometheus), /containerLogs/{namespace}/{pod}/{container}
// and /healthz (Options.Health's checks, or a plain "ok"); with Options.Node, /nodes (a
// v1.NodeList of node's own Node, package nodeobject; without it, a 404); with Options.Profiling,
// Go's profiles at /debug/pprof/ (kubelet's enableProfilingHandler); with Options.Index, that handler
// at / exactly (node's status page, package statuspage; kubelet has none).
//
// Invariants: read-only (every route is GET/HEAD; a request body is refused with 413, never read);
// a bad request gets a 4xx with one line of text saying what was wrong (FuzzRoutes); handlers hold no
// state of their own — they read through Source, so the server never outlives what it serves (the
// caller stops it first). Server is a lifecycle.Component: Start serves the listener node bound
// (Options.Listener), Stop shuts down within its ctx, Failed reports the listener failing.
//
// What one client can make node hold is bounded (abuse_test.go proves each): request headers by
// MaxHeaderBytes (64 KiB; Go's default is 1 MiB) and ReadHeaderTimeout (slowloris); an idle
// keep-alive connection by IdleTimeout; a response by one open file and one 32 KiB copy buffer, and
// by WriteStall — every write must proceed within it, so a client that stops reading frees the
// handler, its file and its connection; log follows by MaxFollows (429 beyond it), and each one ends
// with the client, with the container's run, or at Stop.
//
// Deliberate differences from kubelet: node's log files carry no per-line timestamps, so sinceSeconds
// and sinceTime select whole runs — a run whose log was last written before the time shows nothing,
// any other run shows all of its log; boolean parameters accept only strconv.ParseBool's spellings,
// and an unknown query parameter is a 400 naming it (kubelet ignores both quietly); invalid values get
// kubelet's 422 with its ValidatePodLogOptions text, where kubelet answers only "Invalid request.".
package server
