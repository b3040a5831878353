// Package e2e runs the node binary end to end: TestMain builds it once, and every test writes real
// Pod manifests (the Kubernetes documentation's probe examples adapted to local processes, restart
// policies, CrashLoopBackOff, init containers, invalid manifests), runs `node run` on a free port
// and asserts the documented outcome through node's HTTP API, polling with require.Eventually.
// Shutdown tests check that no process survives SIGTERM — or SIGKILL — of node; the exhaustion test
// denies a running node every new descriptor (its soft RLIMIT_NOFILE lowered with prlimit for 8 s)
// and checks that it keeps every container and recovers by itself. TestStatusPageInChromium loads
// node's status page (/) in a real headless Chromium (Debian's chromium, driven by chromedp; `make
// browser` installs it, and without it the test fails saying so) while the embedded demo runs.
//
// Containers are the node binary itself (its hidden `__demo serve` health server) and /bin/sh.
package e2e
