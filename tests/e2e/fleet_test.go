package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/fleet/aggregator/aggregatortest"
	"github.com/probeactor/probeactor/internal/freeport"
	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// TestFleetAggregatorCLI runs `node fleet` and reads it with `node get nodes` and `node get pods
// -A`. Nodes report through raw protoactor streams (what an uplink sends; `node run --fleet` comes
// with the uplink's integration), so this process needs no remote of its own.
func TestFleetAggregatorCLI(t *testing.T) {
	api := freeport.Addr(t)
	remoteAddr := freeport.Addr(t)
	stderr := &logtest.Buffer{}
	cmd := exec.Command(nodeBin, "fleet", "--listen", api, "--remote-listen", remoteAddr, "--node-monitor-grace-period", "3s")
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // ends when node fleet exits
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			assert.NoError(t, err, "node fleet's exit after SIGTERM")
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("node fleet did not exit within 30 s of SIGTERM")
		}
		assert.Contains(t, stderr.String(), "fleet aggregator stopped")
		if t.Failed() {
			t.Logf("node fleet stderr:\n%s", stderr)
		}
	})
	require.Eventually(t, func() bool {
		code, _, _ := runNode(t, "", "get", "nodes", "--server", api)
		return code == 0
	}, timeout, tick, "node fleet never answered")

	created := metav1.NewTime(time.Now().Add(-90 * time.Second))
	pod := func(name string) *fleetv1.PodChanged {
		p, err := fleetv1.FromPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: created},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
			Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
				ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}})
		require.NoError(t, err)
		return p
	}
	push := func(node string, pods ...*fleetv1.PodChanged) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, aggregatortest.Push(ctx, remoteAddr, freeport.Addr(t), insecure.NewCredentials(),
			&fleetv1.Changes{Node: node, Incarnation: 1, Seq: 1, Snapshot: true, Pods: pods}))
	}
	push("n1", pod("web"), pod("api"))
	push("n2", pod("db"))

	var out string
	require.Eventually(t, func() bool {
		push("n1") // a duplicate snapshot still counts as contact: both nodes stay within the grace period
		push("n2")
		var code int
		code, out, _ = runNode(t, "", "get", "nodes", "--server", api)
		return code == 0 && strings.Contains(out, "n1     Ready") && strings.Contains(out, "n2     Ready")
	}, timeout, tick, "nodes never listed as Ready:\n%s", out)
	assert.True(t, strings.HasPrefix(out, "NAME   STATUS   AGE\n"), out)

	code, out, errOut := runNode(t, "", "get", "pods", "-A", "--server", api)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	assert.Equal(t, []string{"NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "NODE"}, strings.Fields(lines[0]))
	assert.Equal(t, []string{"default", "api", "1/1", "Running", "0", "90s", "n1"}, fieldsAround(lines[1]))
	assert.Equal(t, []string{"default", "db", "1/1", "Running", "0", "90s", "n2"}, fieldsAround(lines[2]))
	assert.Equal(t, []string{"default", "web", "1/1", "Running", "0", "90s", "n1"}, fieldsAround(lines[3]))

	// n2 keeps reporting, n1 falls silent: after the grace period it is NotReady (Ready Unknown).
	require.Eventually(t, func() bool {
		push("n2")
		var code int
		code, out, _ = runNode(t, "", "get", "nodes", "--server", api)
		return code == 0 && strings.Contains(out, "n1     NotReady") && strings.Contains(out, "n2     Ready")
	}, timeout, tick, "n1 never turned NotReady:\n%s", out)

	resp, err := http.Get("http://" + api + "/events")
	require.NoError(t, err)
	var events v1.EventList
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&events))
	resp.Body.Close()
	seen := map[string]bool{}
	for _, e := range events.Items {
		seen[e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+" "+e.Reason+": "+e.Message] = true
	}
	assert.True(t, seen["Node/n1 RegisteredNode: Node n1 event: Registered Node n1 in Controller"], "%v", seen)
	assert.True(t, seen["Node/n1 NodeNotReady: Node n1 status is now: NodeNotReady"], "%v", seen)
	assert.True(t, seen["Pod/web NodeNotReady: Node is not ready"], "%v", seen)
	assert.False(t, seen["Node/n2 NodeNotReady: Node n2 status is now: NodeNotReady"], "%v", seen)
}

// fieldsAround splits a table row, tolerating an AGE a second or two off.
func fieldsAround(line string) []string {
	f := strings.Fields(line)
	if len(f) == 7 && strings.HasSuffix(f[5], "s") && len(f[5]) <= 4 && f[5] >= "90s" && f[5] <= "99s" {
		f[5] = "90s"
	}
	return f
}
