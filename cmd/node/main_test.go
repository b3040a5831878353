package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseInterspersed(t *testing.T) {
	fs := newFlagSet("logs", "", &bytes.Buffer{})
	c := fs.String("c", "", "")
	n := fs.String("n", "default", "")
	pos, err := parseInterspersed(fs, []string{"web", "-c", "app", "-n", "prod", "--", "-x"})
	require.NoError(t, err)
	assert.Equal(t, []string{"web", "-x"}, pos)
	assert.Equal(t, "app", *c)
	assert.Equal(t, "prod", *n)
}

func TestLoadPodsDefaultsAndValidates(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(good, []byte(`
apiVersion: v1
kind: Pod
metadata: {name: a}
spec:
  containers:
  - name: c
    args: [sleep, "1"]
    livenessProbe: {tcpSocket: {port: 80}}
`), 0o600))
	var stderr bytes.Buffer
	pods, err := loadPods([]string{good}, nil, &stderr, time.Now())
	require.NoError(t, err, stderr.String())
	require.Len(t, pods, 1)
	p := pods[0]
	assert.Equal(t, "default", p.Namespace)
	assert.NotEmpty(t, p.UID)
	assert.Equal(t, int32(10), p.Spec.Containers[0].LivenessProbe.PeriodSeconds, "probe defaults applied")

	// The same pod twice is a duplicate, reported with both origins.
	stderr.Reset()
	_, err = loadPods([]string{good, good}, nil, &stderr, time.Now())
	assert.ErrorIs(t, err, errInvalid)
	assert.Contains(t, stderr.String(), `metadata.name: Duplicate value: pod "default/a" is also defined in `+good)

	// Two pods with one explicit UID.
	twins := filepath.Join(dir, "twins.yaml")
	require.NoError(t, os.WriteFile(twins, []byte(`
apiVersion: v1
kind: Pod
metadata: {name: a, uid: same}
spec: {containers: [{name: c, args: [sleep, "1"]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, uid: same}
spec: {containers: [{name: c, args: [sleep, "1"]}]}
`), 0o600))
	stderr.Reset()
	_, err = loadPods([]string{twins}, nil, &stderr, time.Now())
	assert.ErrorIs(t, err, errInvalid)
	assert.Contains(t, stderr.String(), twins+`: document 2: metadata.uid: Duplicate value: "same" is also the UID of the pod in `+twins+": document 1")
}

func TestDispatchUsageAndExitCodes(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, dispatch(nil, nil, &out, &errOut))
	assert.Contains(t, errOut.String(), "Usage:")
	errOut.Reset()
	assert.Equal(t, 2, dispatch([]string{"frobnicate"}, nil, &out, &errOut))
	assert.Contains(t, errOut.String(), `unknown command "frobnicate"`)
	assert.Equal(t, 2, dispatch([]string{"validate"}, nil, &out, &errOut), "validate needs -f")
	assert.Equal(t, 2, dispatch([]string{"run", "--crashloop-backoff-max", "0s"}, nil, &out, &errOut))
	errOut.Reset()
	assert.Equal(t, 1, dispatch([]string{"validate", "-f", "-"}, strings.NewReader("kind: Pod\napiVersion: v1\nspec: {containers: [{name: c}]}\n"), &out, &errOut))
	assert.Contains(t, errOut.String(), "error: <stdin>: metadata.name: Required value")
	assert.Contains(t, errOut.String(), "error: <stdin>: spec.containers[0].command: Required value")
	out.Reset()
	assert.Equal(t, 0, dispatch([]string{"version"}, nil, &out, &errOut))
	assert.True(t, strings.HasPrefix(out.String(), "node dev ("), out.String())
}
