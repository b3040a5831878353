package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// TestClusterSharesTheRestartBudget: three `node run --cluster --restart-budget 2/1h` members share
// 12 pods whose liveness probes GET one dependency. The dependency fails for all of them at once:
// across the cluster exactly 2 containers are restarted (the budget is the cluster's, not each
// member's: 3 members on their own would make 6), every other one keeps running, reported not
// ready, with a RestartBudgetExhausted event in the cluster's wording. When the dependency
// recovers every pod is ready again, still with 2 restarts in all.
func TestClusterSharesTheRestartBudget(t *testing.T) {
	const npods = 12
	var failing atomic.Bool
	dep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if failing.Load() {
			http.Error(w, "dependency down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer dep.Close()
	var b strings.Builder
	for i := range npods {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: dep-%02d}\nspec:\n  terminationGracePeriodSeconds: 1\n"+
			"  containers:\n  - name: app\n    command: [sleep, \"100000\"]\n"+
			"    livenessProbe: {httpGet: {host: 127.0.0.1, port: %d, path: /}, periodSeconds: 1, failureThreshold: 1}\n",
			i, dep.Listener.Addr().(*net.TCPAddr).Port)
	}
	manifest := filepath.Join(t.TempDir(), "pods.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(b.String()), 0o600))
	// A 5 s failure timeout, as TestClusterFailoverWithRealNodes: two cores shared with every
	// other package's tests starve heartbeats while the containers start.
	c := startClusterOfNodes(t, 3, manifest, "", 5*time.Second, "--restart-budget", "2/1h")
	all := []int{0, 1, 2}
	c.await("three members start", all, nil, 120*time.Second, func(p placement) bool { return p.exactlyOnce(npods) })

	failing.Store(true)
	deferred := func() map[string]bool {
		out := map[string]bool{}
		for _, i := range all {
			for _, e := range clusterEvents(t, c.apis[i]) {
				if e.Reason == "RestartBudgetExhausted" {
					out[e.InvolvedObject.Name] = true
					assert.Contains(t, e.Message, "the cluster's shared restart budget (2 per 1h0m0s) has not given it room yet")
				}
			}
		}
		return out
	}
	restarts := func() (total int, notReady int) {
		for _, i := range all {
			pods, err := podList(c.apis[i])
			require.NoError(t, err)
			for _, p := range pods {
				for _, cs := range p.Status.ContainerStatuses {
					total += int(cs.RestartCount)
					if !cs.Ready {
						notReady++
					}
				}
			}
		}
		return total, notReady
	}
	// Every kill waits for the cluster to order it (each is announced), 2 are taken, and the 2
	// restarted containers fail again and wait too: every container ends up running, not ready.
	require.Eventually(t, func() bool {
		_, notReady := restarts()
		return len(deferred()) == npods && notReady == npods
	}, 90*time.Second, 200*time.Millisecond, "a deferred kill for every pod, every container not ready")
	total, _ := restarts()
	assert.Equal(t, 2, total, "the cluster's 2 kills within the window, not 2 per member")
	takenGauge := 0.0
	for _, i := range all {
		resp, err := http.Get(c.apis[i] + "/metrics")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		m := regexp.MustCompile(`(?m)^probeactor_cluster_restart_budget_claims\{state="taken"\} (\S+)$`).FindStringSubmatch(string(body))
		require.NotNil(t, m, "%s serves the shared budget's claims", c.names[i])
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		takenGauge += v
	}
	assert.Equal(t, 2.0, takenGauge, "the members' taken claims add up to the budget")
	p, err := c.observe(all)
	require.NoError(t, err)
	assert.True(t, p.exactlyOnce(npods), "every pod keeps running: %v", p)

	failing.Store(false)
	require.Eventually(t, func() bool { _, n := restarts(); return n == 0 }, 60*time.Second, 200*time.Millisecond,
		"ready again once the dependency is back")
	total, _ = restarts()
	assert.Equal(t, 2, total, "the deferred kills were cancelled, not taken")
}

// clusterEvents is a member's /events.
func clusterEvents(t testing.TB, base string) []v1.Event {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(base + "/events")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var list v1.EventList
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	return list.Items
}
