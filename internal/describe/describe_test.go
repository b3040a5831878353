package describe

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probeactor/probeactor/messages"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return now.Add(-d) }

func testPod() v1.Pod {
	return v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1", Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{
			Name: "app", Image: "nginx", Command: []string{"sleep", "3600"},
			Ports: []v1.ContainerPort{{ContainerPort: 8080}},
			LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080), Scheme: v1.URISchemeHTTP}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
				TimeoutSeconds: 1, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 3},
		}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "127.0.0.1", PodIPs: []v1.PodIP{{IP: "127.0.0.1"}}, HostIP: "127.0.0.1", StartTime: &metav1.Time{Time: ago(time.Hour)},
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "proc://abc", ImageID: "nginx", Ready: true, RestartCount: 0,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(ago(time.Hour))}}}}},
	}
}

func event(typ, reason, msg, name string, count int32, first, last time.Duration) v1.Event {
	return v1.Event{InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: name, UID: "u1"},
		Type: typ, Reason: reason, Message: msg, Count: count, Source: v1.EventSource{Component: "kubelet"},
		FirstTimestamp: metav1.NewTime(ago(first)), LastTimestamp: metav1.NewTime(ago(last))}
}

// A node's description: kubectl's layout (as kubectl's, a line without a tab — "Command:" — ends
// a block of aligned columns), each probe followed by its streak, last attempt and
// next action (the liveness probe failed twice of three; its next tick is 4 s away: restarted
// within 4 + 1 s if it fails once more); only the pod's own events, oldest first.
func TestPrintLive(t *testing.T) {
	states := []messages.ProbeState{
		{Key: messages.ProbeKey{PodUID: "u1", Container: "app", Type: messages.Liveness}, ContainerID: "proc://abc",
			Published: messages.Success, HasPublished: true, Streak: 2, StreakResult: messages.Failure,
			LastResult: messages.Failure, LastAt: ago(6 * time.Second), NextRun: now.Add(4 * time.Second),
			Running: true, Started: true, ContainerStartedAt: ago(time.Hour)},
		{Key: messages.ProbeKey{PodUID: "u1", Container: "app", Type: messages.Readiness}, ContainerID: "proc://abc",
			Published: messages.Success, HasPublished: true, Streak: 40, StreakResult: messages.Success,
			LastResult: messages.Success, LastAt: ago(2 * time.Second), NextRun: now.Add(3 * time.Second),
			Running: true, Started: true, ContainerStartedAt: ago(time.Hour)},
	}
	evs := []v1.Event{
		event("Warning", "Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 500", "web", 2, 16*time.Second, 6*time.Second),
		event("Normal", "Started", "Container started", "web", 1, time.Hour, time.Hour),
		event("Normal", "Started", "Container started", "other", 1, time.Hour, time.Hour),
	}
	d := NewDocument("http://127.0.0.1:10255", testPod(), FromStates(states), evs, now)
	var b bytes.Buffer
	require.NoError(t, Print(&b, d, now))
	assert.Equal(t, `Name:         web
Namespace:    default
Node:         <none>
Start Time:   Thu, 01 Jan 2026 11:00:00 +0000
Labels:       app=web
              tier=front
Annotations:  <none>
Status:       Running
IP:           127.0.0.1
IPs:
  IP:  127.0.0.1
Containers:
  app:
    Container ID:  proc://abc
    Image:         nginx
    Image ID:      nginx
    Port:          8080/TCP
    Host Port:     0/TCP
    Command:
      sleep
      3600
    State:          Running
      Started:      Thu, 01 Jan 2026 11:00:00 +0000
    Ready:          True
    Restart Count:  0
    Liveness:       http-get http://:8080/healthz delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3
                    failing 2/3, last Failure 6s ago; restarts in ≤ 5s if it keeps failing
    Readiness:      tcp-socket :8080 delay=0s timeout=1s period=5s successThreshold=1 failureThreshold=3
                    passed 40 in a row, last Success 2s ago; stays ready while it passes
    Environment:    <none>
Conditions:
  Type    Status
  Ready   True 
Events:
  Type     Reason     Age               From     Message
  ----     ------     ----              ----     -------
  Normal   Started    60m               kubelet  Container started
  Warning  Unhealthy  6s (x2 over 16s)  kubelet  Liveness probe failed: HTTP probe failed with statuscode: 500
`, b.String())
	require.Len(t, d.Next, 2)
	assert.Equal(t, Next{Container: "app", Type: "Liveness", Streak: "failing 2/3", Action: "restarts in ≤ 5s if it keeps failing", WithinSeconds: 5}, d.Next[0])
}

