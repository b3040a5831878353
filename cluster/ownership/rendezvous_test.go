package ownership

import (
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScoreIsFNV1a64ThenFmix64(t *testing.T) {
	fmix := func(h uint64) uint64 {
		h ^= h >> 33
		h *= 0xff51afd7ed558ccd
		h ^= h >> 33
		h *= 0xc4ceb9fe1a85ec53
		return h ^ h>>33
	}
	for _, tc := range []struct{ key, member string }{{"", ""}, {"pod-1", "127.0.0.1:7101"}, {"ä", "host:1"}} {
		h := fnv.New64a()
		h.Write([]byte(tc.key))
		h.Write([]byte{0})
		h.Write([]byte(tc.member))
		assert.Equal(t, fmix(h.Sum64()), Score(tc.key, tc.member), "%q %q", tc.key, tc.member)
	}
	assert.NotEqual(t, Score("ab", "c"), Score("a", "bc"))
}

var loopback3 = []string{"127.0.0.1:7101", "127.0.0.1:7102", "127.0.0.1:7103"}

func shares(n int, owner func(uid string) string) map[string]int {
	c := map[string]int{}
	for i := range n {
		c[owner(fmt.Sprintf("pod-%d", i))]++
	}
	return c
}

// The reason Score deviates from protoactor: pins the skew of the pinned protoactor's rendezvous
// for members on adjacent ports (if an upgrade fixes it, this fails: revisit Score's doc).
func TestProtoactorsScoreIsSkewedForAdjacentPorts(t *testing.T) {
	var pm cluster.Members
	for i, a := range loopback3 {
		pm = append(pm, &cluster.Member{Id: fmt.Sprint(i), Host: "127.0.0.1", Port: int32(7101 + i), Kinds: []string{"pod"}})
		require.Equal(t, a, pm[i].Address())
	}
	rdv := cluster.NewRendezvous()
	rdv.UpdateMembers(pm)
	theirs := shares(3000, func(uid string) string {
		return rdv.GetByClusterIdentity(&cluster.ClusterIdentity{Identity: uid, Kind: "pod"})
	})
	assert.Greater(t, theirs["127.0.0.1:7101"], 1400, "protoactor's FNV-1a 32 gives the first port about half: %v", theirs)

	ours := shares(3000, func(uid string) string { return Owner(uid, loopback3) })
	for _, a := range loopback3 {
		assert.InDelta(t, 1000, ours[a], 100, "equal shares with Score: %v", ours)
	}
}

func TestOwnerIsIndependentOfOrderAndMovesOnlyTheChangedMembersKeys(t *testing.T) {
	a, b, c := loopback3[0], loopback3[1], loopback3[2]
	assert.Empty(t, Owner("x", nil))
	assert.Equal(t, a, Owner("x", []string{a}))
	for i := range 3000 {
		uid := fmt.Sprintf("pod-%d", i)
		all := Owner(uid, []string{a, b, c})
		require.Equal(t, all, Owner(uid, []string{c, a, b}), "order must not matter")
		without := Owner(uid, []string{a, c})
		if all != b {
			require.Equal(t, all, without, "removing b moves only b's keys")
		} else {
			require.Contains(t, []string{a, c}, without)
		}
	}
}

func TestOwnerBreaksTiesByLowestAddress(t *testing.T) {
	// Equal 64-bit scores cannot be found by search: check the rule with a constant score.
	flat := func(string, string) uint64 { return 7 }
	assert.Equal(t, "10.0.0.1:1", ownerBy("k", []string{"10.0.0.2:1", "10.0.0.1:1", "10.0.0.3:1"}, flat))
	assert.Equal(t, "10.0.0.1:1", ownerBy("k", []string{"10.0.0.1:1", "10.0.0.2:1"}, flat))
}
