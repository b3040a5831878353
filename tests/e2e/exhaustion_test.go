package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/internal/freeport"
)

// exhaustionPods and exhaustion are the scenario of issue 10: that many healthy pods, and how long
// node is denied every new descriptor.
const (
	exhaustionPods = 10
	exhaustion     = 8 * time.Second
)

// TestNodeOutOfDescriptorsKeepsItsContainers: ten healthy pods, each with an HTTP liveness probe
// that restarts on the first failure and an HTTP readiness probe (5 s timeouts, so that a loaded CI
// machine cannot fail them for a reason of its own). Once all are ready, node's soft
// RLIMIT_NOFILE is lowered to 3 — it cannot open a single new descriptor, so every probe connect
// fails with EMFILE — for 8 s, then restored. Its own exhaustion is not the containers' fault: the
// probes error (events say so) instead of failing, no container is killed or restarted, no Ready
// condition flips, and once descriptors are back the HTTP API answers and probes succeed again
// without anyone stepping in.
func TestNodeOutOfDescriptorsKeepsItsContainers(t *testing.T) {
	t.Parallel()
	var docs []string
	for i := range exhaustionPods {
		m, _ := render(t, `
apiVersion: v1
kind: Pod
metadata:
  name: healthy-{{.I}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    command: ["{{.Node}}", "__demo", "serve", "--http={{.Port}}"]
    livenessProbe:
      httpGet: {path: /healthz, port: {{.Port}}}
      periodSeconds: 1
      timeoutSeconds: 5
      failureThreshold: 1
    readinessProbe:
      httpGet: {path: /healthz, port: {{.Port}}}
      periodSeconds: 1
      timeoutSeconds: 5
      failureThreshold: 1
`, map[string]any{"I": i, "Port": freeport.Port(t)})
		docs = append(docs, m)
	}
	n := startNode(t, strings.Join(docs, "\n---\n"))
	name := func(i int) string { return fmt.Sprintf("healthy-%d", i) }

	before := make([]v1.Pod, exhaustionPods)
	for i := range exhaustionPods {
		before[i] = n.eventually(name(i), func(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue }, "ready")
	}
	successes := probeSuccesses(t, n)
	// What happened before (a readiness probe may have met a server still starting) is not counted.
	seen := map[string]int32{}
	for i := range exhaustionPods {
		for _, e := range n.events(name(i), "web") {
			seen[name(i)+e.Reason+e.Message] = e.Count
		}
	}

	// Deny node every new descriptor: 0, 1 and 2 are taken, so a limit of 3 leaves none.
	pid := n.cmd.Process.Pid
	var old unix.Rlimit
	require.NoError(t, unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &old))
	require.NoError(t, unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 3, Max: old.Max}, nil))
	restored := false
	restore := func() {
		if !restored {
			restored = true
			require.NoError(t, unix.Prlimit(pid, unix.RLIMIT_NOFILE, &old, nil))
		}
	}
	t.Cleanup(restore)
	time.Sleep(exhaustion) // the scenario's duration: node is left without descriptors this long
	restore()

	// The API answers again (Go's server retries accept) and every probe carried on.
	require.Eventually(t, func() bool { return probeSuccesses(t, n) > successes+2*exhaustionPods }, timeout, tick,
		"probes did not succeed again once node had descriptors")
	errored := 0
	for i := range exhaustionPods {
		p := n.pod(name(i))
		require.Len(t, p.Status.ContainerStatuses, 1)
		cs, was := p.Status.ContainerStatuses[0], before[i].Status.ContainerStatuses[0]
		assert.Equal(t, was.RestartCount, cs.RestartCount, "%s restarted", name(i))
		assert.Equal(t, was.ContainerID, cs.ContainerID, "%s is not the container it was", name(i))
		assert.True(t, cs.Ready, "%s not ready", name(i))
		assert.Equal(t, readySince(before[i]), readySince(p), "%s's Ready condition flipped", name(i))
		for _, e := range n.events(name(i), "web") {
			if e.Count == seen[name(i)+e.Reason+e.Message] {
				continue // nothing new
			}
			assert.NotEqual(t, "Killing", e.Reason, "%s: %s", name(i), e.Message)
			assert.NotContains(t, e.Message, "probe failed", "%s: a probe failed because of node", name(i))
			if e.Reason == "Unhealthy" && strings.Contains(e.Message, "probe errored") &&
				strings.Contains(e.Message, "prober out of resources") && strings.Contains(e.Message, "too many open files") {
				errored++
			}
		}
	}
	assert.Positive(t, errored, "no probe met the exhaustion: the scenario did not happen")
}

// probeSuccesses sums prober_probe_total{result="successful"} over every series.
func probeSuccesses(t *testing.T, n *node) int {
	var metrics string
	if n.get("/metrics/probes", &metrics) != nil {
		return -1
	}
	total := 0
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "prober_probe_total{") && strings.Contains(l, `result="successful"`) {
			var v float64
			if _, err := fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &v); err == nil {
				total += int(v)
			}
		}
	}
	return total
}

// readySince is the pod's Ready condition's last transition.
func readySince(p v1.Pod) metav1.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.LastTransitionTime
		}
	}
	return metav1.Time{}
}
