package conformance

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/probeactor/probeactor/messages"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// factories are the implementations under test; the actor core is added in actor_test.go.
var factories = map[string]func(Env) (Driver, error){
	"kubelet": NewKubelet,
}

// h is one scenario's world: a driver, the scripted prober and runtime, and the bubble's start time.
type h struct {
	t       *testing.T
	d       Driver
	prober  *ScriptedProber
	runtime *GatedRuntime
	changes *changeLog // what a subscriber (OnChange) observed
	t0      time.Time
}

// at advances the bubble's clock to t0+d and waits until every goroutine is durably blocked.
func (x *h) at(d time.Duration) {
	x.t.Helper()
	target := x.t0.Add(d)
	now := time.Now()
	require.False(x.t, target.Before(now), "scenario goes back in time: at(%v) but already at %v", d, now.Sub(x.t0))
	time.Sleep(target.Sub(now))
	synctest.Wait()
}

// start adds pod, then has the fake runtime run it (every container's first start, at t0 when
// called at t0) and push its status.
func (x *h) start(pod *v1.Pod) {
	require.NoError(x.t, x.d.AddPod(pod))
	synctest.Wait()
	x.runtime.RunPod(pod)
	synctest.Wait()
}

func (x *h) result(id messages.ContainerID, pt messages.ProbeType) messages.Result {
	x.t.Helper()
	r, ok := x.d.Result(id, pt)
	require.True(x.t, ok, "no cached %s result for %s", pt, id)
	return r
}

func (x *h) noResult(id messages.ContainerID, pt messages.ProbeType) {
	x.t.Helper()
	r, ok := x.d.Result(id, pt)
	require.False(x.t, ok, "unexpected cached %s result %s for %s", pt, r, id)
}

func (x *h) status(uid types.UID) v1.PodStatus {
	x.t.Helper()
	st, ok := x.d.PodStatus(uid)
	require.True(x.t, ok, "no status for pod %s", uid)
	return st
}

func (x *h) container(uid types.UID, name string) v1.ContainerStatus {
	x.t.Helper()
	for _, cs := range x.status(uid).ContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	x.t.Fatalf("no status for container %s of pod %s", name, uid)
	return v1.ContainerStatus{}
}

func (x *h) condition(uid types.UID, ct v1.PodConditionType) v1.PodCondition {
	x.t.Helper()
	for _, c := range x.status(uid).Conditions {
		if c.Type == ct {
			return c
		}
	}
	x.t.Fatalf("pod %s has no %s condition", uid, ct)
	return v1.PodCondition{}
}

func started(cs v1.ContainerStatus) bool { return cs.Started != nil && *cs.Started }

type scenario struct {
	name string
	run  func(x *h)
}

// TestConformance runs every scenario against every implementation, each in its own bubble.
func TestConformance(t *testing.T) {
	for impl, factory := range factories {
		t.Run("impl="+impl, func(t *testing.T) {
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						x := &h{t: t, prober: NewScriptedProber(), changes: &changeLog{}, t0: time.Now()}
						x.runtime = NewGatedRuntime(func(pod *v1.Pod, st v1.PodStatus) { x.d.SetPodStatus(pod, st) })
						env := Env{Prober: x.prober.Probe, Runtime: x.runtime, OnChange: x.changes.record}
						d, err := factory(env)
						require.NoError(t, err)
						x.d = d
						defer func() {
							d.Stop()
							// Let time-bound leftovers end inside the bubble (protoactor's dead-letter
							// throttle keeps a goroutine for its 10 ms interval); virtual time, no wait.
							time.Sleep(time.Second)
						}()
						sc.run(x)
					})
				})
			}
		})
	}
}
