package actors

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/probeactor/probeactor/actors/fakeruntime"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// AddPod refuses a pod the API server would refuse, naming every field path, and starts nothing
// for it: no worker, no status, no kill target.
func TestAddPodRefusesInvalidPods(t *testing.T) {
	negative := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: -1}
	liveness2 := execProbe(1, 3)
	liveness2.SuccessThreshold = 2
	cases := []struct {
		name string
		pod  *v1.Pod
		want []string
	}{
		{"probe field", testPod("a", v1.Container{Name: "c", ReadinessProbe: negative}),
			[]string{"spec.containers[0].readinessProbe.periodSeconds: Invalid value: -1"}},
		{"liveness success threshold", testPod("b", v1.Container{Name: "c", LivenessProbe: liveness2}),
			[]string{"spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"}},
		{"names and no uid", testPod("", v1.Container{Name: "C", LivenessProbe: execProbe(1, 1)}),
			[]string{"metadata.uid: Required value", `spec.containers[0].name: Invalid value: "C"`}},
		{"no containers", testPod("d"), []string{"spec.containers: Required value"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				h := newHarness(t)
				before := tc.pod.DeepCopy()
				err := h.tree.AddPod(tc.pod)
				require.Error(t, err)
				for _, w := range tc.want {
					assert.Contains(t, err.Error(), w)
				}
				assert.Equal(t, before, tc.pod, "the caller's pod is not modified")
				h.sync()
				assert.Zero(t, h.workerCount(), "nothing started")
				_, found, err := h.tree.PodStatus(context.Background(), tc.pod.UID)
				require.NoError(t, err)
				assert.False(t, found, "statusManager never heard of it")
				assert.Empty(t, h.tree.added, "the tree does not count it as added")
			})
		})
	}
	require.ErrorContains(t, (&Tree{}).AddPod(nil), "pod is nil")
}

// AddPod applies the API's defaults to the tree's copy (never to the caller's pod): a probe with
// zero fields probes every 10 s, with a failure threshold of 3.
func TestAddPodDefaults(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t)
		pod := testPod("dflt", v1.Container{Name: "c", LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{
			Exec: &v1.ExecAction{Command: []string{"true"}}}}})
		pod.Namespace, pod.Spec.RestartPolicy = "", ""
		before := pod.DeepCopy()
		h.run(pod)
		assert.Equal(t, before, pod, "the caller's pod is not modified")
		id, _ := h.settled(pod, "c", messages.Liveness)
		k := messages.ProbeKey{PodUID: pod.UID, Container: "c", Type: messages.Liveness}
		n := h.prober.count("c")
		h.tick(k, 10*time.Second-time.Nanosecond) // just under 10 s: no probe
		assert.Equal(t, n, h.prober.count("c"), "periodSeconds defaulted to 10")
		h.tick(k, time.Nanosecond)
		assert.Equal(t, n+1, h.prober.count("c"))
		h.prober.result("c", probes.Failure)
		for range 2 {
			h.tick(k, 10*time.Second)
		}
		h.settledResult(id, messages.Liveness, messages.Success) // two failures: under the default threshold
		h.tick(k, 10*time.Second)
		h.settledResult(id, messages.Liveness, messages.Failure)
		kills := h.rt.Kills()
		require.Len(t, kills, 1)
		assert.Equal(t, "default", kills[0].Pod.Namespace, "namespace defaulted")
		assert.Equal(t, v1.RestartPolicyAlways, kills[0].Pod.Spec.RestartPolicy, "restart policy defaulted")
		assert.True(t, kills[0].Restart)
	})
}

// limitedRuntime is a runtime with limits of its own (PodValidator), recording its status wiring.
type limitedRuntime struct {
	*fakeruntime.Runtime
	mu      sync.Mutex
	reports []bool // per ReportStatus call: was the function non-nil
}

func (r *limitedRuntime) ValidatePod(pod *v1.Pod) field.ErrorList {
	if pod.Spec.Containers[0].Image == "" {
		return field.ErrorList{field.Required(field.NewPath("spec", "containers").Index(0).Child("image"), "this runtime needs an image")}
	}
	return nil
}

func (r *limitedRuntime) ReportStatus(push func(*v1.Pod, v1.PodStatus)) {
	r.mu.Lock()
	r.reports = append(r.reports, push != nil)
	r.mu.Unlock()
	r.Runtime.ReportStatus(push)
}

// The runtime's limits are applied after the API's; Start hands the runtime the tree's status
// function and Stop takes it back, so an embedder wires runtime → tree in one order.
func TestRuntimeLimitsAndWiring(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		rt := &limitedRuntime{}
		rt.Runtime = fakeruntime.New(nil)
		sys := newSystem(t)
		tree, err := Start(sys.Root, WithRuntime(rt), WithLogger(testLogger(t)), WithProber(newScriptProber()),
			WithRand(func() float64 { return 0 }))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, tree.Stop(context.Background())) })
		assert.Equal(t, []bool{true}, rt.reports, "Start gave the runtime the tree's SetPodStatus")

		pod := testPod("lim", v1.Container{Name: "c", ReadinessProbe: execProbe(1, 1)})
		require.ErrorContains(t, tree.AddPod(pod), "spec.containers[0].image: Required value: this runtime needs an image")
		pod.Spec.Containers[0].Image = "img"
		require.NoError(t, tree.AddPod(pod))
		rt.RunPod(pod) // pushes through the function Start gave it
		synctest.Wait()
		r, ok, err := tree.Result(context.Background(), rt.ContainerID(pod.UID, "c"), messages.Readiness)
		require.NoError(t, err)
		require.True(t, ok, "the tree knows the container's ID: the runtime's status reached it")
		assert.Equal(t, messages.Success, r)
		require.NoError(t, tree.Stop(context.Background()))
		assert.Equal(t, []bool{true, false}, rt.reports, "Stop took it back")
		rt.RunPod(testPod("late", v1.Container{Name: "c"})) // no push into the stopped tree (no dead letter)
	})
}
