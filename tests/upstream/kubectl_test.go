package upstream

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"

	"github.com/probeactor/probeactor/internal/kubectl"
)

// TestGetPodsIsKubectls: on 20,000 random pods (init containers and sidecars, every container
// state with and without reasons, signals and exit codes, readiness, restarts with their last
// termination, the phase, the pod's reason, its Initialized, Ready and PodScheduled conditions,
// deletion, IPs, node, nominated node, readiness gates), `node get pods -o wide`'s columns (package
// internal/kubectl) are kubectl 1.37's own table printer's (k8s.io/kubernetes
// pkg/printers/internalversion, printPod).
func TestGetPodsIsKubectls(t *testing.T) {
	t.Parallel()
	gen := printers.NewTableGenerator().With(printersinternal.AddHandlers)
	r := rand.New(rand.NewPCG(41, 43))
	for i := range 20000 {
		now := time.Now()
		pod := randomPrintedPod(r, now)
		var internal core.Pod
		require.NoError(t, legacyscheme.Scheme.Convert(pod, &internal, nil))
		var table *metav1.Table
		at := clockOf(t, now, func() {
			var err error
			table, err = gen.GenerateTable(&internal, printers.GenerateOptions{Wide: true})
			require.NoError(t, err)
		})
		require.Len(t, table.Rows, 1)
		var theirs []string
		for _, c := range table.Rows[0].Cells {
			theirs = append(theirs, fmt.Sprint(c))
		}
		ours := append(kubectl.PodCells(pod, at), kubectl.PodWideCells(pod)...)
		if !assert.Equal(t, theirs, ours, "pod %d:\n%s", i, describeStatus(pod)) {
			t.FailNow()
		}
	}
}

func randomPrintedPod(r *rand.Rand, now time.Time) *v1.Pod {
	ago := func() metav1.Time { return metav1.NewTime(now.Add(-time.Duration(r.IntN(4000)) * time.Second)) }
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", CreationTimestamp: ago()}}
	for i := range r.IntN(3) {
		c := v1.Container{Name: fmt.Sprintf("init%d", i)}
		if r.IntN(2) == 0 {
			c.RestartPolicy = &always
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	for i := range 1 + r.IntN(3) {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: fmt.Sprintf("app%d", i)})
	}
	status := func(name string) v1.ContainerStatus {
		cs := v1.ContainerStatus{Name: name, Ready: r.IntN(2) == 0, RestartCount: int32(pickOf(r, 0, 0, 1, 4))}
		switch r.IntN(3) {
		case 0:
			cs.State.Running = &v1.ContainerStateRunning{StartedAt: ago()}
		case 1:
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: pickOf(r, "", "CrashLoopBackOff", "ContainerCreating", "PodInitializing")}
		default:
			cs.State.Terminated = &v1.ContainerStateTerminated{Reason: pickOf(r, "", "Completed", "Error", "OOMKilled"),
				ExitCode: int32(pickOf(r, 0, 0, 1, 137)), Signal: int32(pickOf(r, 0, 0, 9))}
		}
		if r.IntN(3) > 0 {
			cs.Started = ptr(r.IntN(2) == 0)
		}
		if cs.RestartCount > 0 && r.IntN(4) > 0 {
			cs.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago()}
		}
		return cs
	}
	st := &pod.Status
	for _, c := range pod.Spec.InitContainers {
		if r.IntN(6) > 0 {
			st.InitContainerStatuses = append(st.InitContainerStatuses, status(c.Name))
		}
	}
	for _, c := range pod.Spec.Containers {
		if r.IntN(6) > 0 {
			st.ContainerStatuses = append(st.ContainerStatuses, status(c.Name))
		}
	}
	st.Phase = pickOf(r, v1.PodPending, v1.PodRunning, v1.PodRunning, v1.PodSucceeded, v1.PodFailed, v1.PodUnknown)
	st.Reason = pickOf(r, "", "", "", "Evicted", "NodeLost")
	for _, ct := range []v1.PodConditionType{v1.PodInitialized, v1.PodReady, v1.PodScheduled} {
		if r.IntN(3) > 0 {
			c := v1.PodCondition{Type: ct, Status: pickOf(r, v1.ConditionTrue, v1.ConditionFalse)}
			if ct == v1.PodScheduled && r.IntN(4) == 0 {
				c.Reason = v1.PodReasonSchedulingGated
			}
			st.Conditions = append(st.Conditions, c)
		}
	}
	if r.IntN(5) == 0 {
		t := ago()
		pod.DeletionTimestamp = &t
	}
	if r.IntN(2) == 0 {
		st.PodIPs = []v1.PodIP{{IP: "127.0.0.1"}}
	}
	pod.Spec.NodeName = pickOf(r, "", "n1")
	st.NominatedNodeName = pickOf(r, "", "", "n2")
	if r.IntN(3) == 0 {
		pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: v1.PodScheduled}}
		if r.IntN(2) == 0 {
			st.Conditions = append(st.Conditions, v1.PodCondition{Type: "example.com/lb", Status: pickOf(r, v1.ConditionTrue, v1.ConditionFalse)})
		}
	}
	return pod
}

