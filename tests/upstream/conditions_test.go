package upstream

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	kubeletstatus "k8s.io/kubernetes/pkg/kubelet/status"

	"github.com/probeactor/probeactor/internal/podstatus"
)

// TestConditionsAreKubelets: the pod conditions probing drives and the runtime reports
// (internal/podstatus: ContainersReady, Ready, Initialized) are kubelet 1.37's own generators'
// (pkg/kubelet/status GenerateContainersReadyCondition, GeneratePodReadyCondition,
// GeneratePodInitializedCondition, given the init and app statuses together as kubelet's
// generateAPIPodStatus and statusManager give them), on 20,000 random pods: init containers and
// sidecars, readiness gates with and without their conditions, container statuses missing, nil
// or empty lists, ready, started, running, waiting or terminated, every phase.
func TestConditionsAreKubelets(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(71, 73))
	for i := range 20000 {
		pod := randomPrintedPod(r, nowForConditions)
		if r.IntN(3) == 0 {
			pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/a"}, {ConditionType: "example.com/b"}}
			for _, ct := range []v1.PodConditionType{"example.com/a", "example.com/b"} {
				if r.IntN(3) > 0 {
					pod.Status.Conditions = append(pod.Status.Conditions, v1.PodCondition{Type: ct,
						Status: pickOf(r, v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown)})
				}
			}
		}
		st := &pod.Status
		switch r.IntN(8) { // the lists as a runtime may give them: absent, or present and empty
		case 0:
			st.InitContainerStatuses = nil
		case 1:
			st.ContainerStatuses = nil
		case 2:
			st.InitContainerStatuses, st.ContainerStatuses = nil, nil
		case 3:
			st.InitContainerStatuses = []v1.ContainerStatus{}
		case 4:
			st.ContainerStatuses = []v1.ContainerStatus{}
		}
		all := append(st.InitContainerStatuses, st.ContainerStatuses...)
		old := &v1.PodStatus{}
		what := fmt.Sprintf("pod %d: nil init=%v nil app=%v\n%s", i, st.InitContainerStatuses == nil, st.ContainerStatuses == nil, describeStatus(pod))
		if !assert.Equal(t, kubeletstatus.GenerateContainersReadyCondition(pod, old, all, st.Phase), podstatus.ContainersReadyCondition(pod, st), "ContainersReady, %s", what) ||
			!assert.Equal(t, kubeletstatus.GeneratePodReadyCondition(pod, old, st.Conditions, all, st.Phase), podstatus.ReadyCondition(pod, st), "Ready, %s", what) ||
			!assert.Equal(t, kubeletstatus.GeneratePodInitializedCondition(pod, old, all, st.Phase), podstatus.InitializedCondition(pod, st), "Initialized, %s", what) {
			t.FailNow()
		}
	}
}

// nowForConditions: the generators read no clock; any present will do.
var nowForConditions = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
