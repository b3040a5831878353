package proc

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/messages"
)

// fencedBound bounds how long after its lease's deadline a fenced container may still run: the
// grace period (2 s here) plus a loaded machine's slack. An upper bound only; without the lease
// these containers would run for the hour-long window, or forever.
const fencedBound = 20 * time.Second

const fencedExit = "the node's cluster lease ran out; the shim stopped the container"

// keepRenewing plays the cluster membership: it sets rt's lease (until now+lease), then renews
// it every interval until the returned stop is called; stop returns once the last renewal has.
func keepRenewing(rt *Runtime, lease, interval time.Duration) (stop func()) {
	rt.SetLease(time.Now().Add(lease))
	quit, done := make(chan struct{}), make(chan struct{})
	go func() { // ends at stop
		defer close(done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-ticker.C:
				rt.SetLease(time.Now().Add(lease))
			case <-quit:
				return
			}
		}
	}()
	return func() { close(quit); <-done }
}

// waitReason waits until container name of pod uid is in the state (waiting or terminated) with
// reason, and returns its status.
func waitReason(t *testing.T, rec *recorder, uid types.UID, name, reason string) v1.ContainerStatus {
	t.Helper()
	var cs v1.ContainerStatus
	require.Eventually(t, func() bool {
		cs, _ = rec.container(uid, name)
		return cs.State.Waiting != nil && cs.State.Waiting.Reason == reason ||
			cs.State.Terminated != nil && cs.State.Terminated.Reason == reason
	}, settle, tick, "%s: %s", name, reason)
	return cs
}

// A lease that is not renewed ends the container at its deadline: the shim stops it on its own
// (node asks nothing: no Killing), and node records it terminated, Fenced.
func TestAnUnrenewedLeaseStopsTheContainer(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	work := t.TempDir()
	pod := shPod("unrenewed", v1.RestartPolicyNever, `echo $$$$ > pid; exec sleep 300`)
	pod.Spec.Containers[0].WorkingDir = work
	require.NoError(t, rt.Run(pod))
	waitRunning(t, rec, pod.UID, "c")
	pid := readPIDs(t, filepath.Join(work, "pid"), 1)[0]

	deadline := time.Now().Add(300 * time.Millisecond)
	rt.SetLease(deadline)
	cs := waitReason(t, rec, pod.UID, "c", ReasonFenced)
	assert.Less(t, time.Since(deadline), fencedBound)
	assert.False(t, alive(pid))
	require.NotNil(t, cs.State.Terminated)
	assert.Equal(t, fencedExit, cs.State.Terminated.Message)
	assert.Equal(t, int32(143), cs.State.Terminated.ExitCode, "SIGTERM")
	for _, r := range rec.reasons("c") {
		assert.False(t, strings.HasPrefix(r, "Killing"), "node asked for nothing: %s", r)
	}
	b, err := os.ReadFile(filepath.Join(rt.opts.RootDir, "pods", PodDirName(pod), "c", "0.log"))
	require.NoError(t, err)
	assert.Empty(t, string(b), "the shim writes nothing to the container's log")
}