func describeStatus(p *v1.Pod) string {
	s := fmt.Sprintf("phase=%s reason=%q deleted=%v conditions=%v\n", p.Status.Phase, p.Status.Reason, p.DeletionTimestamp != nil, p.Status.Conditions)
	for _, c := range p.Spec.InitContainers {
		s += fmt.Sprintf("  init %s sidecar=%v\n", c.Name, c.RestartPolicy != nil)
	}
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			s += fmt.Sprintf("  %s ready=%v started=%v restarts=%d state=%+v last=%+v\n", cs.Name, cs.Ready, deref(cs.Started),
				cs.RestartCount, cs.State, cs.LastTerminationState)
		}
	}
	return s
}

// TestGetNodesStatusIsKubectls: `node get nodes`' STATUS (kubectl.NodeStatus) is kubectl 1.37's
// printNode's on nodes with and without a Ready condition (True, False, Unknown), cordoned or not.
// (node adds ",<reason>" for a cluster member whose ClusterQuorum is False; no node here has one.)
func TestGetNodesStatusIsKubectls(t *testing.T) {
	t.Parallel()
	gen := printers.NewTableGenerator().With(printersinternal.AddHandlers)
	r := rand.New(rand.NewPCG(47, 53))
	for i := range 2000 {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))}}
		node.Spec.Unschedulable = r.IntN(3) == 0
		for range r.IntN(3) {
			node.Status.Conditions = append(node.Status.Conditions, v1.NodeCondition{
				Type:   pickOf[v1.NodeConditionType](r, v1.NodeReady, v1.NodeMemoryPressure),
				Status: pickOf(r, v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown)})
		}
		var internal core.Node
		require.NoError(t, legacyscheme.Scheme.Convert(node, &internal, nil))
		table, err := gen.GenerateTable(&internal, printers.GenerateOptions{})
		require.NoError(t, err)
		require.Len(t, table.Rows, 1)
		if !assert.Equal(t, fmt.Sprint(table.Rows[0].Cells[1]), kubectl.NodeStatus(node), "node %d: %+v %+v", i, node.Spec, node.Status.Conditions) {
			t.FailNow()
		}
	}
}

// TestHumanDurationIsKubectls: AGE and "(… ago)" read as apimachinery's duration.HumanDuration,
// which kubectl uses, from -2 s to over 8 years, at every second up to 3 hours, then sparser.
func TestHumanDurationIsKubectls(t *testing.T) {
	t.Parallel()
	check := func(d time.Duration) {
		if !assert.Equal(t, duration.HumanDuration(d), kubectl.HumanDuration(d), "%v", d) {
			t.FailNow()
		}
	}
	for d := -2 * time.Second; d < 3*time.Hour; d += 500 * time.Millisecond {
		check(d)
	}
	for d := 3 * time.Hour; d < 9*365*24*time.Hour; d += 17*time.Minute + 13*time.Second {
		check(d)
	}
}

// clockOf runs f, which reads the clock (kubectl's printers measure ages with time.Now), and
// returns an instant that gives the same ages f saw for every timestamp a whole number of seconds
// before base: f ran within one second of such ages (it is run again, up to 10 times, when it ran
// across a boundary, as a busy machine makes it do).
func clockOf(t *testing.T, base time.Time, f func()) time.Time {
	t.Helper()
	for range 10 {
		t0 := time.Now()
		f()
		if t1 := time.Now(); t0.Sub(base)/time.Second == t1.Sub(base)/time.Second {
			return t0
		}
	}
	t.Fatal("every run crossed a second boundary")
	return time.Time{}
}
