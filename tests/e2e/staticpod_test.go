package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// staticPod is a pod that writes its shell's PID to <name>.pid in {{.Dir}}; {{.Greeting}} is an
// environment value, so changing it changes the pod.
const staticPod = `
apiVersion: v1
kind: Pod
metadata: {name: {{.Name}}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    workingDir: {{.Dir}}
    env: [{name: GREETING, value: "{{.Greeting}}"}]
    command: ["sh", "-c", "echo $$$$ > {{.Name}}.pid; echo $GREETING; exec sleep 600"]
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
`

// TestStaticPods runs `node run --pod-manifest-path DIR` next to a -f pod and changes DIR while it
// runs, as a kubelet user changes /etc/kubernetes/manifests: a file added starts its pod, an invalid
// file is reported with its path and field and disturbs nothing, an edited file replaces its pod
// (new UID, old process gone), a removed file stops its pod and its logs, a name already run from
// -f is refused, and SIGTERM takes the static pods down with the rest.
func TestStaticPods(t *testing.T) {
	t.Parallel()
	manifests := t.TempDir()
	work := t.TempDir()
	pod := func(name, greeting string) string {
		m, _ := render(t, staticPod, map[string]any{"Name": name, "Greeting": greeting, "Dir": work})
		return m
	}
	put := func(file, content string) {
		// As kubelet's documentation advises: write elsewhere, then rename into the directory.
		tmp := filepath.Join(manifests, "."+file+".tmp")
		require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
		require.NoError(t, os.Rename(tmp, filepath.Join(manifests, file)))
	}
	put("a.yaml", pod("static-a", "hello"))
	n := startNode(t, pod("fixed", "from -f"), "--pod-manifest-path", manifests, "--file-check-frequency", "200ms")

	ready := func(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue }
	first := n.eventually("static-a", ready, "the static pod present at start runs")
	n.eventually("fixed", ready, "the -f pod runs beside it")
	firstPID := readPIDs(filepath.Join(work, "static-a.pid"))
	require.Len(t, firstPID, 1)
	var log string
	require.NoError(t, n.get("/containerLogs/default/static-a/app", &log))
	assert.Equal(t, "hello\n", log)

	// An invalid file and a name taken by -f are reported with file and field; nothing else changes.
	put("bad.yaml", strings.Replace(pod("static-bad", "x"), "periodSeconds: 1", "periodSecond: 1", 1))
	put("dup.yaml", pod("fixed", "again"))
	assert.Eventually(t, func() bool {
		s := n.stderr.String()
		return strings.Contains(s, filepath.Join(manifests, "bad.yaml")+": spec.containers[0].readinessProbe.periodSecond: unknown field") &&
			strings.Contains(s, filepath.Join(manifests, "dup.yaml")+`: metadata.name: Duplicate value: pod \"default/fixed\" is also run from -f`)
	}, timeout, tick, "both problems logged with file and field path")
	var missing string
	assert.Error(t, n.get("/pods/default/static-bad", &missing), "the invalid pod does not run")
	still := n.pod("static-a")
	assert.Equal(t, first.UID, still.UID)
	assert.Equal(t, first.Status.ContainerStatuses[0].ContainerID, still.Status.ContainerStatuses[0].ContainerID, "the running pod was not disturbed")

	// An edited file replaces the pod: the old instance is stopped, then the new one starts.
	put("a.yaml", pod("static-a", "changed"))
	second := n.eventually("static-a", func(p v1.Pod) bool { return p.UID != first.UID && ready(p) }, "the edited pod runs as a new pod")
	assert.False(t, alive(firstPID[0]), "the old instance's process is gone")
	require.NoError(t, n.get("/containerLogs/default/static-a/app", &log))
	assert.Equal(t, "changed\n", log)
	n.hasEvent("static-a", "app", "Killing", "Stopping container app")

	// A removed file stops its pod; the runtime forgets it and its logs.
	secondPID := readPIDs(filepath.Join(work, "static-a.pid"))
	require.Len(t, secondPID, 1)
	require.NoError(t, os.Remove(filepath.Join(manifests, "a.yaml")))
	require.Eventually(t, func() bool {
		resp, err := http.Get(n.base + "/pods/default/static-a")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusNotFound
	}, timeout, tick, "the removed pod is no longer listed")
	assert.False(t, alive(secondPID[0]), "the removed pod's process is gone")
	assert.NoDirExists(t, filepath.Join(n.rootDir, "pods", "default_static-a_"+string(second.UID)), "its logs are removed")

	// A new file starts; SIGTERM stops static pods like the others.
	put("b.yaml", pod("static-b", "b"))
	n.eventually("static-b", ready, "a file added later starts its pod")
	bPID := readPIDs(filepath.Join(work, "static-b.pid"))
	require.Len(t, bPID, 1)
	n.stop(syscall.SIGTERM)
	assert.False(t, alive(bPID[0]), "SIGTERM took the static pod down")
	assert.Contains(t, n.stdout.String(), "default/static-b  app  Stopping container app")
}

// TestStaticPodPathMustExist: a --pod-manifest-path that does not exist is an error naming the flag,
// before anything starts.
func TestStaticPodPathMustExist(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nope")
	code, _, stderr := runNode(t, "", "run", "--pod-manifest-path", missing, "--listen", "127.0.0.1:0", "--root-dir", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "error: --pod-manifest-path: stat "+missing+": no such file or directory")
}
