package clusterv1

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeartbeatValidateNamesTheField(t *testing.T) {
	valid := func() *Heartbeat {
		return &Heartbeat{Cluster: "demo", Address: "127.0.0.1:7101", Incarnation: 1, Seq: 1, View: []string{"127.0.0.1:7101", "127.0.0.1:7102"}}
	}
	require.NoError(t, valid().Validate())
	withLease := valid()
	withLease.Acks = []*Heartbeat_Ack{{Address: "127.0.0.1:7102", Incarnation: 7, Seq: 3}}
	withLease.Stopping = []string{"0b6a3c1e-0000-4000-8000-000000000001"}
	withLease.Claims = []*Heartbeat_Claim{
		{Origin: "127.0.0.1:7101", Incarnation: 1, Lamport: 4, Key: "uid/app/containerd://1"},
		{Origin: "127.0.0.1:7102", Incarnation: 7, Lamport: 3, Taken: true, AgeMs: 1200},
	}
	require.NoError(t, withLease.Validate())
	require.NoError(t, (&Heartbeat{Cluster: "demo", Address: "n1.example:7101", Incarnation: 1, Seq: 1}).Validate(), "an empty view: the first round is not complete")

	long := valid()
	long.View = nil
	for i := range MaxView + 1 {
		long.View = append(long.View, fmt.Sprintf("10.0.%d.%d:1", i/256, i%256))
	}
	for _, tc := range []struct {
		name   string
		mutate func(h *Heartbeat)
		want   string
	}{
		{"no cluster", func(h *Heartbeat) { h.Cluster = "" }, "cluster: required"},
		{"no address", func(h *Heartbeat) { h.Address = "" }, "address:"},
		{"address without port", func(h *Heartbeat) { h.Address = "127.0.0.1" }, "address:"},
		{"address without host", func(h *Heartbeat) { h.Address = ":7101" }, "address: \":7101\": no host"},
		{"port zero", func(h *Heartbeat) { h.Address = "127.0.0.1:0" }, "port \"0\""},
		{"port too large", func(h *Heartbeat) { h.Address = "127.0.0.1:70000" }, "port \"70000\""},
		{"no incarnation", func(h *Heartbeat) { h.Incarnation = 0 }, "incarnation: required"},
		{"seq zero", func(h *Heartbeat) { h.Seq = 0 }, "seq: must be at least 1"},
		{"bad view entry", func(h *Heartbeat) { h.View[1] = "nonsense" }, "view[1]:"},
		{"duplicate view entry", func(h *Heartbeat) { h.View[1] = h.View[0] }, "view[1]: duplicate"},
		{"view too long", func(h *Heartbeat) { h.View = long.View }, "view: 1025 members"},
		{"ack without address", func(h *Heartbeat) { h.Acks = []*Heartbeat_Ack{{Incarnation: 1, Seq: 1}} }, "acks[0].address:"},
		{"ack without seq", func(h *Heartbeat) { h.Acks = []*Heartbeat_Ack{{Address: "127.0.0.1:7102", Incarnation: 1}} }, "acks[0]: incarnation and seq are required"},
		{"empty stopping UID", func(h *Heartbeat) { h.Stopping = []string{"a", ""} }, "stopping[1]: a pod UID"},
		{"claim without origin", func(h *Heartbeat) { h.Claims = []*Heartbeat_Claim{{Incarnation: 1, Lamport: 1}} }, "claims[0].origin:"},
		{"claim without lamport", func(h *Heartbeat) {
			h.Claims = []*Heartbeat_Claim{{Origin: "127.0.0.1:7101", Incarnation: 1}}
		}, "claims[0]: incarnation and lamport are required"},
		{"claim key too long", func(h *Heartbeat) {
			h.Claims = []*Heartbeat_Claim{{Origin: "127.0.0.1:7101", Incarnation: 1, Lamport: 1, Key: string(make([]byte, 513))}}
		}, "claims[0].key: 513 bytes"},
		{"too many claims", func(h *Heartbeat) { h.Claims = make([]*Heartbeat_Claim, MaxClaims+1) }, "claims: 4097 entries"},
		{"stopping too long", func(h *Heartbeat) { h.Stopping = make([]string, MaxStopping+1) }, "stopping: 65537 pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := valid()
			tc.mutate(h)
			err := h.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestNamesListsTheHeartbeat(t *testing.T) {
	assert.Equal(t, []string{"probeactor.cluster.v1.Heartbeat"}, Names())
}
