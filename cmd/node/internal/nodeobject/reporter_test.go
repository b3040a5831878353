package nodeobject

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReporterKeepsReadysTransitions: the first read dates Ready from node's start; a read that
// sees it change dates the change; reads that see no change keep the date; the checks run within
// the check timeout at every read.
func TestReporterKeepsReadysTransitions(t *testing.T) {
	clock := started.Add(time.Minute)
	var failures []string
	var deadlines []time.Duration
	r := New(Options{Name: "n1", Start: started, Port: 10300, NodeVersion: "dev", CheckTimeout: 500 * time.Millisecond,
		ReadHost: func() (Host, error) { return machine, nil },
		Now:      func() time.Time { return clock },
		Failures: func(ctx context.Context) []string {
			d, ok := ctx.Deadline()
			require.True(t, ok)
			deadlines = append(deadlines, time.Until(d))
			return failures
		}})
	ready := func() v1.NodeCondition {
		t.Helper()
		n, err := r.Node(context.Background())
		require.NoError(t, err)
		assert.Equal(t, "n1", n.Name)
		assert.Equal(t, int32(10300), n.Status.DaemonEndpoints.KubeletEndpoint.Port)
		assert.Equal(t, metav1.NewTime(started), n.CreationTimestamp)
		c := n.Status.Conditions[len(n.Status.Conditions)-1]
		require.Equal(t, v1.NodeReady, c.Type)
		assert.Equal(t, metav1.NewTime(clock), c.LastHeartbeatTime)
		return c
	}
	for _, step := range []struct {
		at         time.Duration // after started
		failures   []string
		status     v1.ConditionStatus
		transition time.Duration
	}{
		{time.Minute, nil, v1.ConditionTrue, 0},
		{2 * time.Minute, nil, v1.ConditionTrue, 0},
		{3 * time.Minute, []string{"runtime: stuck"}, v1.ConditionFalse, 3 * time.Minute},
		{4 * time.Minute, []string{"runtime: stuck", "probe-tree: stuck"}, v1.ConditionFalse, 3 * time.Minute},
		{5 * time.Minute, nil, v1.ConditionTrue, 5 * time.Minute},
	} {
		clock, failures = started.Add(step.at), step.failures
		c := ready()
		assert.Equal(t, step.status, c.Status, "at %v", step.at)
		assert.Equal(t, metav1.NewTime(started.Add(step.transition)), c.LastTransitionTime, "at %v", step.at)
	}
	require.Len(t, deadlines, 5)
	for _, d := range deadlines {
		assert.InDelta(t, 500*time.Millisecond, d, float64(100*time.Millisecond))
	}

	// A node unready at its first read is dated from its start too.
	failures = []string{"runtime: stuck"}
	r = New(Options{Start: started, ReadHost: func() (Host, error) { return machine, nil }, Now: func() time.Time { return clock },
		Failures: func(context.Context) []string { return failures }})
	n, err := r.Node(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "worker-1", n.Name, "no --node-name: the host's")
	assert.Equal(t, v1.ConditionFalse, n.Status.Conditions[0].Status)
	assert.Equal(t, metav1.NewTime(started), n.Status.Conditions[0].LastTransitionTime)
}

// TestReporterKeepsItsOwnConditions: node's own conditions, sorted by type before Ready; one set
// again with the same status, reason and message keeps its transition.
func TestReporterKeepsItsOwnConditions(t *testing.T) {
	r := New(Options{Start: started, ReadHost: func() (Host, error) { return machine, nil }, Now: func() time.Time { return now }})
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(started.Add(d)) }
	r.SetCondition(v1.NodeCondition{Type: "ClusterQuorum", Status: v1.ConditionTrue, Reason: "QuorumHeld", Message: "held", LastTransitionTime: at(1)})
	r.SetCondition(v1.NodeCondition{Type: "ClusterQuorum", Status: v1.ConditionTrue, Reason: "QuorumHeld", Message: "held", LastTransitionTime: at(2)})
	r.SetCondition(v1.NodeCondition{Type: "Another", Status: v1.ConditionTrue, LastTransitionTime: at(3)})
	n, err := r.Node(context.Background())
	require.NoError(t, err)
	require.Len(t, n.Status.Conditions, 3)
	assert.Equal(t, []v1.NodeConditionType{"Another", "ClusterQuorum", v1.NodeReady},
		[]v1.NodeConditionType{n.Status.Conditions[0].Type, n.Status.Conditions[1].Type, n.Status.Conditions[2].Type})
	assert.Equal(t, at(1), n.Status.Conditions[1].LastTransitionTime, "unchanged: the first transition stays")
	assert.Equal(t, metav1.NewTime(now), n.Status.Conditions[1].LastHeartbeatTime)

	r.SetCondition(v1.NodeCondition{Type: "ClusterQuorum", Status: v1.ConditionFalse, Reason: "QuorumLost", Message: "lost", LastTransitionTime: at(4)})
	n, err = r.Node(context.Background())
	require.NoError(t, err)
	assert.Equal(t, v1.ConditionFalse, n.Status.Conditions[1].Status)
	assert.Equal(t, "QuorumLost", n.Status.Conditions[1].Reason)
	assert.Equal(t, at(4), n.Status.Conditions[1].LastTransitionTime)
}

// A machine that cannot be read is Node's error, and Machine's; nothing is built.
func TestReporterReportsAnUnreadableMachine(t *testing.T) {
	r := New(Options{ReadHost: func() (Host, error) { return Host{}, errors.New("/proc/stat: no cpuN line") }})
	_, err := r.Node(context.Background())
	assert.EqualError(t, err, "/proc/stat: no cpuN line")
	_, err = r.Machine()
	assert.EqualError(t, err, "/proc/stat: no cpuN line")
}

// Machine is Node without conditions, and runs no health check (what a fleet node sends its
// aggregator, which makes its own Ready).
func TestMachineIsTheNodeWithoutConditions(t *testing.T) {
	r := New(Options{Name: "n1", Start: started, Port: 10300, NodeVersion: "dev",
		ReadHost: func() (Host, error) { return machine, nil },
		Now:      func() time.Time { return started.Add(time.Minute) },
		Failures: func(context.Context) []string { t.Error("Machine ran the health checks"); return nil }})
	r.SetCondition(v1.NodeCondition{Type: "ClusterQuorum", Status: v1.ConditionFalse, Reason: "QuorumLost"})
	m, err := r.Machine()
	require.NoError(t, err)
	assert.Empty(t, m.Status.Conditions)
	want := Build(Info{Name: "n1", Created: started, Host: machine, OS: m.Status.NodeInfo.OperatingSystem,
		Arch: m.Status.NodeInfo.Architecture, NodeVersion: "dev", Port: 10300})
	want.Status.Conditions = nil
	assert.Equal(t, want, m)
	assert.Equal(t, "16", m.Status.Capacity.Cpu().String())
}