// A shim with no node connected (node gone, an hour-long re-attach window) still stops its
// container at its lease, and keeps the exit, Fenced, for the next node. The shim was started
// under the lease (its spec carries it) and renewed until node left.
func TestAShimWithoutANodeStillFencesAtItsLease(t *testing.T) {
	t.Parallel()
	root, work := t.TempDir(), t.TempDir()
	rt1, rec1, _ := newRuntimeAt(t, root, clock.Real(), time.Hour)
	stop := keepRenewing(rt1, time.Second, 50*time.Millisecond)
	pod := shPod("alone", v1.RestartPolicyNever, `echo $$$$ > pid; exec sleep 300`)
	pod.Spec.Containers[0].WorkingDir = work
	require.NoError(t, rt1.Run(pod))
	waitRunning(t, rec1, pod.UID, "c")
	pid := readPIDs(t, filepath.Join(work, "pid"), 1)[0]
	shim := shimOf(t, pid)
	stop()
	lastRenewal := time.Now()
	rt1.Detach() // node goes away; the lease is not renewed any more

	assertGone(t, []int{pid})
	assert.Less(t, time.Since(lastRenewal), time.Second+fencedBound, "the lease's end, not the hour-long window's")

	rt2, rec2, _ := newRuntimeAt(t, root, clock.Real(), time.Hour)
	startRecovered(t, rt2)
	require.NoError(t, rt2.Run(pod))
	cs := waitReason(t, rec2, pod.UID, "c", ReasonFenced)
	require.NotNil(t, cs.State.Terminated, "adopted as ended, Fenced, from the shim's hello")
	assert.Equal(t, fencedExit, cs.State.Terminated.Message)
	assertGone(t, []int{shim})
}

// Renewals keep the container running past several lease lengths; an earlier lease given
// meanwhile is ignored (a lease is only ever extended).
func TestRenewalsKeepTheContainerRunning(t *testing.T) {
	t.Parallel()
	const lease = 500 * time.Millisecond
	rt, rec := newTestRuntime(t, clock.Real())
	work := t.TempDir()
	pod := shPod("renewed", v1.RestartPolicyAlways, `echo $$$$ > pid; exec sleep 300`)
	pod.Spec.Containers[0].WorkingDir = work
	require.NoError(t, rt.Run(pod))
	first := waitRunning(t, rec, pod.UID, "c")
	pid := readPIDs(t, filepath.Join(work, "pid"), 1)[0]

	stop := keepRenewing(rt, lease, 20*time.Millisecond)
	end := time.Now().Add(3 * lease)
	for time.Now().Before(end) {
		rt.SetLease(time.Now()) // earlier than the lease held: ignored
		require.True(t, alive(pid), "the container runs while the lease is renewed")
		time.Sleep(50 * time.Millisecond) // the membership's pace, not a wait for the runtime
	}
	stop()
	rt.SetLease(time.Now().Add(time.Hour)) // and the test ends with it held
	assert.True(t, alive(pid))
	cs, _ := rec.container(pod.UID, "c")
	assert.Equal(t, first.ContainerID, cs.ContainerID)
	assert.NotNil(t, cs.State.Running)
	assert.Equal(t, int32(0), cs.RestartCount)
}

// Once the lease has run out, a container under Always is not restarted, not even when the pod
// decides again; it waits, Fenced. The renewal that extends the lease past now restarts it.
// (Init containers and sidecars: TestDecideWhileFenced.)
func TestNoRestartAfterTheLeaseRanOut(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	pod := shPod("held", v1.RestartPolicyAlways, `exec sleep 300`)
	require.NoError(t, rt.Run(pod))
	first := waitRunning(t, rec, pod.UID, "c")

	rt.SetLease(time.Now().Add(300 * time.Millisecond))
	cs := waitReason(t, rec, pod.UID, "c", ReasonFenced)
	require.NotNil(t, cs.State.Waiting, "waits, not terminated")
	assert.Equal(t, "the node's cluster lease ran out: no container of this pod starts here again; the cluster places the pod anew", cs.State.Waiting.Message)
	require.NotNil(t, cs.LastTerminationState.Terminated)
	assert.Equal(t, ReasonFenced, cs.LastTerminationState.Terminated.Reason)
	assert.Equal(t, int32(0), cs.RestartCount)
	// Two messages the pod ignores: once the second is answered, the pod has decided again after
	// the first, with the lease still run out.
	for range 2 {
		require.NoError(t, rt.KillContainer(context.Background(), messages.KillContainer{Pod: pod, Container: "c", ContainerID: "proc://none"}))
	}
	cs, _ = rec.container(pod.UID, "c")
	require.NotNil(t, cs.State.Waiting)
	assert.Equal(t, ReasonFenced, cs.State.Waiting.Reason)
	assert.Equal(t, first.ContainerID, cs.ContainerID, "no new instance")
	assert.Equal(t, []string{"Created: Container created", "Started: Container started"}, rec.reasons("c"))

	// A renewal does not start it: the member's sharder stops the pod and places it anew, and a
	// renewal reaching the runtime before that stop must not start what may run elsewhere.
	rt.SetLease(time.Now().Add(time.Hour))
	for range 2 {
		require.NoError(t, rt.KillContainer(context.Background(), messages.KillContainer{Pod: pod, Container: "c", ContainerID: "proc://none"}))
	}
	cs, _ = rec.container(pod.UID, "c")
	require.NotNil(t, cs.State.Waiting)
	assert.Equal(t, ReasonFenced, cs.State.Waiting.Reason)
	assert.Equal(t, first.ContainerID, cs.ContainerID, "still no new instance after the renewal")
	assert.Equal(t, []string{"Created: Container created", "Started: Container started"}, rec.reasons("c"))
}

