package e2e

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// forkingPod runs two containers that fork children (one escaping into its own session) and write
// every PID to pids files; one container ignores SIGTERM. The polite container's readiness probe is
// an exec command that forks a child and then runs for up to 10 minutes (its timeout), writing both PIDs to probe.pids:
// a probe in flight when node stops.
const forkingPod = `
apiVersion: v1
kind: Pod
metadata: {name: forker}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: polite
    workingDir: {{.Dir}}
    command: ["sh", "-c", "sleep 600 & echo $! >> polite.pids; setsid sleep 601 & echo $! >> polite.pids; echo $$$$ >> polite.pids; wait"]
    readinessProbe:
      exec:
        command: ["sh", "-c", "sleep 603 & echo $! >> probe.pids; echo $$$$ >> probe.pids; wait"]
      timeoutSeconds: 600
      periodSeconds: 1
  - name: stubborn
    workingDir: {{.Dir}}
    command: ["sh", "-c", "trap '' TERM; sleep 602 & echo $! >> stubborn.pids; echo $$$$ >> stubborn.pids; wait"]
`

func startForker(t *testing.T, flags ...string) (*node, []int) {
	m, data := render(t, forkingPod, nil)
	n := startNode(t, m, flags...)
	dir := data["Dir"].(string)
	var pids []int
	require.Eventually(t, func() bool {
		pids = append(readPIDs(filepath.Join(dir, "polite.pids")), readPIDs(filepath.Join(dir, "stubborn.pids"))...)
		pids = append(pids, readPIDs(filepath.Join(dir, "probe.pids"))...)
		return len(pids) == 7
	}, timeout, tick)
	n.eventually("forker", func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning }, "running")
	for _, p := range pids {
		require.True(t, alive(p), "pid %d", p)
	}
	return n, pids
}

func TestSIGTERMKillsEveryContainerProcessAndExitsZero(t *testing.T) {
	t.Parallel()
	n, pids := startForker(t)
	n.stop(syscall.SIGTERM) // requires exit code 0
	for _, p := range pids {
		assert.False(t, alive(p), "pid %d survived node's SIGTERM", p)
	}
	assert.Contains(t, n.stdout.String(), "Stopping container stubborn")
}

// TestSIGKILLOfNodeTakesItsContainersDown: with --reattach-timeout 0 containers die with node, as
// before issue 20 (by default they wait 60 s for the next node: cmd/node's restart tests).
func TestSIGKILLOfNodeTakesItsContainersDown(t *testing.T) {
	t.Parallel()
	n, pids := startForker(t, "--reattach-timeout", "0")
	n.stop(syscall.SIGKILL)
	// The shims see their connection close and kill everything; the exec probe command dies by
	// Pdeathsig and the child it forked by the exec-probe guard, which sees its pipe close too.
	if !assert.Eventually(t, func() bool {
		for _, p := range pids {
			if alive(p) {
				return false
			}
		}
		return true
	}, timeout, tick, "container or exec probe processes outlived a SIGKILLed node") {
		t.Logf("the survivors (polite's 3 pids, stubborn's 2, the probe's 2: %v):\n%s", pids, describePIDs(pids))
	}
}

// TestSIGKILLOfNodeLeavesItsContainersButNotItsProbes: with a re-attach window (issue 20) a
// SIGKILLed node's containers, and everything they forked, outlive it for that window, then die;
// an exec probe in flight dies with node at once, as before (Pdeathsig and the exec-probe guard).
func TestSIGKILLOfNodeLeavesItsContainersButNotItsProbes(t *testing.T) {
	t.Parallel()
	n, pids := startForker(t, "--reattach-timeout", "3s")
	containers, probes := pids[:5], pids[5:] // polite's 3 and stubborn's 2, then the probe's 2
	n.stop(syscall.SIGKILL)
	require.Eventually(t, func() bool {
		for _, p := range probes {
			if alive(p) {
				return false
			}
		}
		return true
	}, timeout, tick, "the exec probe and its child die with node")
	for _, p := range containers {
		assert.True(t, alive(p), "container process %d lives on within the window", p)
	}
	require.Eventually(t, func() bool {
		for _, p := range containers {
			if alive(p) {
				return false
			}
		}
		return true
	}, timeout, tick, "no node came back: after the window every container process is killed, setsid'd ones and the one ignoring SIGTERM too")
}
