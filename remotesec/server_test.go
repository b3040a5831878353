package remotesec

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/internal/lifecycle"
)

var _ lifecycle.Component = (*Server)(nil)

// TestServerListensFromStartToStop: the remote part listens only between Start and Stop, says its
// address meanwhile, and a busy address is Start's error (nothing runs then).
func TestServerListensFromStartToStop(t *testing.T) {
	sys := newSystem(t)
	defer sys.Shutdown()
	s := NewServer(sys, Config{Listen: "127.0.0.1:0"})
	assert.Empty(t, s.Address(), "not listening before Start")
	require.NoError(t, s.Start(context.Background()))
	addr := s.Address()
	require.NotEmpty(t, addr)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err, "it listens")
	conn.Close()

	require.NoError(t, s.Stop(context.Background()))
	assert.Empty(t, s.Address())
	_, err = net.Dial("tcp", addr)
	assert.Error(t, err, "it no longer listens")
	require.NoError(t, s.Stop(context.Background()), "a second Stop does nothing")

	// Another listener holds the address (one remote per process at a time: protoactor's Start
	// sets gRPC's global logger while another remote's server may log).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	busy := NewServer(newSystem(t), Config{Listen: ln.Addr().String()})
	err = busy.Start(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "remote listen "+ln.Addr().String())
	assert.Empty(t, busy.Address(), "nothing runs")
}
