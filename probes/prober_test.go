package probes

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// prober is the interface the actor core declares; *Prober must satisfy it (kubelet's TestNew).
var _ interface {
	Probe(context.Context, *v1.Probe, Target) (Outcome, error)
} = (*Prober)(nil)

// TestProbe is kubelet's prober_test TestProbe at this package's level (the retry and event mapping
// live in the actor core): nil probe, no handler, exec outcomes, command passthrough and expansion.
func TestProbe(t *testing.T) {
	c := &v1.Container{Name: "cOnTaInEr_NaMe", Env: []v1.EnvVar{{Name: "A", Value: "script"}}}
	target := Target{Container: c, ContainerID: "test://cOnTaInEr_Id", PodIP: "127.0.0.1"}

	t.Run("nil probe is success", func(t *testing.T) {
		out, err := New(&fakeRunner{}).Probe(context.Background(), nil, target)
		require.NoError(t, err)
		assert.Equal(t, Success, out.Result)
	})
	t.Run("no handler is an error", func(t *testing.T) {
		out, err := New(&fakeRunner{}).Probe(context.Background(), &v1.Probe{}, target)
		require.ErrorIs(t, err, ErrNoHandler)
		assert.EqualError(t, err, `missing probe handler for container "cOnTaInEr_NaMe"`)
		assert.Equal(t, Unknown, out.Result)
		assert.Equal(t, ReasonNoHandler, out.Reason)
	})
	for _, tc := range []struct {
		name    string
		cmd     []string
		wantCmd []string
	}{
		{"passthrough", []string{"/bin/bash", "-c", "some script"}, []string{"/bin/bash", "-c", "some script"}},
		{"expansion", []string{"/bin/bash", "-c", "some $(A) $(B)"}, []string{"/bin/bash", "-c", "some script $(B)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRunner{}
			_, err := New(r).Probe(context.Background(), execProbe(1, tc.cmd...), target)
			require.NoError(t, err)
			assert.Equal(t, tc.wantCmd, r.cmd)
			assert.Equal(t, "test://cOnTaInEr_Id", r.containerID)
		})
	}
}

// TestHandlerPrecedence: with several handlers set (invalid, but possible for an embedder that skips
// validation) kubelet's order applies: exec, httpGet, tcpSocket, grpc.
func TestHandlerPrecedence(t *testing.T) {
	s := newServer(t, statusHandler(500))
	host, port := hostPort(t, s.URL)
	httpGet := &v1.HTTPGetAction{Host: host, Port: intstr.FromInt(port), Path: "/"}
	tcp := &v1.TCPSocketAction{Host: host, Port: intstr.FromInt(port)}
	grpcAction := &v1.GRPCAction{Port: int32(port)}

	r := &fakeRunner{output: "exec ran"}
	p := New(r)
	out, err := p.Probe(context.Background(), &v1.Probe{ProbeHandler: v1.ProbeHandler{
		Exec: &v1.ExecAction{Command: []string{"x"}}, HTTPGet: httpGet, TCPSocket: tcp, GRPC: grpcAction}}, Target{})
	require.NoError(t, err)
	assert.Equal(t, "exec ran", out.Output)

	out, err = p.Probe(context.Background(), &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: httpGet, TCPSocket: tcp, GRPC: grpcAction}}, Target{})
	require.NoError(t, err)
	assert.Equal(t, "HTTP probe failed with statuscode: 500", out.Output)

	out, err = p.Probe(context.Background(), &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: tcp, GRPC: grpcAction}}, Target{})
	require.NoError(t, err)
	assert.Equal(t, Success, out.Result, "tcp connects where grpc would fail")
}

func TestTimeout(t *testing.T) {
	assert.Equal(t, time.Second, Timeout(nil))
	assert.Equal(t, time.Second, Timeout(&v1.Probe{}))
	assert.Equal(t, time.Second, Timeout(&v1.Probe{TimeoutSeconds: -3}))
	assert.Equal(t, 7*time.Second, Timeout(&v1.Probe{TimeoutSeconds: 7}))
}

// TestProberConcurrentUse: one Prober serves many goroutines at once (run under -race).
func TestProberConcurrentUse(t *testing.T) {
	s := newServer(t, statusHandler(200))
	host, port := hostPort(t, s.URL)
	p := New(&fakeRunner{output: "ok"})
	specs := []*v1.Probe{httpProbe(t, s.URL, "/", 2), tcpProbe(host, port, 2)}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := p.Probe(context.Background(), specs[i%len(specs)], Target{})
			if err == nil && out.Result != Success {
				err = errors.New(out.Output)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestProbeCallerCancellation: when the caller's context ends mid-attempt the outcome is not a
// verdict: Unknown, ReasonCanceled and an error.
func TestProbeCallerCancellation(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	s := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(started) })
		waitCtx(r.Context(), 10*time.Second)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	out, err := New(nil).Probe(ctx, httpProbe(t, s.URL, "/", 10), Target{})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, Unknown, out.Result)
	assert.Equal(t, ReasonCanceled, out.Reason)
}
