// Command nodebench measures what the node binary costs per probe against a bare Go client doing the
// same probes (issue 22 §3; `make bench-node`, never part of `make test`).
//
// The workload is the node-scale one: PODS pods, each one `sleep` container (a real process under its
// shim) with an HTTP readiness probe (GET /ready/N) and a TCP liveness probe, both at period 1 s and
// timeout 1 s, against one target: an HTTP server and a TCP listener on 127.0.0.1, served by a child
// process of its own (this binary re-executed as `nodebench target`), the same process for every run.
// That is 2 × PODS probes a second.
//
// Two probers take turns, in the same sitting: ROUNDS rounds of one run each, bare first in odd
// rounds and node first in even ones (bare, node, node, bare, bare, node, …), so that a drift of
// the machine's load over the sitting weighs on both alike.
//
//   - bare is this binary re-executed as `nodebench bare`: per probe one goroutine and one ticker
//     (started with a random phase within the period, as kubelet's workers and node's are), doing
//     the same GET (kubelet's User-Agent and Accept, one net/http client without keep-alives, a
//     fresh connection per probe reset on close, the 1 s timeout, the 10 KiB body limit) or the same
//     TCP connect (1 s timeout, reset on close), and nothing else. It is the floor of a Go prober
//     (tests/bench's impl=bare, with TCP added).
//   - node is `node run -f pods.yaml` (the real binary, -node) with a fresh --root-dir and otherwise
//     its default flags; its run starts once /pods lists every container running and ready.
//
// Each run gets a warm-up (WARMUP) and then a window (DURATION) over which nodebench reads the CPU
// (user + system, /proc/<pid>/stat) of the prober's process, and for node separately of its shims
// (node re-executed, one per container: they hold the containers, they do not probe) and of the
// containers; the probes are what the target counted over the same window, so both probers are
// counted the same way. node's µs/probe is its own process's CPU / probes: what the issue calls
// node's own CPU; the shims' share is printed next to it (0 when idle, as they should be) and is
// not in the ratio. A run is valid when its probes/s is within 3 % of 2 × PODS / 1 s (a machine too
// busy to keep the schedule would make the per-probe figures describe less work) and at most 1 % of
// its probes failed (timed out: on a shared machine the target is now and then not scheduled within
// a second; node's failures are read from its /metrics, prober_probe_total, bare counts its own);
// node's run must also end with no container restarted.
//
// The last line is
//
//	nodebench: pods=N window=D rounds=R node=X µs/probe bare=Y µs/probe ratio=Z (pairs …) node-probes/s=A bare-probes/s=B node-shims=S µs/probe valid|INVALID (why)
//
// with medians over the rounds and Z = median node / median bare; pairs are each round's own
// node / bare (also printed after each round). The exit code is 1 when a run is invalid or could not be done.
//
// -baseline BIN adds a third run to every round: BIN (another build of node, e.g. from before a
// change) measured as node is, the order of the three changing from round to round (Order: bare
// first or last, node and baseline taking turns), and reported beside node (baseline=…,
// baseline-ratio=…, pairs), so a change is compared with its baseline in one sitting.
//
// Environment (each also a flag, the flag wins):
//
//	NODEBENCH_PODS      pods (default 500: 1,000 probes/s)                         -pods
//	NODEBENCH_DURATION  the measurement window of each run (default 30s)           -duration
//	NODEBENCH_WARMUP    the wait before each window (default 10s)                  -warmup
//	NODEBENCH_ROUNDS    bare/node pairs (default 3)                                -rounds
//	NODEBENCH_PROFILE   a directory for each window's profiles: node runs with --profiling, and     -profile
//	                    node-cpu-<round>.pprof and node-allocs-<round>.pprof (the allocations of
//	                    the window) come from its /debug/pprof, bare-cpu-<round>.pprof from the bare
//	                    client itself (baseline-… with -baseline); profiling costs CPU, so those
//	                    runs read a little high
//
// Nothing is left behind: node is stopped with SIGTERM at the end of each of its runs (its graceful
// stop ends every container), Ctrl-C reaches node as well (same process group), and every child
// gets SIGKILL should nodebench die (Pdeathsig); node's shims then stop the containers after node's
// --reattach-timeout (60 s).
package main