// From a fleet aggregator only the published results are known, with the node.
func TestPrintPublishedOnly(t *testing.T) {
	pod := testPod()
	pod.Spec.NodeName = "n1"
	pod.Spec.Containers[0].LivenessProbe, pod.Spec.Containers[0].ReadinessProbe = nil, nil // the aggregator has no probe specs
	d := NewDocument("http://agg", pod, []Probe{{Container: "app", Type: "Liveness", Node: "n1", Published: "Failure"}}, nil, now)
	var b bytes.Buffer
	require.NoError(t, Print(&b, d, now))
	assert.Contains(t, b.String(), "Node:         n1/127.0.0.1\n")
	assert.Contains(t, b.String(), "    Liveness:       (the probe's spec is not known here)\n"+
		"                    published Failure on node n1 (streaks and timings: node describe on that node)\n")
	assert.Contains(t, b.String(), "Events:   <none>\n")
	assert.Empty(t, d.Next, "nothing live to compute")
}

// A waiting container, a deferred kill and an errored last attempt read as such.
func TestPrintStates(t *testing.T) {
	pod := testPod()
	pod.Spec.Containers[0].Ports = append(pod.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: 53, Protocol: v1.ProtocolUDP})
	states := []messages.ProbeState{{Key: messages.ProbeKey{PodUID: "u1", Container: "app", Type: messages.Liveness}, ContainerID: "proc://abc",
		Published: messages.Failure, HasPublished: true, Streak: 5, StreakResult: messages.Failure, KillDeferred: true,
		LastResult: messages.Unknown, LastAt: ago(time.Second), Running: true, Started: true, ContainerStartedAt: ago(time.Hour)}}
	d := NewDocument("x", pod, FromStates(states), nil, now)
	var b bytes.Buffer
	require.NoError(t, Print(&b, d, now))
	assert.Contains(t, b.String(), "    Ports:         8080/TCP, 53/UDP\n")
	assert.Contains(t, b.String(), "failed 5 in a row, last error (not counted) 1s ago; restart deferred: the restart budget has no room for it")
}

