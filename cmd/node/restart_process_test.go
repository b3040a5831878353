package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cmd/node/internal/demo"
	"github.com/probeactor/probeactor/internal/fleettest"
	"github.com/probeactor/probeactor/internal/freeport"
)

// Issue 20: node's own restart, crash or upgrade never restarts a container. These tests run
// `node run` as a child (fleettest's "node" role), SIGKILL it, start it again on the same
// --root-dir and check what survived.

// restartNode is one node child and what the tests read of it.
type restartNode struct {
	t    *testing.T
	dir  string // the pods' working directory (pid files, the liveness switch)
	api  string
	proc *fleettest.Proc
}

func startRestartNode(t *testing.T, dir string, args ...string) *restartNode {
	t.Helper()
	listen := freeport.Addr(t)
	all := append([]string{"--listen", listen, "--root-dir", filepath.Join(dir, "root"), "--log-level", "debug"}, args...)
	return &restartNode{t: t, dir: dir, api: "http://" + listen, proc: fleettest.StartRole(t, "node", all...)}
}

// pod returns the pod named name as the node's /pods serves it (false while there is none, or
// while node does not answer).
func (n *restartNode) pod(name string) (v1.Pod, bool) {
	pods, err := podList(n.api)
	if err != nil {
		return v1.Pod{}, false
	}
	for _, p := range pods {
		if p.Name == name {
			return p, true
		}
	}
	return v1.Pod{}, false
}

func (n *restartNode) events() string {
	_, body := getBody(n.t, n.api+"/events")
	return body
}

func (n *restartNode) logs(pod, container string) string {
	_, body := getBody(n.t, n.api+"/containerLogs/default/"+pod+"/"+container)
	return body
}

// getBody GETs url and returns the status code and the body.
func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 15 * time.Second}
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// statuses is a pod's container statuses by name.
func statuses(p v1.Pod) map[string]v1.ContainerStatus {
	out := map[string]v1.ContainerStatus{}
	for _, c := range p.Status.ContainerStatuses {
		out[c.Name] = c
	}
	return out
}

func readyAndStarted(p v1.Pod, names ...string) bool {
	st := statuses(p)
	for _, name := range names {
		c, ok := st[name]
		if !ok || !c.Ready || c.Started == nil || !*c.Started || c.State.Running == nil {
			return false
		}
	}
	return len(names) > 0
}

// pidOf reads a pid file the container wrote (a manifest writes $$ as $$$$: Kubernetes expands $$
// to $ in a command).
func pidOf(t *testing.T, path string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "pid file %s", path)
	return pid
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// everyProbeKind is one pod whose two containers are probed by every kind of probe: "app" (a demo
// server) has an HTTP startup probe, an exec readiness probe and a gRPC liveness probe; "side" has
// a TCP readiness probe and an exec liveness probe that fails once the file "fail" exists. Both
// write their pid and log a tick every 100 ms.
func everyProbeKind(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	httpPort, grpcPort, tcpPort := freeport.Port(t), freeport.Port(t), freeport.Port(t)
	tick := func(pidFile string) string {
		return fmt.Sprintf("echo $$$$ > %s; (while :; do echo tick; sleep 0.1; done) & exec", pidFile)
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    workingDir: %[1]s
    command: ["sh", "-c", "%[2]s %[3]s %[4]s serve --http %[5]d --grpc %[6]d --ready-file ready --fail-marker ''"]
    startupProbe: {httpGet: {path: /started, port: %[5]d}, periodSeconds: 1, failureThreshold: 30}
    readinessProbe: {exec: {command: ["cat", "ready"]}, periodSeconds: 1}
    livenessProbe: {grpc: {port: %[6]d}, periodSeconds: 1}
  - name: side
    workingDir: %[1]s
    command: ["sh", "-c", "%[7]s %[3]s %[4]s serve --tcp %[8]d --fail-marker ''"]
    readinessProbe: {tcpSocket: {port: %[8]d}, periodSeconds: 1}
    livenessProbe: {exec: {command: ["sh", "-c", "test ! -e fail"]}, periodSeconds: 1, failureThreshold: 1}
`, dir, tick("app.pid"), self, demo.Arg, httpPort, grpcPort, tick("side.pid"), tcpPort)
	path := filepath.Join(dir, "pod.yaml")
	require.NoError(t, os.WriteFile(path, []byte(manifest), 0o600))
	return path
}

// onePod writes, at path, a manifest of the pod name whose one container "app" runs script in dir
// with the given grace period (extra: more YAML under the container, indented by four spaces).
func onePod(t *testing.T, path, dir, name string, grace int, script, extra string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: %d
  containers:
  - name: app
    workingDir: %s
    command: ["sh", "-c", %q]
%s`, name, grace, dir, script, extra)), 0o600))
	return path
}

