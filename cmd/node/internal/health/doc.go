// Package health is how node says it is alive, as kubelet 1.37.2 does: its /healthz (k8s.io/
// apiserver's healthz handler over named checks) and its systemd integration (READY=1 once node
// runs; with WatchdogSec, WATCHDOG=1 every half of it while every check passes, so systemd
// restarts a node that hangs: the containers outlive that restart, see --reattach-timeout).
//
// A Check is a name and a function. node's are "ping" (always ok, kubelet's), "probe-tree" (each
// actor of the tree's own answers: actors.Tree.Check), "runtime" (the process runtime answers)
// and, when it runs, "housekeeping" (its loop completed a pass lately; kubelet's "syncloop").
//
// Handler serves them as the API server's healthz package does:
//   - GET /healthz: 200 "ok" when every check passes; 500 listing each check as "[+]name ok" or
//     "[-]name failed: reason withheld", then "healthz check failed", when one fails (the reason is
//     logged, and served by /healthz/NAME);
//   - ?verbose lists the checks on success too, ending "healthz check passed";
//   - ?exclude=NAME (repeatable) skips a check ("[+]NAME excluded: ok"), and a name that matches
//     none is a warning line, not an error;
//   - GET /healthz/NAME runs one check: 200 "ok", or 500 "internal server error: " and its error;
//     an unknown NAME is a 404.
//
// Each check runs with a deadline (CheckTimeout), so a check that hangs is a failure, not a hung
// request; a check that never returns (a deadlock) leaves its goroutine behind, which is the least
// a process that systemd is about to restart can afford.
//
// Watchdog is a lifecycle component, node's last part: its Start (every other part running) sends
// READY=1 and starts the watchdog loop, its Stop (the first part to stop) ends the loop and sends
// STOPPING=1 (kubelet sends no STOPPING; systemd then knows the stop is node's own). The watchdog
// interval is half of $WATCHDOG_USEC, kubelet's and sd_watchdog_enabled(3)'s rule: ignored when
// $WATCHDOG_PID names another process; a value that does not parse, or one of a second or less,
// fails node's start, as it fails kubelet's, and so does a watchdog without $NOTIFY_SOCKET (systemd
// would kill node every WatchdogSec). Without $NOTIFY_SOCKET nothing is sent. The three variables
// are removed from node's environment once read, so that its containers and exec probes, which
// inherit it, do not talk to systemd as node (kubelet's containers inherit nothing of kubelet's).
package health