// Every part of kubectl 1.37's describePod that node's pods can carry, printed as kubectl prints it:
// the optional pod fields, node/hostIP, annotations as "key: value" (a long or multi-line one beneath
// its key, kubectl apply's own skipped), a Terminating pod's age and grace period, the pod's IPs,
// controller, readiness gates; per container its image ID, ports and host ports with names, a
// multi-line command, each state (and none at all for a container with no status yet), env values
// with the downward API resolved; an event's object field path and its first time.
func TestPrintAsKubectlDescribe137(t *testing.T) {
	priority := int32(100)
	grace := int64(30)
	controller := true
	pod := v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: "jobs", UID: "u2",
			Annotations: map[string]string{
				v1.LastAppliedConfigAnnotation: `{"kind":"Pod"}`,
				"note":                         "short\n",
				"doc":                          "line one\nline two",
				"long":                         strings.Repeat("x", 150),
			},
			OwnerReferences:            []metav1.OwnerReference{{Kind: "Job", Name: "nightly", Controller: &controller}},
			DeletionTimestamp:          &metav1.Time{Time: ago(5 * time.Second)},
			DeletionGracePeriodSeconds: &grace,
		},
		Spec: v1.PodSpec{Priority: &priority, PriorityClassName: "high", ServiceAccountName: "runner", NodeName: "n1",
			ReadinessGates: []v1.PodReadinessGate{{ConditionType: "example.com/feature"}, {ConditionType: "example.com/missing"}},
			InitContainers: []v1.Container{{Name: "setup", Image: "busybox", Command: []string{"true"}}},
			Containers: []v1.Container{{
				Name: "app", Image: "nginx", Command: []string{"sh", "-c", "echo a\necho b"},
				Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080, HostPort: 80, Protocol: v1.ProtocolTCP}, {ContainerPort: 53, Protocol: v1.ProtocolUDP}},
				Env: []v1.EnvVar{{Name: "PLAIN", Value: "v"}, {Name: "MULTI", Value: "a\nb"},
					{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
					{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}},
					{Name: "HOST", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.hostIP"}}}},
			}, {Name: "pending", Image: "busybox", Command: []string{"sleep", "1"}}},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "127.0.0.1", HostIP: "10.0.0.5",
			PodIPs:     []v1.PodIP{{IP: "127.0.0.1"}, {IP: "::1"}},
			Conditions: []v1.PodCondition{{Type: "example.com/feature", Status: v1.ConditionTrue}, {Type: v1.PodReady, Status: v1.ConditionFalse}},
			InitContainerStatuses: []v1.ContainerStatus{{Name: "setup", ContainerID: "proc://s", ImageID: "busybox",
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed", ExitCode: 0,
					StartedAt: metav1.NewTime(ago(time.Hour)), FinishedAt: metav1.NewTime(ago(time.Hour))}}}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "proc://a", ImageID: "nginx", RestartCount: 3,
				State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", Message: "killed", ExitCode: 137, Signal: 9,
					StartedAt: metav1.NewTime(ago(time.Minute)), FinishedAt: metav1.NewTime(ago(30 * time.Second))}}}}},
	}
	ev := event("Warning", "BackOff", "Back-off restarting failed container app", "batch", 1, 20*time.Second, 10*time.Second)
	ev.InvolvedObject.Namespace, ev.InvolvedObject.UID, ev.InvolvedObject.FieldPath = "jobs", "u2", "spec.containers{app}"
	var b bytes.Buffer
	require.NoError(t, Print(&b, NewDocument("x", pod, nil, []v1.Event{ev}, now), now))
	assert.Equal(t, `Name:                      batch
Namespace:                 jobs
Priority:                  100
Priority Class Name:       high
Service Account:           runner
Node:                      n1/10.0.0.5
Labels:                    <none>
Annotations:               doc:
                             line one
                             line two
                           long:
                             `+strings.Repeat("x", 138)+`...
                           note: short
Status:                    Terminating (lasts 5s)
Termination Grace Period:  30s
IP:                        127.0.0.1
IPs:
  IP:           127.0.0.1
  IP:           ::1
Controlled By:  Job/nightly
Init Containers:
  setup:
    Container ID:  proc://s
    Image:         busybox
    Image ID:      busybox
    Port:          <none>
    Host Port:     <none>
    Command:
      true
    State:          Terminated
      Reason:       Completed
      Exit Code:    0
      Started:      Thu, 01 Jan 2026 11:00:00 +0000
      Finished:     Thu, 01 Jan 2026 11:00:00 +0000
    Ready:          False
    Restart Count:  0
    Environment:    <none>
Containers:
  app:
    Container ID:  proc://a
    Image:         nginx
    Image ID:      nginx
    Ports:         8080/TCP (http), 53/UDP
    Host Ports:    80/TCP (http), 0/UDP
    Command:
      sh
      -c
      echo a
      echo b
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       Error
      Message:      killed
      Exit Code:    137
      Signal:       9
      Started:      Thu, 01 Jan 2026 11:59:00 +0000
      Finished:     Thu, 01 Jan 2026 11:59:30 +0000
    Ready:          False
    Restart Count:  3
    Environment:
      PLAIN:  v
      MULTI:  a
              b
      POD:    batch (v1:metadata.name)
      NODE:   n1 (v1:spec.nodeName)
      HOST:   10.0.0.5 (v1:status.hostIP)
  pending:
    Image:      busybox
    Port:       <none>
    Host Port:  <none>
    Command:
      sleep
      1
    Environment:  <none>
Readiness Gates:
  Type                  Status
  example.com/feature   True 
  example.com/missing   <none> 
Conditions:
  Type                  Status
  example.com/feature   True 
  Ready                 False 
Events:
  Type     Reason   Age   From     Message
  ----     ------   ----  ----     -------
  Warning  BackOff  20s   kubelet  spec.containers{app}: Back-off restarting failed container app
`, b.String())

	// A pod whose phase is terminal is no longer Terminating, deleted or not (as get pods).
	pod.Status.Phase = v1.PodFailed
	b.Reset()
	require.NoError(t, Print(&b, NewDocument("x", pod, nil, nil, now), now))
	assert.Contains(t, b.String(), "\nStatus:               Failed\n")
	assert.NotContains(t, b.String(), "Termination Grace Period")
}
