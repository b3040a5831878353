package kubectl

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestStatusColumn(t *testing.T) {
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	cases := []struct {
		name string
		pod  v1.Pod
		want string
	}{
		{"running", v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{State: running, Ready: true}}}}, "Running"},
		{"crashloop", v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}}}, "CrashLoopBackOff"},
		{"completed", v1.Pod{Status: v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}}}}}, "Completed"},
		{"error", v1.Pod{Status: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}}}}, "Error"},
		{"init 1/2", v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "a"}, {Name: "b"}}}, Status: v1.PodStatus{Phase: v1.PodPending,
			InitContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}}, {State: running}},
			ContainerStatuses:     []v1.ContainerStatus{{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}}}}}, "Init:1/2"},
		{"init error", v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "a"}}}, Status: v1.PodStatus{Phase: v1.PodFailed,
			InitContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 2}}}}}}, "Init:Error"},
		{"init killed by a signal", v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "a"}}}, Status: v1.PodStatus{Phase: v1.PodPending,
			InitContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Signal: 9, ExitCode: 137}}}}}}, "Init:Signal:9"},
		{"init exit code, no reason", v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "a"}}}, Status: v1.PodStatus{Phase: v1.PodPending,
			InitContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 3}}}}}}, "Init:ExitCode:3"},
		{"killed by a signal", v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Signal: 15, ExitCode: 143}}}}}}, "Signal:15"},
		{"exit code, no reason", v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 4}}}}}}, "ExitCode:4"},
		// kubectl: one container completed and another running and ready reads as the pod's Ready
		// condition says.
		{"completed beside a ready one, pod ready", v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning,
			Conditions:        []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}}, {State: running, Ready: true}}}}, "Running"},
		{"completed beside a ready one, pod not ready", v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning,
			Conditions:        []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}},
			ContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}}, {State: running, Ready: true}}}}, "NotReady"},
		{"completed beside an unready one", v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning,
			Conditions:        []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}}, {State: running}}}}, "Completed"},
		{"terminating", v1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{}}, Status: v1.PodStatus{Phase: v1.PodRunning,
			ContainerStatuses: []v1.ContainerStatus{{State: running, Ready: true}}}}, "Terminating"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, Status(&tc.pod)) })
	}
}