// TestARestartedNodeAdoptsItsContainers is issue 20's main promise with every probe kind: node
// SIGKILLed and started again on the same --root-dir adopts the containers (same container IDs,
// restart counts, start times and processes; no Started event; the log goes on), reports them ready
// and started from its first answer on (KEP-4781), keeps them under full control (a liveness
// failure restarts one) and stops them when it stops.
func TestARestartedNodeAdoptsItsContainers(t *testing.T) {
	dir := t.TempDir()
	manifest := everyProbeKind(t, dir)
	n := startRestartNode(t, dir, "-f", manifest, "--reattach-timeout", "60s")
	var before v1.Pod
	require.Eventually(t, func() bool {
		var ok bool
		before, ok = n.pod("web")
		return ok && readyAndStarted(before, "app", "side")
	}, 60*time.Second, 50*time.Millisecond, "both containers run, started and ready")
	appPID, sidePID := pidOf(t, filepath.Join(dir, "app.pid")), pidOf(t, filepath.Join(dir, "side.pid"))
	logBefore := n.logs("web", "side")
	require.Contains(t, logBefore, "tick")
	// The API shows a result as soon as the probe tree has it; the pod's record has it once the
	// runtime wrote it, a moment later. A node killed in between comes back with the older record
	// (and probes again): the test kills it after the record has the results it checks for.
	require.Eventually(t, func() bool { return recordHasResults(t, dir, before.UID) }, 30*time.Second, 20*time.Millisecond,
		"the pod's record has both containers ready and app started")

	n.proc.Kill() // SIGKILL: no chance to stop anything
	time.Sleep(300 * time.Millisecond)
	assert.True(t, alive(appPID) && alive(sidePID), "the containers outlive node")

	n.proc.Restart()
	var first v1.Pod
	require.Eventually(t, func() bool {
		var ok bool
		first, ok = n.pod("web")
		return ok && len(first.Status.ContainerStatuses) == 2
	}, 60*time.Second, 20*time.Millisecond, "the restarted node serves the pod")
	assert.True(t, readyAndStarted(first, "app", "side"), "ready and started from the first answer on: %+v", first.Status.ContainerStatuses)
	assert.Equal(t, before.UID, first.UID, "the same pod")
	was, is := statuses(before), statuses(first)
	for _, name := range []string{"app", "side"} {
		assert.Equal(t, was[name].ContainerID, is[name].ContainerID, "%s: the same container", name)
		assert.Equal(t, was[name].RestartCount, is[name].RestartCount, "%s: not restarted", name)
		require.NotNil(t, is[name].State.Running, name)
		assert.True(t, was[name].State.Running.StartedAt.Equal(&is[name].State.Running.StartedAt), "%s: the same start time", name)
	}
	assert.True(t, alive(appPID) && alive(sidePID), "the same processes")
	assert.NotContains(t, n.events(), "Container started", "no container was started again")
	assert.NotContains(t, n.events(), "Container created", "nor created")
	require.Eventually(t, func() bool {
		after := n.logs("web", "side")
		return strings.HasPrefix(after, logBefore) && len(after) > len(logBefore)
	}, 10*time.Second, 50*time.Millisecond, "the log goes on in the same file")

	// Full control: a liveness failure restarts the adopted container.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fail"), nil, 0o600))
	require.Eventually(t, func() bool {
		p, ok := n.pod("web")
		c := statuses(p)["side"]
		return ok && c.RestartCount == was["side"].RestartCount+1 && c.ContainerID != was["side"].ContainerID
	}, 30*time.Second, 50*time.Millisecond, "the adopted container is restarted on liveness failure")
	require.NoError(t, os.Remove(filepath.Join(dir, "fail")))
	require.Eventually(t, func() bool { return !alive(sidePID) }, 10*time.Second, 20*time.Millisecond, "its old process is gone")

	require.NoError(t, n.proc.Stop()) // SIGTERM: the pods stop
	require.Eventually(t, func() bool { return !alive(appPID) }, 10*time.Second, 20*time.Millisecond, "nothing outlives a stopped node")
}

