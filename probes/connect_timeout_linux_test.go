package probes

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probeactor/probeactor/internal/sysfault"
)

// fullBacklogListener returns a loopback address whose connects hang (sysfault.HangingPort): what an
// unreachable or overloaded target looks like, without leaving loopback.
func fullBacklogListener(t *testing.T) *net.TCPAddr {
	t.Helper()
	port, closePort, err := sysfault.HangingPort()
	require.NoError(t, err)
	t.Cleanup(closePort)
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
}

// TestConnectTimeout: a connect that hangs is a Failure with ReasonTimeout once the probe's
// timeout passes, for TCP and HTTP alike (kubelet's "dial tcp ...: i/o timeout" and
// "Client.Timeout exceeded").
func TestConnectTimeout(t *testing.T) {
	addr := fullBacklogListener(t)
	for _, tc := range []struct {
		name string
		spec *v1.Probe
		want string
	}{
		{"tcp", tcpProbe("127.0.0.1", addr.Port, 1), "dial tcp " + addr.String() + ": i/o timeout"},
		{"http", &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
			Host: "127.0.0.1", Port: intstr.FromInt(addr.Port), Path: "/", Scheme: v1.URISchemeHTTP,
		}}}, "Client.Timeout exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := New(nil).Probe(context.Background(), tc.spec, Target{})
			require.NoError(t, err)
			assert.Equal(t, Failure, out.Result, out.Output)
			assert.Equal(t, ReasonTimeout, out.Reason, out.Output)
			assert.Contains(t, out.Output, tc.want)
			assert.GreaterOrEqual(t, out.Duration, Timeout(tc.spec)-50*time.Millisecond, "gave up before the timeout: %s", out.Output)
			assert.Less(t, out.Duration, Timeout(tc.spec)+hostileGrace, "the attempt outlived its timeout")
		})
	}
}
