package e2e

import (
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/freeport"
)

// The Kubernetes documentation's "Configure Liveness, Readiness and Startup Probes" examples,
// adapted to local processes: files live in the container's workingDir, servers are the node
// binary's demo health server on a free port.

func TestDocsExecLiveness(t *testing.T) {
	t.Parallel()
	m, _ := render(t, `
apiVersion: v1
kind: Pod
metadata:
  name: liveness-exec
  labels: {test: liveness}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: liveness
    image: registry.k8s.io/busybox:1.27.2
    workingDir: {{.Dir}}
    args: ["/bin/sh", "-c", "touch healthy; sleep 2; rm -f healthy; sleep 600"]
    livenessProbe:
      exec:
        command: ["cat", "healthy"]
      initialDelaySeconds: 1
      periodSeconds: 1
`, nil)
	n := startNode(t, m)
	// The documented outcome: the probe fails once the file is gone, the container is killed and
	// restarted.
	n.hasEvent("liveness-exec", "liveness", "Unhealthy", "Liveness probe failed: cat: healthy: No such file or directory")
	kill := n.hasEvent("liveness-exec", "liveness", "Killing", "Container liveness failed liveness probe, will be restarted")
	assert.Equal(t, "spec.containers{liveness}", kill.InvolvedObject.FieldPath)
	p := n.eventually("liveness-exec", func(p v1.Pod) bool {
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount >= 1 && cs.State.Running != nil
	}, "restarted after the liveness failure")
	cs := p.Status.ContainerStatuses[0]
	require.NotNil(t, cs.LastTerminationState.Terminated)
	assert.NotEqual(t, cs.LastTerminationState.Terminated.ContainerID, cs.ContainerID, "a new container ID per start")
	assert.True(t, strings.HasPrefix(cs.ContainerID, "proc://"))
	assert.Equal(t, int32(143), cs.LastTerminationState.Terminated.ExitCode, "killed with SIGTERM")
}

func TestDocsHTTPLiveness(t *testing.T) {
	t.Parallel()
	m, _ := render(t, `
apiVersion: v1
kind: Pod
metadata:
  name: liveness-http
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: liveness
    image: registry.k8s.io/e2e-test-images/agnhost:2.40
    workingDir: {{.Dir}}
    command: ["{{.Node}}", "__demo", "serve"]
    args: ["--http={{.Port}}", "--fail-at=3s"]
    livenessProbe:
      httpGet:
        path: /healthz
        port: {{.Port}}
        httpHeaders:
        - name: Custom-Header
          value: Awesome
      initialDelaySeconds: 1
      periodSeconds: 1
`, map[string]any{"Port": freeport.Port(t)})
	n := startNode(t, m)
	n.hasEvent("liveness-http", "liveness", "Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 500")
	n.hasEvent("liveness-http", "liveness", "Killing", "Container liveness failed liveness probe, will be restarted")
	// The demo server fails once per run: the restarted container stays healthy.
	n.eventually("liveness-http", func(p v1.Pod) bool {
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount == 1 && cs.State.Running != nil && cs.Started != nil && *cs.Started
	}, "restarted once")
}

func TestDocsTCPReadinessAndLiveness(t *testing.T) {
	t.Parallel()
	m, _ := render(t, `
apiVersion: v1
kind: Pod
metadata:
  name: goproxy
  labels: {app: goproxy}
spec:
  containers:
  - name: goproxy
    image: registry.k8s.io/goproxy:0.1
    command: ["{{.Node}}", "__demo", "serve", "--tcp={{.Port}}"]
    ports:
    - containerPort: {{.Port}}
      name: proxy
    readinessProbe:
      tcpSocket:
        port: proxy
      initialDelaySeconds: 1
      periodSeconds: 1
    livenessProbe:
      tcpSocket:
        port: {{.Port}}
      initialDelaySeconds: 1
      periodSeconds: 1
`, map[string]any{"Port": freeport.Port(t)})
	n := startNode(t, m)
	p := n.eventually("goproxy", func(p v1.Pod) bool {
		return condition(p, v1.PodReady) == v1.ConditionTrue
	}, "ready through its TCP readiness probe")
	cs := p.Status.ContainerStatuses[0]
	assert.True(t, cs.Ready)
	assert.Equal(t, int32(0), cs.RestartCount)
	assert.Equal(t, v1.PodRunning, p.Status.Phase)
	assert.Equal(t, "127.0.0.1", p.Status.PodIP)
	assert.Equal(t, v1.ConditionTrue, condition(p, v1.ContainersReady))
	assert.Equal(t, v1.ConditionTrue, condition(p, v1.PodInitialized))
	// Liveness ran and passed: kubelet's counter with its labels.
	require.Eventually(t, func() bool {
		var metrics string
		return n.get("/metrics/probes", &metrics) == nil &&
			strings.Contains(metrics, `prober_probe_total{container="goproxy",namespace="default",pod="goproxy",pod_uid="`+string(p.UID)+`",probe_type="Liveness",result="successful"}`)
	}, timeout, tick)
}