// TestContainersDieAtTheReattachTimeout: a node that does not come back leaves no container
// behind: each lives until --reattach-timeout after node's death, then its whole tree (a setsid'd
// descendant too) is killed.
func TestContainersDieAtTheReattachTimeout(t *testing.T) {
	dir := t.TempDir()
	manifest := onePod(t, filepath.Join(dir, "pod.yaml"), dir, "lonely", 1,
		"setsid sleep 300 & echo $! > child.pid; echo $$$$ > app.pid; exec sleep 300", "")
	n := startRestartNode(t, dir, "-f", manifest, "--reattach-timeout", "3s")
	appPID, childPID := pidOf(t, filepath.Join(dir, "app.pid")), pidOf(t, filepath.Join(dir, "child.pid"))
	n.proc.Kill()
	killed := time.Now()
	time.Sleep(time.Second)
	assert.True(t, alive(appPID) && alive(childPID), "alive within the window")
	require.Eventually(t, func() bool { return !alive(appPID) && !alive(childPID) }, 20*time.Second, 20*time.Millisecond,
		"the container and its setsid'd child are killed after the window")
	assert.GreaterOrEqual(t, time.Since(killed), 3*time.Second, "not before the window ended")
}

// TestManifestsChangedWhileNodeWasDown: at its start node handles what changed as kubelet does: a
// static pod whose file was removed is stopped, one whose file changed is replaced, an unchanged
// one is adopted; a corrupt record is reported with its path and its container stopped.
func TestManifestsChangedWhileNodeWasDown(t *testing.T) {
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o755))
	static := func(name, extra string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %[1]s}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    workingDir: %[2]s
    command: ["sh", "-c", "echo $$$$ > %[1]s.pid; exec sleep 300"]%[3]s
