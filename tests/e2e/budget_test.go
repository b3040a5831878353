package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// A shared dependency fails for 20 pods at once under `--restart-budget 3/1h`: only 3 containers
// are restarted within the window; the other 17 (and the 3 new ones, failing too) keep running,
// reported not ready, each with a RestartBudgetExhausted event and counted in the budget's
// metrics; node describe says why. A container that crashes on its own is restarted all the same.
// When the dependency recovers, every deferred kill is cancelled and every pod is ready again,
// still with 3 restarts in all.
func TestRestartBudgetUnderASharedDependencyFailure(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	dep := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if failing.Load() {
			http.Error(w, "dependency down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = dep.Serve(ln) }() // ends at Close below
	t.Cleanup(func() { _ = dep.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	const pods = 20
	var docs []string
	for i := range pods {
		docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: dep-%02d}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    command: ["sleep", "3600"]
    livenessProbe:
      httpGet: {host: 127.0.0.1, port: %d, path: /healthz}
      periodSeconds: 1
      failureThreshold: 1
`, i, port))
	}
	docs = append(docs, `apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  containers:
  - name: app
    command: ["sh", "-c", "sleep 1; exit 3"]
`)
	n := startNode(t, strings.Join(docs, "---\n"), "--restart-budget", "3/1h")
	name := func(i int) string { return fmt.Sprintf("dep-%02d", i) }
	for i := range pods {
		n.eventually(name(i), func(p v1.Pod) bool { return p.Status.ContainerStatuses[0].Ready }, "ready before the dependency fails")
	}

	failing.Store(true)
	deferredPods := func() map[string]bool {
		var list v1.EventList
		require.NoError(t, n.get("/events", &list))
		out := map[string]bool{}
		for _, e := range list.Items {
			if e.Reason == "RestartBudgetExhausted" {
				out[e.InvolvedObject.Name] = true
			}
		}
		return out
	}
	// Every pod ends up waiting: 17 at once, the 3 restarted ones once their new container fails.
	require.Eventually(t, func() bool { return len(deferredPods()) == pods }, timeout, tick, "a deferred kill for every pod")
	restarts := 0
	for i := range pods {
		cs := n.container(name(i), "app")
		restarts += int(cs.RestartCount)
		assert.NotNil(t, cs.State.Running, "%s keeps running", name(i))
		assert.False(t, cs.Ready, "%s is reported not ready", name(i))
	}
	assert.Equal(t, 3, restarts, "only the budget's 3 kills within the window")
	kills := 0
	var list v1.EventList
	require.NoError(t, n.get("/events", &list))
	for _, e := range list.Items {
		if e.Reason == "Killing" && strings.Contains(e.Message, "failed liveness probe") {
			kills += int(e.Count)
		}
		if e.Reason == "RestartBudgetExhausted" {
			assert.Equal(t, "Warning", e.Type)
			assert.Contains(t, e.Message, "the restart budget (3 per 1h0m0s) is spent")
		}
	}
	assert.Equal(t, 3, kills)

	var metrics string
	require.NoError(t, n.get("/metrics/probes", &metrics))
	assert.Contains(t, metrics, `probeactor_restart_budget_deferred_kills_total{probe_type="Liveness"} 20`)
	assert.Contains(t, metrics, "probeactor_restart_budget_waiting_kills 20")

	code, out, errOut := runNode(t, "", "describe", "pod", "dep-07", "--server", strings.TrimPrefix(n.base, "http://"))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "restart deferred: the restart budget has no room for it")
	assert.Contains(t, out, "RestartBudgetExhausted")

	n.eventually("crasher", func(p v1.Pod) bool { return p.Status.ContainerStatuses[0].RestartCount >= 2 },
		"a crashing container is restarted whatever the budget")

	failing.Store(false)
	for i := range pods {
		n.eventually(name(i), func(p v1.Pod) bool { return p.Status.ContainerStatuses[0].Ready }, "ready again once the dependency is back")
	}
	restarts = 0
	for i := range pods {
		restarts += int(n.container(name(i), "app").RestartCount)
	}
	assert.Equal(t, 3, restarts, "the deferred kills were cancelled, not taken")
	require.NoError(t, n.get("/metrics/probes", &metrics))
	assert.Contains(t, metrics, `probeactor_restart_budget_cancelled_kills_total{probe_type="Liveness"} 20`)
	assert.Contains(t, metrics, "probeactor_restart_budget_waiting_kills 0")
}

// A --restart-budget node refuses cannot be applied: a usage error naming the flag, nothing runs.
func TestRestartBudgetFlagErrors(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"3", "0/1m", "3/0s", "x/1m", "3/soon"} {
		code, _, errOut := runNode(t, "", "run", "--restart-budget", v)
		assert.Equal(t, 2, code, v)
		assert.Contains(t, errOut, "invalid value "+strconv.Quote(v)+" for flag -restart-budget", v)
	}
}
