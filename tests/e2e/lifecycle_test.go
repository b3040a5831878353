package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

func TestRestartPolicies(t *testing.T) {
	t.Parallel()
	m, _ := render(t, `
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: never-fails}
  spec:
    restartPolicy: Never
    containers: [{name: c, command: ["sh", "-c", "exit 1"]}]
- apiVersion: v1
  kind: Pod
  metadata: {name: onfailure-succeeds}
  spec:
    restartPolicy: OnFailure
    containers: [{name: c, command: ["sh", "-c", "exit 0"]}]
- apiVersion: v1
  kind: Pod
  metadata: {name: onfailure-fails}
  spec:
    restartPolicy: OnFailure
    containers: [{name: c, command: ["sh", "-c", "exit 2"]}]
- apiVersion: v1
  kind: Pod
  metadata: {name: always-succeeds}
  spec:
    containers: [{name: c, command: ["sh", "-c", "exit 0"]}]
`, nil)
	n := startNode(t, m)
	p := n.eventually("never-fails", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed }, "Never + exit 1 → Failed")
	assert.Equal(t, int32(1), p.Status.ContainerStatuses[0].State.Terminated.ExitCode)
	assert.Equal(t, "Error", p.Status.ContainerStatuses[0].State.Terminated.Reason)
	assert.Equal(t, int32(0), p.Status.ContainerStatuses[0].RestartCount)

	p = n.eventually("onfailure-succeeds", func(p v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded }, "OnFailure + exit 0 → Succeeded")
	assert.Equal(t, "Completed", p.Status.ContainerStatuses[0].State.Terminated.Reason)
	assert.Equal(t, int32(0), p.Status.ContainerStatuses[0].RestartCount)

	n.eventually("onfailure-fails", func(p v1.Pod) bool { return p.Status.ContainerStatuses[0].RestartCount >= 1 }, "OnFailure + exit 2 → restarted")
	p = n.eventually("always-succeeds", func(p v1.Pod) bool { return p.Status.ContainerStatuses[0].RestartCount >= 1 }, "Always + exit 0 → restarted")
	assert.Equal(t, v1.PodRunning, p.Status.Phase)
}

func TestCrashLoopBackOff(t *testing.T) {
	t.Parallel()
	m, _ := render(t, `
apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  containers:
  - name: crash
    command: ["sh", "-c", "echo crashing; exit 1"]
`, nil)
	n := startNode(t, m) // back-off 1 s doubling to 2 s
	p := n.eventually("crasher", func(p v1.Pod) bool {
		cs := p.Status.ContainerStatuses[0]
		return cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" && cs.RestartCount >= 2
	}, "CrashLoopBackOff")
	cs := p.Status.ContainerStatuses[0]
	assert.Contains(t, cs.State.Waiting.Message, "restarting failed container=crash pod=crasher_default(")
	require.NotNil(t, cs.LastTerminationState.Terminated)
	assert.Equal(t, int32(1), cs.LastTerminationState.Terminated.ExitCode)
	assert.Equal(t, v1.PodRunning, p.Status.Phase, "kubelet keeps a crash-looping Always pod Running")
	ev := n.hasEvent("crasher", "crash", "BackOff", "Back-off restarting failed container crash in pod crasher_default(")
	assert.Equal(t, v1.EventTypeWarning, ev.Type)
	// It keeps being restarted, with the back-off in between.
	n.eventually("crasher", func(p v1.Pod) bool { return p.Status.ContainerStatuses[0].RestartCount >= 4 }, "still restarting")
	var log string
	require.NoError(t, n.get("/containerLogs/default/crasher/crash?previous=true", &log))
	assert.Equal(t, "crashing\n", log)
}

func TestInitContainers(t *testing.T) {
	t.Parallel()
	m, _ := render(t, `
apiVersion: v1
kind: Pod
metadata: {name: init-demo}
spec:
  restartPolicy: Never
  initContainers:
  - name: install
    workingDir: {{.Dir}}
    command: ["sh", "-c", "echo installed > index.html"]
  - name: configure
    workingDir: {{.Dir}}
    command: ["sh", "-c", "test -f index.html && echo configured >> index.html"]
  containers:
  - name: app
    workingDir: {{.Dir}}
    command: ["cat", "index.html"]
---
apiVersion: v1
kind: Pod
metadata: {name: init-fails}
spec:
  restartPolicy: Never
  initContainers:
  - name: broken
    command: ["sh", "-c", "exit 7"]
  containers:
  - name: app
    command: ["sh", "-c", "echo must not run"]
`, nil)
	n := startNode(t, m)
	p := n.eventually("init-demo", func(p v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded }, "init containers then app")
	assert.Equal(t, v1.ConditionTrue, condition(p, v1.PodInitialized))
	for _, cs := range p.Status.InitContainerStatuses {
		assert.Equal(t, "Completed", cs.State.Terminated.Reason, cs.Name)
	}
	var log string
	require.NoError(t, n.get("/containerLogs/default/init-demo/app", &log))
	assert.Equal(t, "installed\nconfigured\n", log, "the app saw both init containers' work, in order")

	p = n.eventually("init-fails", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed }, "failed init container with Never")
	assert.Equal(t, int32(7), p.Status.InitContainerStatuses[0].State.Terminated.ExitCode)
	assert.Equal(t, v1.ConditionFalse, condition(p, v1.PodInitialized))
	require.NotNil(t, p.Status.ContainerStatuses[0].State.Waiting, "the app never started")
}

func TestSidecarStartsFirstAndStopsAfterTheApp(t *testing.T) {
	t.Parallel()
	m, _ := render(t, `
apiVersion: v1
kind: Pod
metadata: {name: with-sidecar}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: proxy
    restartPolicy: Always
    workingDir: {{.Dir}}
    command: ["sh", "-c", "sleep 1; echo up > started; exec sleep 600"]
    startupProbe:
      exec: {command: ["cat", "started"]}
      periodSeconds: 1
      failureThreshold: 30
    readinessProbe:
      exec: {command: ["cat", "started"]}
      periodSeconds: 1
  containers:
  - name: app
    workingDir: {{.Dir}}
    command: ["cat", "started"]
`, nil)
	n := startNode(t, m)
	// The app only runs once the sidecar's startup probe passed: otherwise cat fails and the pod
	// (restartPolicy Never) fails.
	p := n.eventually("with-sidecar", func(p v1.Pod) bool {
		return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
	}, "the app ran to completion and the sidecar was stopped")
	require.Equal(t, v1.PodSucceeded, p.Status.Phase)
	assert.Equal(t, int32(0), p.Status.ContainerStatuses[0].State.Terminated.ExitCode)
	side := p.Status.InitContainerStatuses[0]
	require.NotNil(t, side.State.Terminated, "the sidecar is stopped once the app is done: %+v", p.Status)
	assert.Equal(t, v1.ConditionTrue, condition(p, v1.PodInitialized))
	n.hasEvent("with-sidecar", "proxy", "Killing", "Stopping container proxy")
	var log string
	require.NoError(t, n.get("/containerLogs/default/with-sidecar/app", &log))
	assert.Equal(t, "up\n", log)
}