`, name, dir, extra)
	}
	for _, name := range []string{"keep", "gone", "edit", "corrupt"} {
		require.NoError(t, os.WriteFile(filepath.Join(manifests, name+".yaml"), []byte(static(name, "")), 0o600))
	}
	n := startRestartNode(t, dir, "--pod-manifest-path", manifests, "--file-check-frequency", "1s", "--reattach-timeout", "60s")
	pids := map[string]int{}
	uids := map[string]string{}
	ids := map[string]string{}
	for _, name := range []string{"keep", "gone", "edit", "corrupt"} {
		pids[name] = pidOf(t, filepath.Join(dir, name+".pid"))
		require.Eventually(t, func() bool {
			p, ok := n.pod(name)
			if ok && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].ContainerID != "" {
				uids[name], ids[name] = string(p.UID), p.Status.ContainerStatuses[0].ContainerID
				return true
			}
			return false
		}, 30*time.Second, 20*time.Millisecond, name)
	}
	n.proc.Kill()
	require.NoError(t, os.Remove(filepath.Join(manifests, "gone.yaml")))
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "edit.yaml"), []byte(static("edit", "\n    env: [{name: X, value: changed}]")), 0o600))
	record := filepath.Join(dir, "root", "state", uids["corrupt"]+".json")
	require.FileExists(t, record)
	require.NoError(t, os.WriteFile(record, []byte(`{"version": 1, "uid": `), 0o600))

	n.proc.Restart()
	require.Eventually(t, func() bool {
		p, ok := n.pod("keep")
		return ok && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].ContainerID == ids["keep"]
	}, 30*time.Second, 20*time.Millisecond, "the unchanged pod is adopted")
	assert.True(t, alive(pids["keep"]))
	require.Eventually(t, func() bool { return !alive(pids["gone"]) }, 30*time.Second, 20*time.Millisecond, "a removed manifest's pod is stopped")
	require.Eventually(t, func() bool { return !alive(pids["edit"]) }, 30*time.Second, 20*time.Millisecond, "a changed manifest's old pod is stopped")
	require.Eventually(t, func() bool {
		p, ok := n.pod("edit")
		return ok && string(p.UID) != uids["edit"] && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	}, 30*time.Second, 20*time.Millisecond, "and its new pod runs")
	require.Eventually(t, func() bool { return !alive(pids["corrupt"]) }, 30*time.Second, 20*time.Millisecond, "a corrupt record's container is stopped as an orphan")
	assert.Contains(t, n.proc.Stderr(), record, "the corrupt record is reported with its path")
	_, gone := n.pod("gone")
	assert.False(t, gone)
}

// TestTwoNodesRaceForOneRootDir: of two nodes started at once on one --root-dir, one runs and the
// other exits 1 at once naming the holder's pid.
func TestTwoNodesRaceForOneRootDir(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "pod.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - {name: app, command: [sleep, \"300\"]}\n"), 0o600))
	a := startRestartNode(t, dir, "-f", manifest)
	b := startRestartNode(t, dir, "-f", manifest)
	var loser, winner *restartNode
	require.Eventually(t, func() bool {
		switch {
		case a.proc.Exited() && !b.proc.Exited():
			loser, winner = a, b
		case b.proc.Exited() && !a.proc.Exited():
			loser, winner = b, a
		}
		return loser != nil
	}, 30*time.Second, 20*time.Millisecond, "one of the two exits")
	// The holder's pid is named when it has written it within a second of taking the lock (the
	// refused node waits that long for it); on a machine too busy for that it says so instead.
	if stderr := loser.proc.Stderr(); strings.Contains(stderr, "another node (pid ") {
		assert.Contains(t, stderr, fmt.Sprintf("another node (pid %d) holds it", winner.proc.Pid()))
	} else {
		assert.Contains(t, stderr, "another node holds it (it has not written its pid yet)")
	}
	var ee interface{ ExitCode() int }
	require.ErrorAs(t, loser.proc.Err(), &ee)
	assert.Equal(t, 1, ee.ExitCode())
	require.Eventually(t, func() bool { _, ok := winner.pod("a"); return ok }, 30*time.Second, 20*time.Millisecond, "the other runs")
}

// TestARestartedFleetNodeKeepsItsPodsAtTheAggregator: a node SIGKILLed and started again reports
// the adopted pods with their preserved status: at the aggregator, a pod of a Ready node is ready
// with the same container and restart count at every moment (at most the node turns Unknown while
// it is down), and once the node is back its pods are exactly as before.
func TestARestartedFleetNodeKeepsItsPodsAtTheAggregator(t *testing.T) {
	agg := fleettest.StartAggregator(t, "--node-monitor-grace-period", "10s")
	n := startFleetNode(t, "n1", agg.Remote, 2)
	awaitAggregatorEqualsNodes(t, agg, []*fleetNode{n}, 2, 60*time.Second)
	before, err := podList(agg.API)
	require.NoError(t, err)
	want := podSummary(before)
	ids := map[string]string{}
	for _, p := range before {
		ids[p.Name] = p.Status.ContainerStatuses[0].ContainerID
	}
	// The aggregator shows a result once the probe tree has it; the pod's record has it once the
	// runtime wrote it, a moment later. A node killed in between comes back with the older record,
	// its pods not ready (what it persisted is what it promises): kill it after the records have it.
	require.Eventually(t, func() bool {
		for _, p := range before {
			if !recordContainers(t, n.root, p.UID)["app"].Ready {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "every pod's record has its container ready")

	n.proc.Kill()
	n.proc.Restart()
	deadline := time.Now().Add(60 * time.Second)
	for back := false; !back; {
		require.True(t, time.Now().Before(deadline), "the restarted node's pods never came back at the aggregator")
		nodes, err := nodeList(agg.API)
		require.NoError(t, err)
		ready := len(nodes) == 1 && nodeReady(nodes[0])
		pods, err := podList(agg.API)
		require.NoError(t, err)
		for _, p := range pods {
			if !ready {
				continue // a node that is not Ready reports no pod as ready: allowed while it is down
			}
			require.Len(t, p.Status.ContainerStatuses, 1)
			c := p.Status.ContainerStatuses[0]
			assert.True(t, c.Ready, "%s flapped at the aggregator: %+v", p.Name, c)
			assert.Equal(t, ids[p.Name], c.ContainerID, "%s: the same container", p.Name)
			assert.Zero(t, c.RestartCount, p.Name)
		}
		own, err := podList(n.api) // the restarted node serves, and the aggregator has its session
		back = err == nil && ready && assert.ObjectsAreEqual(want, podSummary(own)) && assert.ObjectsAreEqual(want, podSummary(pods)) &&
			strings.Count(n.proc.Stderr(), "reporting to the fleet aggregator") > 0
		if !back {
			time.Sleep(20 * time.Millisecond)
		}
	}
	now, err := podList(n.api)
	require.NoError(t, err)
	assert.Equal(t, want, podSummary(now), "the node itself serves the same pods")
}

func nodeReady(n v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// TestSIGUSR2LeavesThePodsToTheNextNode: the planned restart. SIGUSR2 makes node exit 0 without
// stopping a container; the next node adopts them; SIGTERM keeps its meaning.
func TestSIGUSR2LeavesThePodsToTheNextNode(t *testing.T) {
	dir := t.TempDir()
	manifest := onePod(t, filepath.Join(dir, "pod.yaml"), dir, "upgraded", 1, "echo $$$$ > app.pid; exec sleep 300",
		"    readinessProbe: {exec: {command: [\"true\"]}, periodSeconds: 1}\n")
	n := startRestartNode(t, dir, "-f", manifest)
	var before v1.Pod
	require.Eventually(t, func() bool {
		var ok bool
		before, ok = n.pod("upgraded")
		return ok && readyAndStarted(before, "app")
	}, 30*time.Second, 20*time.Millisecond, "the pod runs and is ready")
	pid := pidOf(t, filepath.Join(dir, "app.pid"))

	n.proc.Signal(syscall.SIGUSR2)
	select {
	case <-n.proc.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("node did not exit on SIGUSR2")
	}
	require.NoError(t, n.proc.Err(), "exit 0")
	assert.Contains(t, n.proc.Stderr(), "node stopped; its containers wait for the next node")
	assert.NotContains(t, n.proc.Stdout(), "Stopping container app", "no container was stopped")
	assert.True(t, alive(pid), "the container runs on")

	n.proc.Restart()
	require.Eventually(t, func() bool {
		p, ok := n.pod("upgraded")
		return ok && readyAndStarted(p, "app") && statuses(p)["app"].ContainerID == statuses(before)["app"].ContainerID
	}, 30*time.Second, 20*time.Millisecond, "the next node adopts the container")
	assert.True(t, alive(pid))
	require.NoError(t, n.proc.Stop())
	require.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 20*time.Millisecond, "SIGTERM still stops the pods")
}

// TestARestartWhileAContainerIsTerminating: node SIGKILLed while it stops a removed static pod's
// container (it ignores SIGTERM, so node was waiting out its grace period) leaves it to the next
// node, which has no manifest for it and so stops it again, grace period and SIGKILL, as an orphan.
func TestARestartWhileAContainerIsTerminating(t *testing.T) {
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o755))
	file := onePod(t, filepath.Join(manifests, "stubborn.yaml"), dir, "stubborn", 4,
		"trap '' TERM; echo $$$$ > app.pid; while :; do sleep 0.1; done", "")
	n := startRestartNode(t, dir, "--pod-manifest-path", manifests, "--file-check-frequency", "500ms")
	pid := pidOf(t, filepath.Join(dir, "app.pid"))
	require.NoError(t, os.Remove(file))
	require.Eventually(t, func() bool { return strings.Contains(n.proc.Stdout(), "Stopping container app") }, 30*time.Second, 20*time.Millisecond,
		"node begins to stop the pod")
	n.proc.Kill() // within the 4 s grace period the container ignores SIGTERM in
	assert.True(t, alive(pid), "still terminating when node dies")

	n.proc.Restart()
	require.Eventually(t, func() bool { return !alive(pid) }, 30*time.Second, 20*time.Millisecond, "the next node stops it as an orphan")
	_, listed := n.pod("stubborn")
	assert.False(t, listed, "and does not adopt it")
}

// recordHasResults reports whether the pod record node keeps under dir's root has app ready and
// started and side ready (the results TestARestartedNodeAdoptsItsContainers expects after a restart).
func recordHasResults(t *testing.T, dir string, uid types.UID) bool {
	got := recordContainers(t, filepath.Join(dir, "root"), uid)
	return got["app"].Ready && got["app"].StartupPassed && got["side"].Ready
}

// recordedContainer is what a pod record keeps of a container's probe results.
type recordedContainer struct {
	Ready         bool `json:"ready"`
	StartupPassed bool `json:"startupPassed"`
}

// recordContainers reads the pod record node keeps under root (its --root-dir): each container's
// results by name, none while the record is not written.
func recordContainers(t *testing.T, root string, uid types.UID) map[string]recordedContainer {
	b, err := os.ReadFile(filepath.Join(root, "state", string(uid)+".json"))
	if err != nil {
		return nil
	}
	var rec struct {
		Containers []struct {
			Name string `json:"name"`
			recordedContainer
		} `json:"containers"`
	}
	require.NoError(t, json.Unmarshal(b, &rec))
	got := map[string]recordedContainer{}
	for _, c := range rec.Containers {
		got[c.Name] = c.recordedContainer
	}
	return got
}