func TestDocsGRPCLiveness(t *testing.T) {
	t.Parallel()
	m, _ := render(t, `
apiVersion: v1
kind: Pod
metadata:
  name: etcd-with-grpc
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: etcd
    image: registry.k8s.io/etcd:3.5.1-0
    command: ["{{.Node}}", "__demo", "serve", "--grpc={{.Healthy}}"]
    ports:
    - containerPort: {{.Healthy}}
    livenessProbe:
      grpc:
        port: {{.Healthy}}
      initialDelaySeconds: 1
      periodSeconds: 1
  - name: failing
    image: registry.k8s.io/etcd:3.5.1-0
    workingDir: {{.Dir}}
    command: ["{{.Node}}", "__demo", "serve", "--grpc={{.Failing}}", "--fail-at=2s"]
    livenessProbe:
      grpc:
        port: {{.Failing}}
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 2
`, map[string]any{"Healthy": freeport.Port(t), "Failing": freeport.Port(t)})
	n := startNode(t, m)
	n.hasEvent("etcd-with-grpc", "failing", "Unhealthy", `Liveness probe failed: service unhealthy (responded with "NOT_SERVING")`)
	n.hasEvent("etcd-with-grpc", "failing", "Killing", "Container failing failed liveness probe, will be restarted")
	n.eventually("etcd-with-grpc", func(p v1.Pod) bool {
		return p.Status.ContainerStatuses[1].RestartCount == 1 && p.Status.ContainerStatuses[1].State.Running != nil
	}, "the failing server restarted")
	var metrics string
	require.NoError(t, n.get("/metrics", &metrics))
	assert.Contains(t, metrics, `container="etcd",namespace="default",pod="etcd-with-grpc"`)
	assert.Contains(t, metrics, "prober_probe_duration_seconds_bucket")
	assert.Equal(t, int32(0), n.container("etcd-with-grpc", "etcd").RestartCount, "the healthy server is left alone")
}

func TestDocsStartupProbeProtectsASlowStarter(t *testing.T) {
	t.Parallel()
	m, _ := render(t, `
apiVersion: v1
kind: Pod
metadata:
  name: slow
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: slow
    command: ["{{.Node}}", "__demo", "serve", "--http={{.Slow}}", "--start-after=4s"]
    ports:
    - name: liveness-port
      containerPort: {{.Slow}}
    livenessProbe:
      httpGet:
        path: /started
        port: liveness-port
      failureThreshold: 1
      periodSeconds: 1
    startupProbe:
      httpGet:
        path: /started
        port: liveness-port
      failureThreshold: 10
      periodSeconds: 1
  - name: too-slow
    command: ["{{.Node}}", "__demo", "serve", "--http={{.TooSlow}}", "--start-after=600s"]
    startupProbe:
      httpGet:
        path: /started
        port: {{.TooSlow}}
      failureThreshold: 2
      periodSeconds: 1
`, map[string]any{"Slow": freeport.Port(t), "TooSlow": freeport.Port(t)})
	n := startNode(t, m)
	// Until it has started, the failing endpoint is the startup probe's business, not liveness's.
	n.hasEvent("slow", "slow", "Unhealthy", "Startup probe failed: HTTP probe failed with statuscode: 503")
	p := n.eventually("slow", func(p v1.Pod) bool {
		cs := p.Status.ContainerStatuses[0]
		return cs.Started != nil && *cs.Started && cs.Ready
	}, "started and ready")
	assert.Equal(t, int32(0), p.Status.ContainerStatuses[0].RestartCount, "liveness never killed the slow starter")
	for _, e := range n.events("slow", "slow") {
		assert.NotContains(t, e.Message, "Liveness probe failed")
	}
	// A container that never starts within failureThreshold × period is killed and restarted.
	n.hasEvent("slow", "too-slow", "Killing", "Container too-slow failed startup probe, will be restarted")
	n.eventually("slow", func(p v1.Pod) bool { return p.Status.ContainerStatuses[1].RestartCount >= 1 }, "too-slow restarted")
}

func TestLivenessKillHonoursRestartPolicyNeverAndProbeGracePeriod(t *testing.T) {
	t.Parallel()
	m, _ := render(t, `
apiVersion: v1
kind: Pod
metadata: {name: no-restart}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    command: ["sleep", "600"]
    livenessProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
      failureThreshold: 1
---
apiVersion: v1
kind: Pod
metadata: {name: stubborn}
spec:
  # The pod's grace period would outlast the test: only the probe-level one can get the container
  # restarted in time.
  terminationGracePeriodSeconds: 600
  containers:
  - name: c
    command: ["sh", "-c", "trap '' TERM; sleep 600 & wait; wait"]
    livenessProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
      failureThreshold: 1
      terminationGracePeriodSeconds: 2
`, nil)
	n := startNode(t, m)
	ev := n.hasEvent("no-restart", "c", "Killing", "Container c failed liveness probe")
	assert.Equal(t, "Container c failed liveness probe", ev.Message, "no ', will be restarted' under restartPolicy Never")
	p := n.eventually("no-restart", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed }, "killed and not restarted")
	assert.Equal(t, int32(143), p.Status.ContainerStatuses[0].State.Terminated.ExitCode)
	assert.Equal(t, int32(0), p.Status.ContainerStatuses[0].RestartCount)

	p = n.eventually("stubborn", func(p v1.Pod) bool { return p.Status.ContainerStatuses[0].RestartCount >= 1 }, "SIGKILLed after the probe's grace period and restarted")
	require.NotNil(t, p.Status.ContainerStatuses[0].LastTerminationState.Terminated)
	assert.Equal(t, int32(137), p.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode, "SIGTERM was ignored: SIGKILL")
	// A graceful stop would honour the pod's 600 s; the shims take the containers down with node.
	n.stop(syscall.SIGKILL)
}
