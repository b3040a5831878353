package describe

import (
	"bytes"
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
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "127.0.0.1", StartTime: &metav1.Time{Time: ago(time.Hour)},
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "proc://abc", Ready: true, RestartCount: 0,
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
		event("Normal", "Started", "Started container app", "web", 1, time.Hour, time.Hour),
		event("Normal", "Started", "Started container x", "other", 1, time.Hour, time.Hour),
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
Containers:
  app:
    Container ID:  proc://abc
    Image:         nginx
    Port:          8080/TCP
    Command:
      sleep
      3600
    State:          Running
      Started:      Thu, 01 Jan 2026 11:00:00 +0000
    Ready:          True
    Restart Count:  0
    Liveness:       http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3
                    failing 2/3, last Failure 6s ago; restarts in ≤ 5s if it keeps failing
    Readiness:      tcp-socket :8080 delay=0s timeout=1s period=5s #success=1 #failure=3
                    passed 40 in a row, last Success 2s ago; stays ready while it passes
    Environment:    <none>
Conditions:
  Type    Status
  Ready   True 
Events:
  Type     Reason     Age               From     Message
  ----     ------     ----              ----     -------
  Normal   Started    60m               kubelet  Started container app
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
	assert.Contains(t, b.String(), "Node:         n1\n")
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
