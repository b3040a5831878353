// Package server is node's HTTP surface, with kubelet's paths and shapes: GET /pods (v1.PodList),
// /pods/{namespace}/{name} (v1.Pod), /events (v1.EventList), /metrics and /metrics/probes
// (Prometheus), /containerLogs/{namespace}/{pod}/{container} and /healthz.
//
// Invariants: read-only (every route is GET/HEAD); a bad request gets a 4xx with a plain-text message
// saying what was wrong; handlers hold no state of their own — they read through Source, so the server
// never outlives what it serves (the caller shuts it down first).
package server
