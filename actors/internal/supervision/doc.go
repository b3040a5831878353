// Package supervision owns restart policy for the actor core's children: a real exponential back-off
// (protoactor's built-in "exponential" strategy is linear and never gives up).
//
// Policy and Tracker are the pure decision core: given a failure time and a random number, a Tracker
// returns the restart delay or the decision to give up; they are table-tested with no actor system.
// Strategy is the protoactor actor.SupervisorStrategy shell around them.
//
// Invariants:
//   - Each child has its own back-off (one-for-one); a sibling's failures never delay or stop another.
//   - A restart waits on the injected clock.Clock; meanwhile the child's mailbox stays suspended, so
//     messages sent to it queue for the restarted incarnation (the failing message itself is lost).
//     With the Resume option the child is resumed instead of re-created from its Props (for children
//     that restart themselves when resumed: the probe workers, whose mailbox does it).
//   - Delays grow Initial, Initial×Multiplier, … up to Max; jitter only shortens a delay, so Max is a
//     hard cap. A child that ran ResetAfter without failing starts again from Initial.
//   - The failure that brings the count within Window to MaxFailures stops the child (no restart) and
//     calls OnGiveUp(child, reason) on the parent's goroutine.
//   - State exists only for children that have failed and have not been forgotten: the parent calls
//     Forget(pid) on *actor.Terminated and Stop() on *actor.Stopping, after which no restart timer is
//     pending and no later failure restarts anything. Memory per failed child is a Tracker holding at
//     most MaxFailures timestamps.
//
// Every failure is logged on the injected hclog logger (child, reason, message type, attempt, delay)
// and published on the actor system's EventStream as an *actor.SupervisorEvent, like protoactor's own
// strategies do. Panic stacks are logged by the tree's mailboxes (or logging.PanicStack), not here.
package supervision