// TestPodRowAsKubectl137: the parts of kubectl 1.37's printPod that earlier kubectl versions did
// differently, READY, STATUS and RESTARTS together.
func TestPodRowAsKubectl137(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	completed := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}
	crashLoop := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	yes, no := true, false
	finished := func(s int) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{FinishedAt: metav1.Unix(int64(s), 0)}}
	}
	initialized := v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	sidecarSpec := v1.PodSpec{InitContainers: []v1.Container{{Name: "init"}, {Name: "side", RestartPolicy: &always}}, Containers: []v1.Container{{Name: "app"}}}
	cases := []struct {
		name string
		pod  v1.Pod
		want row
	}{
		{"a failed container beside a completed one is the status, before NotReady",
			v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}, {Name: "b"}, {Name: "c"}}}, Status: v1.PodStatus{Phase: v1.PodRunning,
				ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: completed}, {Name: "b", State: running, Ready: true},
					{Name: "c", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}}}},
			row{ready: 1, total: 3, status: "Error"}},
		{"once Initialized, the app containers decide even while a sidecar restarts",
			v1.Pod{Spec: sidecarSpec, Status: v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{initialized},
				InitContainerStatuses: []v1.ContainerStatus{{Name: "init", State: completed}, {Name: "side", State: crashLoop, Started: &no}},
				ContainerStatuses:     []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}},
			row{total: 2, status: "ContainerCreating"}},
		{"before Initialized, the sidecar does",
			v1.Pod{Spec: sidecarSpec, Status: v1.PodStatus{Phase: v1.PodPending,
				InitContainerStatuses: []v1.ContainerStatus{{Name: "init", State: completed}, {Name: "side", State: crashLoop, Started: &no}},
				ContainerStatuses:     []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}}}}},
			row{total: 2, status: "Init:CrashLoopBackOff"}},
		{"a started, ready sidecar counts as ready; once initialized only sidecar and app restarts count",
			v1.Pod{Spec: sidecarSpec, Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{initialized},
				InitContainerStatuses: []v1.ContainerStatus{{Name: "init", State: completed, RestartCount: 3, LastTerminationState: finished(30)},
					{Name: "side", State: running, Started: &yes, Ready: true, RestartCount: 1, LastTerminationState: finished(10)}},
				ContainerStatuses: []v1.ContainerStatus{{Name: "app", State: running, Ready: true, RestartCount: 2, LastTerminationState: finished(20)}}}},
			row{ready: 2, total: 2, status: "Running", restarts: 3, lastRestart: time.Unix(20, 0)}},
		{"while initializing, the init containers' restarts count, up to the one that is not done",
			v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i1"}, {Name: "i2"}}, Containers: []v1.Container{{Name: "app"}}},
				Status: v1.PodStatus{Phase: v1.PodPending,
					InitContainerStatuses: []v1.ContainerStatus{{Name: "i1", State: crashLoop, RestartCount: 4, LastTerminationState: finished(40)},
						{Name: "i2", RestartCount: 9}},
					ContainerStatuses: []v1.ContainerStatus{{Name: "app", RestartCount: 7}}}},
			row{total: 1, status: "Init:CrashLoopBackOff", restarts: 4, lastRestart: time.Unix(40, 0)}},
		{"a deleted pod whose phase is terminal keeps its status",
			v1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{}}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}},
				Status: v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: completed}}}},
			row{total: 1, status: "Completed"}},
		{"a deleted pod whose node was lost is Unknown",
			v1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{}}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}},
				Status: v1.PodStatus{Phase: v1.PodRunning, Reason: "NodeLost", ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: running, Ready: true}}}},
			row{ready: 1, total: 1, status: "Unknown"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := podRow(&tc.pod)
			assert.Equal(t, tc.want.lastRestart.UTC(), got.lastRestart.UTC())
			got.lastRestart = tc.want.lastRestart
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestPrintPods(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-150 * time.Second))},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "a"}, {Name: "b"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{
			{Name: "a", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}, RestartCount: 2,
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{FinishedAt: metav1.NewTime(now.Add(-12 * time.Second))}}},
			{Name: "b", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
		}},
	}
	var b bytes.Buffer
	assert.NoError(t, PrintPods(&b, []v1.Pod{pod}, now, false))
	assert.Equal(t, "NAME   READY   STATUS    RESTARTS      AGE\nweb    1/2     Running   2 (12s ago)   2m30s\n", b.String())
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Second: "5s", 119 * time.Second: "119s", 5 * time.Minute: "5m", 5*time.Minute + 3*time.Second: "5m3s",
		90 * time.Minute: "90m", 5 * time.Hour: "5h", 30 * time.Hour: "30h", 50 * time.Hour: "2d2h",
	} {
		assert.Equal(t, want, HumanDuration(d), d.String())
	}
}

func TestPrintPodsWithNodeColumn(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(name, node string) v1.Pod {
		return v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
			Spec:   v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "a"}}},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "a", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}}
	}
	var b bytes.Buffer
	assert.NoError(t, PrintPodColumns(&b, []v1.Pod{pod("web", "n1"), pod("api", "")}, now, Columns{Namespace: true, Node: true}))
	assert.Equal(t, "NAMESPACE   NAME   READY   STATUS    RESTARTS   AGE   NODE\n"+
		"default     web    1/1     Running   0          60s   n1\n"+
		"default     api    1/1     Running   0          60s   <none>\n", b.String())
}

