package e2e

import (
	"context"
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
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probeactor/probeactor/fleet/aggregator/aggregatortest"
	"github.com/probeactor/probeactor/internal/freeport"
	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// node describe against a fleet aggregator: the pod a node reported, its probes as kubectl prints
// them (they travel with the pod) and under each the result the node published.
func TestDescribeFromAFleetAggregator(t *testing.T) {
	t.Parallel()
	api, remoteAddr := freeport.Addr(t), freeport.Addr(t)
	stderr := &logtest.Buffer{}
	cmd := exec.Command(nodeBin, "fleet", "--listen", api, "--remote-listen", remoteAddr)
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // ends when node fleet exits
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("node fleet did not exit within 30 s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("node fleet stderr:\n%s", stderr)
		}
	})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web", CreationTimestamp: metav1.Now()},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "example/web:1", LivenessProbe: &v1.Probe{
			ProbeHandler:   v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080), Scheme: v1.URISchemeHTTP}},
			TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, HostIP: "127.0.0.1", ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "proc://1",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}}
	wire, err := fleetv1.FromPod(pod)
	require.NoError(t, err)
	result := fleetv1.FromResultChanged(messages.ResultChanged{PodUID: pod.UID, Container: "app", ContainerID: "proc://1",
		Type: messages.Liveness, Result: messages.Success})
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return aggregatortest.Push(ctx, remoteAddr, freeport.Addr(t), insecure.NewCredentials(),
			&fleetv1.Changes{Node: "n1", Incarnation: 1, Seq: 1, Snapshot: true, Pods: []*fleetv1.PodChanged{wire},
				Results: []*fleetv1.ResultChanged{result}}) == nil
	}, timeout, tick, "the aggregator never took the snapshot")

	var out string
	require.Eventually(t, func() bool {
		var code int
		code, out, _ = runNode(t, "", "describe", "pod", "web", "--server", api)
		return code == 0 && strings.Contains(out, "published Success")
	}, timeout, tick, "node describe never showed the pod:\n%s", out)
	assert.Contains(t, out, "Node:         n1/127.0.0.1\n")
	assert.Contains(t, out, "Liveness:       http-get http://:8080/healthz delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3\n")
	assert.Contains(t, out, "published Success on node n1")
}
