// Package lifecycle is the one start/stop contract of every long-lived part of node (the probe
// tree, the process runtime, the static-pod source, the HTTP API, the remote, the fleet link,
// cluster membership and its pod runner, the aggregator, housekeeping), and the ordered List that
// runs them: started in order, stopped in reverse, each stop bounded by a deadline that is logged
// when it is exceeded.
//
// # Why Start/Stop and not suture's Serve(ctx)
//
// node's parts depend on each other in one direction: the runtime before the tree that probes it,
// the tree before the API that reads it, the remote before the uplink and the membership that use
// it, the membership before the pod runner that follows its views. A part may only start once the
// ones before it *run* (a listener bound, an actor spawned, a subscription made), and must stop
// before they do. Serve(ctx) returns only at the end, so "it runs now" would need a second signal
// next to it; and most parts here spawn actors, which run without a goroutine of their own, so a
// Serve would be a goroutine that only waits. Start/Stop says both moments directly:
//
//   - Start(ctx) returns once the part runs, or with an error once it has undone whatever it began
//     (an error leaves nothing running: the List then stops the parts before it, in reverse).
//     ctx bounds the start only; it is not the part's lifetime.
//   - Stop(ctx) returns once the part has stopped: each goroutine, actor, timer and process it
//     began has ended. ctx carries the stop's deadline; a part that must wait for something (a
//     grace period, an acknowledgement) gives up waiting when ctx ends and returns. Stop is called
//     once, and only after a Start that succeeded.
//
// A part that can fail on its own while it runs (the HTTP API's server) also implements Failing;
// the List's Run ends on the first such failure as it ends on its context, and stops everything.
//
// # Invariants of List
//
//   - Order is data: List.Names is the start order, its reverse the stop order; node's tests read
//     it and ARCHITECTURE.md shows it.
//   - All or none: when a part's Start fails, the parts started before it are stopped in reverse
//     and Start returns that error, naming the part.
//   - Every started part is stopped exactly once, even when an earlier Stop failed or overran.
//   - Each Stop gets a deadline: the part's own StopTimeout (Budgeted, for a deadline known only at
//     stop time, e.g. the longest grace period of the pods it runs), else Part.StopTimeout, else
//     DefaultStopTimeout. When it passes, the List logs it at once (the part, the deadline) and
//     again when the Stop returns (how long it took); it waits for the part nonetheless, because
//     the parts after it depend on it having stopped, and every part's Stop honours its ctx.
package lifecycle
