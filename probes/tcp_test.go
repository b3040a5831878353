package probes

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestTcpHealthChecker is kubelet's tcp_test, plus named ports, refused and timeout outcomes.
func TestTcpHealthChecker(t *testing.T) {
	s := newServer(t, statusHandler(200))
	host, port := hostPort(t, s.URL)
	p := New(nil)

	out, err := p.Probe(context.Background(), tcpProbe(host, port, 1), Target{})
	require.NoError(t, err)
	assert.Equal(t, Success, out.Result)
	assert.Empty(t, out.Output)
	assert.Positive(t, out.Duration)

	// kubelet's "port -1" case: the dial itself fails.
	out, err = p.doTCP(context.Background(), net.JoinHostPort(host, "-1"), DefaultTimeout)
	require.NoError(t, err)
	assert.Equal(t, Failure, out.Result)
	assert.NotEmpty(t, out.Output)

	// Through Probe, -1 is not a port at all: the attempt cannot be made.
	out, err = p.Probe(context.Background(), tcpProbe(host, -1, 1), Target{})
	require.ErrorIs(t, err, ErrInvalidPort)
	assert.Equal(t, Unknown, out.Result)
}

func TestTCPProbeOutcomes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())

	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "svc", ContainerPort: int32(port)}}}
	spec := &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("svc")}}}
	out, err := New(nil).Probe(context.Background(), spec, Target{Container: c, PodIP: "127.0.0.1"})
	require.NoError(t, err)
	assert.Equal(t, Failure, out.Result)
	assert.Equal(t, ReasonConnectionRefused, out.Reason)
	assert.Contains(t, out.Output, "connection refused")
}
