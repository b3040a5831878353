// Package worker holds the pure decision cores of a probe worker, with no actor system, clock or
// goroutine: kubelet's doProbe split at the probe attempt (Core), kubelet's run-loop timing (Ticker)
// and kubelet's prober wrapper (RunProbe, spec §3.1).
//
// The actor shell in package actors owns one Core and one Ticker per probe key, feeds them the
// pushed ContainerView, ticks and attempt completions, and performs the effects they return
// (publish/remove results, start an attempt off the mailbox, arm one scheduler entry, exit).
//
// Invariants:
//   - Core never reads a clock: every method that needs time takes now.
//   - At most one attempt is in flight per Core (Begin refuses to start a second one).
//   - A result is published only for the container ID the Core currently tracks; an attempt that
//     was started against an older container ID is discarded when it completes (deviation from
//     kubelet, whose doProbe is synchronous and cannot observe a restart mid-attempt).
package worker