// -o wide: kubectl's four columns, NODE once even from an aggregator (-A).
func TestPrintPodsWide(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	web := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
		Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "a"}},
			ReadinessGates: []v1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIPs: []v1.PodIP{{IP: "127.0.0.1"}, {IP: "::1"}},
			Conditions:        []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}, {Type: "example.com/dns", Status: v1.ConditionFalse}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "a", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}}
	api := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}, Status: v1.PodStatus{Phase: v1.PodPending}}
	var b bytes.Buffer
	assert.NoError(t, PrintPodColumns(&b, []v1.Pod{web, api}, now, Columns{Namespace: true, Node: true, Wide: true}))
	assert.Equal(t, "NAMESPACE   NAME   READY   STATUS    RESTARTS   AGE   IP          NODE     NOMINATED NODE   READINESS GATES\n"+
		"default     web    1/1     Running   0          60s   127.0.0.1   n1       <none>           1/2\n"+
		"default     api    0/1     Pending   0          60s   <none>      <none>   <none>           <none>\n", b.String())
}

func TestPrintNodes(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	node := func(name string, st v1.ConditionStatus, age time.Duration) v1.Node {
		n := v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))}}
		if st != "" {
			n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: st}}
		}
		return n
	}
	cordoned := node("n4", v1.ConditionTrue, time.Hour)
	cordoned.Spec.Unschedulable = true
	minority := node("n5", v1.ConditionTrue, time.Hour)
	minority.Status.Conditions = append(minority.Status.Conditions, v1.NodeCondition{Type: "ClusterQuorum", Status: v1.ConditionFalse, Reason: "QuorumLost"})
	quorate := node("n6", v1.ConditionTrue, time.Hour)
	quorate.Status.Conditions = append(quorate.Status.Conditions, v1.NodeCondition{Type: "ClusterQuorum", Status: v1.ConditionTrue, Reason: "QuorumHeld"})
	var b bytes.Buffer
	assert.NoError(t, PrintNodes(&b, []v1.Node{node("n1", v1.ConditionTrue, 5*time.Minute), node("n2", v1.ConditionUnknown, 30*time.Second),
		node("n3", "", 3*24*time.Hour), cordoned, minority, quorate}, now, false))
	assert.Equal(t, "NAME   STATUS                     AGE\n"+
		"n1     Ready                      5m\n"+
		"n2     NotReady                   30s\n"+
		"n3     Unknown                    3d\n"+
		"n4     Ready,SchedulingDisabled   60m\n"+
		"n5     Ready,QuorumLost           60m\n"+
		"n6     Ready                      60m\n", b.String())
}

func TestProbeAsKubectlDescribesIt(t *testing.T) {
	attrs := func(p v1.Probe) v1.Probe {
		p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold = 0, 1, 10, 1, 3
		return p
	}
	svc := "health"
	for want, p := range map[string]v1.Probe{
		"http-get http://:8080/healthz delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3": attrs(v1.Probe{ProbeHandler: v1.ProbeHandler{
			HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080), Scheme: v1.URISchemeHTTP}}}),
		"http-get https://10.0.0.1:web/ delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3": attrs(v1.Probe{ProbeHandler: v1.ProbeHandler{
			HTTPGet: &v1.HTTPGetAction{Host: "10.0.0.1", Path: "/", Port: intstr.FromString("web"), Scheme: v1.URISchemeHTTPS}}}),
		"exec [cat /tmp/healthy] delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3": attrs(v1.Probe{ProbeHandler: v1.ProbeHandler{
			Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}}}),
		"tcp-socket :6379 delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3": attrs(v1.Probe{ProbeHandler: v1.ProbeHandler{
			TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(6379)}}}),
		"grpc <pod>:9000 health delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3": attrs(v1.Probe{ProbeHandler: v1.ProbeHandler{
			GRPC: &v1.GRPCAction{Port: 9000, Service: &svc}}}),
		"grpc <pod>:9000  delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3": attrs(v1.Probe{ProbeHandler: v1.ProbeHandler{
			GRPC: &v1.GRPCAction{Port: 9000}}}),
		"unknown delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3": attrs(v1.Probe{}),
	} {
		assert.Equal(t, want, Probe(&p))
	}
}
