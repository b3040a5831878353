package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

const invalidManifest = `
apiVersion: v1
kind: Pod
metadata: {name: typo}
spec:
  containers:
  - name: web
    command: ["sleep", "60"]
    livenessProbe:
      exec: {command: ["true"]}
      periodSecond: 5
---
apiVersion: v1
kind: Pod
metadata: {name: rules}
spec:
  containers:
  - name: no-command
    readinessProbe:
      tcpSocket: {port: 8080}
      terminationGracePeriodSeconds: 3
  - name: web
    command: ["sleep", "60"]
    livenessProbe:
      httpGet: {port: 8080}
      successThreshold: 2
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: nope}
`

func TestValidate(t *testing.T) {
	t.Parallel()
	bad := writeManifest(t, invalidManifest)
	code, _, stderr := runNode(t, "", "validate", "-f", bad)
	assert.Equal(t, 1, code)
	for _, want := range []string{
		bad + ": document 1: spec.containers[0].livenessProbe.periodSecond: unknown field",
		bad + `: document 3: kind: unsupported kind "Deployment"`,
	} {
		assert.Contains(t, stderr, want)
	}

	// Once the wire format is right, the API server's probe rules and the runtime's limits apply.
	fixed := strings.Replace(strings.Replace(invalidManifest, "periodSecond:", "periodSeconds:", 1), "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: nope}\n", "", 1)
	fixed = strings.TrimSuffix(strings.TrimSpace(fixed), "---")
	code, _, stderr = runNode(t, fixed, "validate", "-f", "-")
	assert.Equal(t, 1, code)
	for _, want := range []string{
		"<stdin>: document 2: spec.containers[0].command: Required value",
		"<stdin>: document 2: spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 3: must not be set for readinessProbes",
		"<stdin>: document 2: spec.containers[1].livenessProbe.successThreshold: Invalid value: 2: must be 1",
	} {
		assert.Contains(t, stderr, want)
	}
	assert.NotContains(t, stderr, "document 1", "the first pod is valid now")

	good := writeManifest(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: ok}\nspec:\n  containers: [{name: c, args: [sleep, '1']}]\n")
	code, stdout, _ := runNode(t, "", "validate", "-f", good)
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "valid: 1 pod(s): default/ok")
}

func TestRunWithAnInvalidManifestStartsNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bad := writeManifest(t, invalidManifest)
	code, _, stderr := runNode(t, "", "run", "-f", bad, "--root-dir", root, "--listen", "127.0.0.1:0")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "spec.containers[0].livenessProbe.periodSecond: unknown field")
	assert.Contains(t, stderr, "nothing was started")
	_, err := os.Stat(filepath.Join(root, "pods"))
	assert.True(t, os.IsNotExist(err), "no pod directory was created")

	code, _, stderr = runNode(t, "", "run", "--log-format", "yaml")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `--log-format "yaml": use text or json`)
}

func TestGetPodsAndLogs(t *testing.T) {
	t.Parallel()
	m, _ := render(t, `
apiVersion: v1
kind: Pod
metadata: {name: talker}
spec:
  containers:
  - name: talk
    command: ["sh", "-c", "echo hello from talker; exec sleep 600"]
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
`, nil)
	n := startNode(t, m, "--log-format", "json")
	// node wait, as a script waits for readiness: the pod is not ready yet when it starts.
	code, stdout, stderr := runNode(t, "", "wait", "pod/talker", "--for", "condition=Ready", "--timeout", "60s", "--server", strings.TrimPrefix(n.base, "http://"))
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "pod/talker condition met\n", stdout)
	n.eventually("talker", func(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue }, "ready")
	// hclog's JSON lines on stderr, events as text lines on stdout.
	logLines := strings.Split(strings.TrimSpace(n.stderr.String()), "\n")
	require.NotEmpty(t, logLines)
	for _, l := range logLines {
		var entry map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &entry), "log line %q", l)
		assert.Contains(t, entry, "@message")
	}
	assert.Contains(t, n.stdout.String(), "talk  Container started")
	server := strings.TrimPrefix(n.base, "http://")
	code, stdout, stderr = runNode(t, "", "get", "pods", "--server", server)
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2)
	assert.Regexp(t, `^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$`, lines[0])
	assert.Regexp(t, `^talker\s+1/1\s+Running\s+0\s+\d+s$`, lines[1])
	code, stdout, stderr = runNode(t, "", "get", "pods", "-o", "wide", "--server", server)
	require.Equal(t, 0, code, stderr)
	lines = strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2)
	assert.Regexp(t, `^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES$`, lines[0])
	assert.Regexp(t, `^talker\s+1/1\s+Running\s+0\s+\d+s\s+127\.0\.0\.1\s+<none>\s+<none>\s+<none>$`, lines[1])

	code, stdout, stderr = runNode(t, "", "get", "pods", "talker", "-o", "name", "--field-selector", "status.phase=Running", "--server", server)
	require.NotEqual(t, 0, code, "a NAME and a field selector: kubectl refuses both")
	code, stdout, stderr = runNode(t, "", "get", "pods", "-o", "name", "--field-selector", "status.phase=Running", "--server", server)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "pod/talker\n", stdout)
	code, stdout, stderr = runNode(t, "", "events", "--for", "pod/talker", "--server", server)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\n.*Normal\s+Created\s+Pod/talker\s+Container created\n.*Normal\s+Started\s+Pod/talker\s+Container started$`, stdout)

	code, stdout, stderr = runNode(t, "", "logs", "talker", "--server", server)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "hello from talker\n", stdout)
	code, _, stderr = runNode(t, "", "logs", "talker", "-c", "nope", "--server", server)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "container nope is not valid for pod talker out of: talk")
	code, _, stderr = runNode(t, "", "logs", "nope", "--server", server)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `Error from server (NotFound): pods "nope" not found`)
	code, _, stderr = runNode(t, "", "get", "pods", "--server", "127.0.0.1:1")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "cannot reach node")

	code, stdout, _ = runNode(t, "", "version")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "node ")
}

// TestRunStopsEverythingWhenAPodCannotStart: all pods or none. The second pod cannot start (a file
// sits where its log directory goes), so node stops the first one, exits 1 and leaves no process.
func TestRunStopsEverythingWhenAPodCannotStart(t *testing.T) {
	t.Parallel()
	m, data := render(t, `
apiVersion: v1
kind: Pod
metadata: {name: first}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    workingDir: {{.Dir}}
    command: ["sh", "-c", "echo $$$$ > first.pid; exec sleep 600"]
---
apiVersion: v1
kind: Pod
metadata: {name: second, uid: second-uid}
spec:
  containers: [{name: c, command: ["sleep", "600"]}]
`, nil)
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "pods"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "pods", "default_second_second-uid"), nil, 0o600))
	code, stdout, stderr := runNode(t, "", "run", "-f", writeManifest(t, m), "--root-dir", root, "--listen", "127.0.0.1:0")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "start pod default/second: pod log directory: mkdir ")
	assert.Contains(t, stderr, "stopping the pods already started")
	assert.Contains(t, stdout, "default/first  c  Container started", "the first pod was started")
	assert.Contains(t, stdout, "default/first  c  Stopping container c", "and stopped again")
	assert.NotContains(t, stdout, "default/second")
	for _, pid := range readPIDs(filepath.Join(data["Dir"].(string), "first.pid")) {
		assert.False(t, alive(pid), "the first pod's container %d outlived node", pid)
	}
}
