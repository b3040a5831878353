package clustertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cluster/ownership"
)

func TestLedgerAnalysis(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	a, b := "127.0.0.1:7101", "127.0.0.1:7102"
	members := []string{a, b}
	var pa, pb types.UID // a pod owned by a, one owned by b
	for i := 0; pa == "" || pb == ""; i++ {
		uid := types.UID("pod-" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
		if ownership.Owner(string(uid), members) == a && pa == "" {
			pa = uid
		} else if ownership.Owner(string(uid), members) == b && pb == "" {
			pb = uid
		}
	}
	events := []Event{
		{At: at(0), Member: a, Kind: Start, UID: pa},
		{At: at(0), Member: a, Kind: Start, UID: pb},
		{At: at(100), Member: b, Kind: View, Members: members},
		{At: at(150), Member: b, Kind: Start, UID: pb}, // runs twice from 150 ms …
		{At: at(180), Member: a, Kind: Stop, UID: pb},  // … to 180 ms
		{At: at(300), Member: b, Kind: Gone},
	}
	require.Equal(t, map[types.UID][]string{pa: {a}, pb: {a, b}}, Placement(events, at(160)))
	assert.NoError(t, ExactlyOnce(events[:5], []types.UID{pa, pb}, members))
	assert.ErrorContains(t, ExactlyOnce(events, []types.UID{pa, pb}, members), string(pb)+" runs nowhere")
	assert.ErrorContains(t, ExactlyOnce(events[:4], []types.UID{pa, pb}, members), " runs on ["+a+" "+b+"]")
	assert.ErrorContains(t, ExactlyOnce(events[:2], []types.UID{pa, pb}, members), "not its owner "+b)
	assert.ErrorContains(t, ExactlyOnce(events[:2], []types.UID{pa}, members), "is not in the pod set but runs on")

	longest, pods := Duplicates(events, t0)
	assert.Equal(t, 30*time.Millisecond, longest)
	assert.Equal(t, 1, pods)
	longest, pods = Duplicates(events, at(200))
	assert.Zero(t, longest, "nothing ran twice after 200 ms")
	assert.Zero(t, pods)
	assert.Equal(t, at(180), LastChange(events, t0))
	assert.Equal(t, at(100), FirstView(events, b, members, t0))
	assert.True(t, FirstView(events, a, members, t0).IsZero())

	var out string
	for _, e := range events {
		out += Line(e) + "\n" + "some log line\n"
	}
	parsed := ParseLines(b, out)
	require.Len(t, parsed, len(events))
	for i, e := range events {
		e.Member = b
		assert.Equal(t, e.At.UnixNano(), parsed[i].At.UnixNano())
		parsed[i].At = e.At
		assert.Equal(t, e, parsed[i])
	}
}
