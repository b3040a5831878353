// Package fleetbench measures the fleet: simulated nodes (each its own actor system with its own
// guarded remote endpoint, an uplink and a Coalescer) × 1,000 flipping keys each, through one
// aggregator process (a re-executed test binary running an aggregator.Aggregator, which reports
// its garbage-collected heap on SIGUSR1).
//
// Figures (BenchmarkFleet, `make bench-fleet`): changes/s acknowledged by the aggregator (a change
// coalesced away at the node before it was sent is not counted), the p50/p99 latency from the
// moment a key changed at a node (carried in the change's container ID) to the aggregator's
// acknowledgement of the batch carrying it, as seen by the node (the aggregator applied it
// earlier), and the aggregator's live heap per key and per node (after GC, minus the empty
// aggregator's). The latency is split in two p99s: wait (from the change to the Coalescer's
// delivery of the batch carrying it: the batches ahead in the window) and trip (from that delivery
// to the acknowledgement: the round trip through both processes' mailboxes and endpoint writers).
// changes/batch is the aggregator's changes applied per batch answered. agg-cores and nodes-cores are the CPU the aggregator process and this process (the simulated
// nodes, their load generators and the measuring) used while measuring, in cores. The load
// generators share the two cores with what they measure. The last case runs the uplinks with a
// window of 4 batches in flight instead of uplink.DefaultWindow.
//
// TestFleetHarness runs the same harness small under the race detector.
package fleetbench