// With a lease already run out, not even a first start happens (an init container here); a
// new instance of the pod starts under a renewed lease.
func TestNothingStartsUnderARunOutLease(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	rt.SetLease(time.Now().Add(-time.Second))
	pod := shPod("late", v1.RestartPolicyAlways, `exec sleep 300`)
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Command: []string{"true"}}}
	require.NoError(t, rt.Run(pod))
	cs := waitReason(t, rec, pod.UID, "init", ReasonFenced)
	assert.Empty(t, cs.ContainerID)
	assert.Empty(t, rec.reasons("init"), "nothing started")

	// A new instance of the pod (the cluster placed it here again) starts under the renewed lease.
	require.NoError(t, rt.Remove(context.Background(), pod.UID))
	rt.SetLease(time.Now().Add(time.Hour))
	again := shPod("late", v1.RestartPolicyAlways, `exec sleep 300`)
	again.UID = pod.UID + "-2"
	require.NoError(t, rt.Run(again))
	waitRunning(t, rec, again.UID, "c")
}

// A kill under way (a TERM with an hour's grace; node's own SIGKILL timer never fires here) and a
// lease that runs out meanwhile: the shim SIGKILLs the tree, a setsid'd child included, at the
// earlier deadline — the lease's plus the pod's grace period — and the exit is Fenced.
func TestAKillUnderWayEndsAtTheLeasesEarlierDeadline(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	rt, rec := newTestRuntime(t, clk)
	work := t.TempDir()
	pod := shPod("term-then-lease", v1.RestartPolicyNever,
		`trap '' TERM; setsid sleep 301 & echo $! >> pids; echo $$$$ >> pids; while :; do sleep 0.05; done`)
	pod.Spec.Containers[0].WorkingDir = work
	require.NoError(t, rt.Run(pod))
	cs := waitRunning(t, rec, pod.UID, "c")
	pids := readPIDs(t, filepath.Join(work, "pids"), 2)

	killed := make(chan error, 1)
	go func() { // ends when the container has exited (or at settle)
		ctx, cancel := context.WithTimeout(context.Background(), settle)
		defer cancel()
		killed <- rt.KillContainer(ctx, messages.KillContainer{Pod: pod, Container: "c", ContainerID: messages.ContainerID(cs.ContainerID), GracePeriod: time.Hour})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	require.NoError(t, clk.WaitPending(ctx, 1), "the TERM is sent, node's SIGKILL armed")
	for _, p := range pids {
		assert.True(t, alive(p), "pid %d: SIGTERM is ignored", p)
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	rt.SetLease(deadline)
	require.NoError(t, <-killed)
	assert.Less(t, time.Since(deadline), podapi.MinimumGracePeriod+fencedBound, "the lease's deadline and grace, not the TERM's hour")
	assertGone(t, pids)
	st := waitReason(t, rec, pod.UID, "c", ReasonFenced)
	assert.Equal(t, int32(137), st.State.Terminated.ExitCode, "SIGKILL")
}

// The shim holds the lease its spec gives it from the start: with the deadline passed it does not
// start the container at all; with one ahead, it stops the container on its own when it passes —
// no node renews or asks anything.
func TestAShimArmsTheLeaseItStartsWith(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, err := os.Create(filepath.Join(dir, "log"))
	require.NoError(t, err)
	defer log.Close()
	socket := filepath.Join(dir, "shim.sock")
	start := func(deadline int64) (*process, error) {
		return startProcess([]string{os.Args[0], ShimArg}, processSpec{Path: "sleep", Args: []string{"300"}, Env: os.Environ(), Log: log,
			Socket: socket, Grace: podapi.MinimumGracePeriod, LeaseDeadline: deadline})
	}
	_, err = start(monoNow() - 1)
	require.ErrorIs(t, err, errFenced)
	assert.NoFileExists(t, socket, "nothing was left")

	for lease := 500 * time.Millisecond; ; lease *= 2 {
		p, err := start(monoNow() + int64(lease))
		if errors.Is(err, errFenced) && lease < settle {
			continue // this machine took longer than the lease to start the shim: a longer one
		}
		require.NoError(t, err)
		select {
		case <-p.done:
		case <-time.After(lease + fencedBound):
			t.Fatal("the container outlived its lease")
		}
		assert.True(t, p.exit.Fenced)
		assert.Equal(t, 143, p.exit.ExitCode, "SIGTERM")
		break
	}
	assert.NoFileExists(t, socket)
}

// The lease can run out between a pod's decision and the start it decided. start looks again
// before it opens anything: the container waits, Fenced, with no shim, log or event, as if the
// decision had found the lease run out. (The shim looks a third time, as it starts:
// TestAShimArmsTheLeaseItStartsWith.)
func TestAStartDecidedBeforeTheLeaseRanOutDoesNotHappen(t *testing.T) {
	t.Parallel()
	rt, rec := newTestRuntime(t, clock.Real())
	pod := shPod("raced", v1.RestartPolicyAlways, `exec sleep 300`)
	pr, err := rt.add(pod.DeepCopy())
	require.NoError(t, err)
	rt.SetLease(time.Now().Add(-time.Millisecond)) // ran out after the decision, before the start

	pr.start("c")
	assert.Empty(t, pr.procs, "no process")
	assert.NoDirExists(t, filepath.Join(pr.dir, "c"), "no log opened: node did not get as far as the shim")
	cs, ok := podapi.ContainerStatus(new(pr.state.status()), "c")
	require.True(t, ok)
	require.NotNil(t, cs.State.Waiting)
	assert.Equal(t, ReasonFenced, cs.State.Waiting.Reason)
	assert.Empty(t, cs.ContainerID)

	// The pod's goroutine, started now, keeps it so (and lets Remove end it).
	go pr.loop()
	waitReason(t, rec, pod.UID, "c", ReasonFenced)
	assert.Empty(t, rec.reasons("c"), "nothing started, nothing failed")
	require.NoError(t, rt.Remove(context.Background(), pod.UID))
}

// A lease's deadline is now plus what is left, clamped to the clock's range: never before 1 (0 is
// no lease; a lease long past has run out) and never wrapping past the end (never runs out).
func TestLeaseDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		now  int64
		left time.Duration
		want int64
	}{
		{name: "ahead", now: 1_000, left: 500, want: 1_500},
		{name: "just run out", now: 1_000, left: -1_000, want: 1},
		{name: "long past", now: 1_000, left: -time.Hour, want: 1},
		{name: "now", now: 1_000, left: 0, want: 1_000},
		{name: "beyond the clock's range", now: math.MaxInt64 - 10, left: time.Hour, want: math.MaxInt64},
		{name: "at the clock's end", now: math.MaxInt64 - 10, left: 10, want: math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, leaseDeadline(tc.now, tc.left))
		})
	}
}
