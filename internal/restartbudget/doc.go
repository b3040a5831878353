// Package restartbudget is the restart budget's pure core: at most N kills caused by liveness or
// startup failures per sliding window, and the queue of kills that wait for the budget (OTP's
// restart intensity, applied to probes). It has no clock, actor or I/O: the present is a parameter
// of every call, and the caller (the probe tree's syncLoop) performs what it returns.
//
// This is a deliberate deviation from kubelet, which kills a container as soon as its liveness or
// startup probe reaches its failure threshold, however many do at once (kubernetes#123204 asks for
// a budget; open). It is off unless configured.
//
// Invariants:
//   - Within any window of length Window (a half-open interval (t-Window, t]), at most N kills
//     are taken.
//   - A kill that would exceed the budget waits, in the order asked (FIFO); a waiting kill is
//     taken, oldest first, as soon as the window allows, never earlier, and never while an older
//     one waits.
//   - One waiting kill per container (pod UID and container name): a second Failure of the same
//     container ID (its startup and liveness probes, or a repeat) adds nothing.
//   - A waiting kill ends without being taken when its container recovers (a result other than
//     Failure for the same probe and container ID), is replaced (any result for another container
//     ID of the same container: its workers publish an initial value for each new container), or
//     its pod is forgotten. Only kills that are taken consume the budget.
//   - Crash restarts (the process exiting by itself) never reach the gate: the runtime restarts
//     them without a kill.
//
// A budget shared with other processes (node's --restart-budget with --cluster) uses the same
// queue with DueShared: the gate asks for its waiting kills by claim (Claims, oldest first) and
// takes exactly those the shared budget took (cluster/membership's ledger orders the cluster's
// claims and keeps the window); its own window is not used then.
package restartbudget
