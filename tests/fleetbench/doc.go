// Package fleetbench measures the fleet: simulated nodes (each its own actor system with its own
// guarded remote endpoint, an uplink and a Coalescer) × 1,000 flipping keys each, through one
// aggregator process (a re-executed test binary running aggregator.Start, which reports its
// garbage-collected heap on SIGUSR1).
//
// Figures (BenchmarkFleet, `make bench-fleet`): changes/s acknowledged by the aggregator (a change
// coalesced away at the node before it was sent is not counted), the p50/p99 latency from the
// moment a key changed at a node (carried in the change's container ID) to the aggregator's
// acknowledgement of the batch carrying it, as seen by the node (the aggregator applied it
// earlier), and the aggregator's live heap per key and per node (after GC, minus the empty
// aggregator's). The load generators share the two cores with what they measure.
//
// TestFleetHarness runs the same harness small under the race detector.
package fleetbench
