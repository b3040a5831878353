package fakeruntime

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// The real prober (TestWithProbesPackage) may start goroutines for exec timeouts.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testPod() *v1.Pod {
	always := v1.ContainerRestartPolicyAlways
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "uid"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init"}, {Name: "side", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "app"}}}}
}

func TestRunPodKillRestart(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var pushed []v1.PodStatus
	r := New(clk)
	r.ReportStatus(func(_ *v1.Pod, st v1.PodStatus) { pushed = append(pushed, st) })
	p := testPod()
	r.RunPod(p)
	require.Len(t, pushed, 1)
	st := pushed[0]
	assert.Equal(t, v1.PodRunning, st.Phase)
	require.Len(t, st.ContainerStatuses, 1)
	assert.Equal(t, "fake://p/app/1", st.ContainerStatuses[0].ContainerID)
	assert.NotNil(t, st.ContainerStatuses[0].State.Running)
	require.Len(t, st.InitContainerStatuses, 2)
	assert.NotNil(t, st.InitContainerStatuses[0].State.Terminated, "regular init container completed")
	assert.NotNil(t, st.InitContainerStatuses[1].State.Running, "sidecar running")

	clk.Advance(time.Second)
	req := messages.KillContainer{Pod: p, Container: "app", ContainerID: "fake://p/app/1", Restart: true}
	require.NoError(t, r.KillContainer(context.Background(), req))
	require.Len(t, pushed, 2)
	cs := pushed[1].ContainerStatuses[0]
	assert.Equal(t, "fake://p/app/2", cs.ContainerID)
	assert.Equal(t, int32(1), cs.RestartCount)
	assert.Equal(t, int32(137), cs.LastTerminationState.Terminated.ExitCode)
	assert.Equal(t, clk.Now(), cs.State.Running.StartedAt.Time)

	// A stale ID is recorded but ignored.
	require.NoError(t, r.KillContainer(context.Background(), req))
	assert.Len(t, pushed, 2)
	assert.Len(t, r.Kills(), 2)

	// No restart: terminated.
	req.ContainerID, req.Restart = "fake://p/app/2", false
	require.NoError(t, r.KillContainer(context.Background(), req))
	st, _ = r.Status("uid")
	assert.NotNil(t, st.ContainerStatuses[0].State.Terminated)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, r.KillContainer(ctx, req), context.Canceled)
}

func TestExecScripts(t *testing.T) {
	r := New(clock.Real())
	r.RunPod(testPod())
	var out bytes.Buffer
	require.NoError(t, r.RunInContainer(context.Background(), "fake://p/app/1", []string{"x"}, &out), "default exit 0")
	r.SetExec("app", func(_ context.Context, cmd []string) (string, int, error) { return "bad " + cmd[0], 3, nil })
	err := r.RunInContainer(context.Background(), "fake://p/app/1", []string{"x"}, &out)
	var ee interface{ ExitCode() int }
	require.True(t, errors.As(err, &ee))
	assert.Equal(t, 3, ee.ExitCode())
	assert.Contains(t, out.String(), "bad x")
	r.SetExec("", func(context.Context, []string) (string, int, error) {
		return "", 0, probes.ErrCommandTimedOut
	})
	assert.ErrorIs(t, r.RunInContainer(context.Background(), "fake://p/side/1", nil, &out), probes.ErrCommandTimedOut)
	assert.Error(t, r.RunInContainer(context.Background(), "fake://nope", nil, &out))
}

// The real prober runs exec probes through the fake runtime.
func TestWithProbesPackage(t *testing.T) {
	r := New(clock.Real())
	p := testPod()
	r.RunPod(p)
	r.SetExec("app", func(context.Context, []string) (string, int, error) { return "nope", 1, nil })
	pr := probes.New(r)
	spec := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check"}}}, TimeoutSeconds: 1}
	out, err := pr.Probe(context.Background(), spec, probes.Target{Container: &p.Spec.Containers[0], ContainerID: "fake://p/app/1"})
	require.NoError(t, err)
	assert.Equal(t, probes.Failure, out.Result)
	assert.Equal(t, "nope", out.Output)
}
