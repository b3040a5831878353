package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/cmd/node/internal/explain"
)

const explainManifest = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: app
    args: [sleep, "3600"]
    livenessProbe:
      httpGet: {path: /healthz, port: 8080}
      timeoutSeconds: 10
      periodSeconds: 10
`

// Warnings do not fail explain: exit 0, the timings and the warnings on stdout.
func TestExplainExitsZeroWithWarnings(t *testing.T) {
	var out, errOut bytes.Buffer
	code := dispatch([]string{"explain", "-f", "-"}, strings.NewReader(explainManifest), &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	assert.Empty(t, errOut.String())
	// Defaults applied (F3, S1, D0): killed 20 s after a failure begins at the earliest, at the
	// latest 10 + 2×max(10, 10) + 10 = 40 s.
	assert.Contains(t, out.String(), "Liveness:  http-get http://:8080/healthz delay=0s timeout=10s period=10s successThreshold=1 failureThreshold=3\n")
	assert.Contains(t, out.String(), "after a failure begins, the container is killed and restarted: at the earliest 20s, at the latest 40s\n")
	assert.Contains(t, out.String(), "spec.containers[0].livenessProbe.timeoutSeconds: timeoutSeconds 10 ≥ periodSeconds 10")
	assert.Contains(t, out.String(), "spec.containers[0]: livenessProbe without a readinessProbe")
}

func TestExplainJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"explain", "-o", "json", "-f", "-"}, strings.NewReader(explainManifest), &out, &errOut), errOut.String())
	var reports []explain.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &reports))
	require.Len(t, reports, 1)
	assert.Equal(t, "web", reports[0].Name)
	assert.Equal(t, 40.0, reports[0].Containers[0].Probes[0].Facts[0].Latest)
	assert.Len(t, reports[0].Warnings, 2)
}

// An invalid manifest fails explain with validate's own errors and exit 1; usage errors exit 2.
func TestExplainInvalidAndUsage(t *testing.T) {
	bad := "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - name: app\n    args: [sleep, \"1\"]\n    livenessProbe: {httpGet: {port: 8080}, periodSeconds: -1}\n"
	var out, errOut, vOut, vErr bytes.Buffer
	assert.Equal(t, 1, dispatch([]string{"explain", "-f", "-"}, strings.NewReader(bad), &out, &errOut))
	assert.Equal(t, 1, dispatch([]string{"validate", "-f", "-"}, strings.NewReader(bad), &vOut, &vErr))
	assert.Equal(t, vErr.String(), errOut.String(), "the same errors as node validate")
	assert.Contains(t, errOut.String(), "spec.containers[0].livenessProbe.periodSeconds")
	assert.Empty(t, out.String())

	errOut.Reset()
	assert.Equal(t, 2, dispatch([]string{"explain"}, nil, &out, &errOut))
	assert.Contains(t, errOut.String(), "no manifests: use -f FILE")
	errOut.Reset()
	assert.Equal(t, 2, dispatch([]string{"explain", "-o", "yaml", "-f", "x.yaml"}, nil, &out, &errOut))
	assert.Contains(t, errOut.String(), `-o "yaml": only json is supported`)
}
