package nodeobject

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	started = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	now     = started.Add(time.Hour)
	since   = started.Add(30 * time.Minute)
	machine = Host{Hostname: "worker-1", CPUs: 16, Memory: 16374232 * 1024, MachineID: "3d1219c7c4c5404aaa1f6d2a48adfda4",
		SystemUUID: "ec2a0c5e-0d6e-4b4f-9d6b-000000000001", BootID: "3d894873-9dd2-44d7-9ec9-943a368f405e",
		KernelVersion: "6.8.0-45-generic", OSImage: "Ubuntu 24.04.1 LTS"}
)

func info() Info {
	return Info{Name: "worker-1", Created: started, Host: machine, OS: "linux", Arch: "amd64", NodeVersion: "v0.9.0", Port: 10255,
		Now: now, ReadySince: since}
}

// TestBuild: the node kubelet 1.37 would post for a machine, field by field, in its JSON (the
// quantities as kubelet writes them), for each way Ready and the other conditions can stand.
func TestBuild(t *testing.T) {
	quorumLost := v1.NodeCondition{Type: "ClusterQuorum", Status: v1.ConditionFalse, Reason: "QuorumLost",
		Message: "this member is in contact with 1 of the 3 cluster members (a quorum needs 2); it runs no pods", LastTransitionTime: metav1.NewTime(since)}
	heartbeat, transition := now.Format(time.RFC3339), since.Format(time.RFC3339)
	ready := map[string]any{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
		"lastHeartbeatTime": heartbeat, "lastTransitionTime": transition}
	notReady := func(message string) map[string]any {
		return map[string]any{"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": message,
			"lastHeartbeatTime": heartbeat, "lastTransitionTime": transition}
	}
	for _, tc := range []struct {
		name       string
		change     func(*Info)
		conditions []any
	}{
		{"healthy", func(*Info) {}, []any{ready}},
		{"one check fails", func(i *Info) { i.Failures = []string{"runtime: no answer: context deadline exceeded"} },
			[]any{notReady("runtime: no answer: context deadline exceeded")}},
		{"two checks fail", func(i *Info) {
			i.Failures = []string{"probe-tree: probeManager did not answer", "housekeeping: no pass completed for 2m0s"}
		}, []any{notReady("[probe-tree: probeManager did not answer, housekeeping: no pass completed for 2m0s]")}},
		{"a cluster member without its quorum: its own condition first, Ready last", func(i *Info) { i.Conditions = []v1.NodeCondition{quorumLost} },
			[]any{map[string]any{"type": "ClusterQuorum", "status": "False", "reason": "QuorumLost", "message": quorumLost.Message,
				"lastHeartbeatTime": heartbeat, "lastTransitionTime": transition}, ready}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := info()
			tc.change(&in)
			got := asJSON(t, Build(in))
			status := got["status"].(map[string]any)
			assert.Equal(t, tc.conditions, status["conditions"])
			delete(status, "conditions")
			assert.Equal(t, map[string]any{
				"kind": "Node", "apiVersion": "v1",
				"metadata": map[string]any{"name": "worker-1", "creationTimestamp": started.Format(time.RFC3339), "labels": map[string]any{
					"kubernetes.io/hostname": "worker-1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
					"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
				}},
				"spec": map[string]any{},
				"status": map[string]any{
					"capacity":        map[string]any{"cpu": "16", "memory": "16374232Ki"},
					"allocatable":     map[string]any{"cpu": "16", "memory": "16374232Ki"},
					"addresses":       []any{map[string]any{"type": "Hostname", "address": "worker-1"}},
					"daemonEndpoints": map[string]any{"kubeletEndpoint": map[string]any{"Port": float64(10255)}},
					"nodeInfo": map[string]any{
						"machineID": machine.MachineID, "systemUUID": machine.SystemUUID, "bootID": machine.BootID,
						"kernelVersion": "6.8.0-45-generic", "osImage": "Ubuntu 24.04.1 LTS",
						"containerRuntimeVersion": "probeactor-node://v0.9.0", "kubeletVersion": "v1.37.2+probeactor.v0.9.0",
						"kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64",
					},
				},
			}, got)
		})
	}
}

// A node named apart from its host (--node-name) keeps the host's name in the label and the
// address; memory that is not a whole number of KiB, and an unreadable hostname, as kubelet
// writes them.
func TestBuildNamesAndQuantities(t *testing.T) {
	in := info()
	in.Name = "n1"
	in.Host.CPUs, in.Host.Memory = 2, 1000
	n := Build(in)
	assert.Equal(t, "n1", n.Name)
	assert.Equal(t, "worker-1", n.Labels[v1.LabelHostname])
	assert.Equal(t, []v1.NodeAddress{{Type: v1.NodeHostName, Address: "worker-1"}}, n.Status.Addresses)
	cpu, memory := n.Status.Capacity[v1.ResourceCPU], n.Status.Capacity[v1.ResourceMemory]
	assert.Equal(t, "2", cpu.String())
	assert.Equal(t, "1k", memory.String(), "a binary quantity that is no whole number of Ki prints in decimal, as kubelet's")
	allocatable := n.Status.Allocatable[v1.ResourceMemory]
	assert.Equal(t, "1k", allocatable.String())
	assert.NotContains(t, n.Status.Capacity, v1.ResourcePods, "node enforces no pod count")
	assert.NotContains(t, n.Status.Capacity, v1.ResourceEphemeralStorage)

	in.Host.Hostname = ""
	n = Build(in)
	assert.NotContains(t, n.Labels, v1.LabelHostname)
	assert.Empty(t, n.Status.Addresses)
}

func asJSON(t *testing.T, n v1.Node) map[string]any {
	t.Helper()
	b, err := json.Marshal(n)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func TestKubeletVersion(t *testing.T) {
	for version, want := range map[string]string{
		"dev":             "v1.37.2+probeactor.dev",
		"v0.9.0":          "v1.37.2+probeactor.v0.9.0",
		"v0.9.0-rc.1":     "v1.37.2+probeactor.v0.9.0-rc.1",
		"v1.0.0+dirty":    "v1.37.2+probeactor.v1.0.0-dirty",
		"0.9.0 (abc/def)": "v1.37.2+probeactor.0.9.0--abc-def-",
		".v1..2.":         "v1.37.2+probeactor.v1.2",
		"":                "v1.37.2+probeactor",
	} {
		assert.Equal(t, want, KubeletVersion(version), version)
	}
}
