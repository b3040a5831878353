package freeport

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPortsNeverRepeat: ports picked one after another for listeners that bind them later differ,
// and each is free when picked.
func TestPortsNeverRepeat(t *testing.T) {
	seen := map[int]bool{}
	for range 300 {
		p := Port(t)
		require.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
	}
	ln, err := net.Listen("tcp", Addr(t))
	require.NoError(t, err, "the address is free")
	require.NoError(t, ln.Close())
}
