package manifest

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const twoPods = `
# comment
apiVersion: v1
kind: Pod
metadata:
  name: a
spec:
  containers:
  - name: c
    command: ["sleep", "1"]
---
---
apiVersion: v1
kind: Pod
metadata:
  name: b
spec:
  containers:
  - name: c
    args: ["sleep", "1"]
    livenessProbe:
      exec: {command: ["true"]}
      periodSeconds: 2
`

func TestDecodeMultiDocumentYAML(t *testing.T) {
	pods, errs := Decode("pods.yaml", []byte(twoPods))
	require.Empty(t, errs)
	require.Len(t, pods, 2)
	assert.Equal(t, "a", pods[0].Pod.Name)
	assert.Equal(t, "pods.yaml: document 1", pods[0].Origin)
	assert.Equal(t, "b", pods[1].Pod.Name)
	assert.Equal(t, int32(2), pods[1].Pod.Spec.Containers[0].LivenessProbe.PeriodSeconds)
}

func TestDecodeJSONStreamAndList(t *testing.T) {
	data := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","command":["x"]}]}}
{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","command":["x"]}]}}]}`
	pods, errs := Decode("p.json", []byte(data))
	require.Empty(t, errs)
	require.Len(t, pods, 2)
	assert.Equal(t, "a", pods[0].Pod.Name)
	assert.Equal(t, "b", pods[1].Pod.Name)
	assert.Equal(t, "p.json: document 2: items[0]", pods[1].Origin)
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name, data string
		want       []string
	}{
		{
			name: "unknown field with its path",
			data: "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - name: c\n    livenessProbe:\n      periodSecond: 3\n",
			want: []string{"f.yaml: spec.containers[0].livenessProbe.periodSecond: unknown field"},
		},
		{
			name: "duplicate field",
			data: "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nmetadata: {name: b}\n",
			want: []string{"f.yaml: document 1: invalid YAML", `line 4: key "metadata" already set`},
		},
		{
			name: "other kind",
			data: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n",
			want: []string{`f.yaml: kind: unsupported kind "Deployment": only kind Pod`},
		},
		{
			name: "missing kind in a list item",
			data: "apiVersion: v1\nkind: List\nitems:\n- metadata: {name: a}\n",
			want: []string{"f.yaml: items[0].kind: required"},
		},
		{
			name: "unknown field inside a list item",
			data: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  spec: {nodeNam: x}\n",
			want: []string{"f.yaml: items[0].spec.nodeNam: unknown field"},
		},
		{
			name: "wrong type",
			data: "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    livenessProbe: {periodSeconds: soon}\n",
			want: []string{"f.yaml: spec.containers.livenessProbe.periodSeconds: Invalid value: got string, want an integer"},
		},
		{
			name: "a number where a list belongs",
			data: "apiVersion: v1\nkind: Pod\nspec: {containers: 5}\n",
			want: []string{"f.yaml: spec.containers: Invalid value: got number, want a list"},
		},
		{
			name: "wrong type of a named string type",
			data: "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, imagePullPolicy: [x]}]}\n",
			want: []string{"f.yaml: spec.containers.imagePullPolicy: Invalid value: got array, want v1.PullPolicy"},
		},
		{
			name: "wrong type in the type header",
			data: "apiVersion: 1\nkind: Pod\n",
			want: []string{"f.yaml: apiVersion: Invalid value: got number, want a string"},
		},
		{
			name: "list items not a list",
			data: "apiVersion: v1\nkind: List\nitems: 5\n",
			want: []string{"f.yaml: items: Invalid value: got number, want a list"},
		},
		{
			name: "a list item that is not an object",
			data: "apiVersion: v1\nkind: List\nitems: [1]\n",
			want: []string{"f.yaml: items[0]: not a Kubernetes object: got a number"},
		},
		{
			name: "a scalar document",
			data: "hello\n",
			want: []string{"f.yaml: not a Kubernetes object: got a string"},
		},
		{
			name: "a JSON array",
			data: "[1, 2]",
			want: []string{"f.yaml: not a Kubernetes object: got a list"},
		},
		{
			name: "JSON with trailing garbage",
			data: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}} garbage`,
			want: []string{"f.yaml: document 2: not a Kubernetes object: got a string"},
		},
		{
			name: "bad yaml",
			data: "apiVersion: v1\nkind: Pod\n  bad: [\n",
			want: []string{"f.yaml: "},
		},
		{
			name: "second document named",
			data: "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata: {nam: b}\n",
			want: []string{"f.yaml: document 2: metadata.nam: unknown field"},
		},
		{
			name: "pod with the wrong apiVersion",
			data: "apiVersion: v2\nkind: Pod\n",
			want: []string{`f.yaml: apiVersion: unsupported value "v2"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods, errs := Decode("f.yaml", []byte(tc.data))
			require.NotEmpty(t, errs)
			assert.Empty(t, pods)
			msg := errs[0].Error()
			for _, w := range tc.want {
				assert.Contains(t, msg, w)
			}
		})
	}
}

func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(good, []byte(twoPods), 0o600))
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: v1\nkind: Secret\n"), 0o600))

	pods, err := ReadFiles([]string{good, Stdin}, strings.NewReader(twoPods))
	require.NoError(t, err)
	assert.Len(t, pods, 4)
	assert.Equal(t, "<stdin>: document 2", pods[3].Origin)

	_, err = ReadFiles([]string{good, bad, filepath.Join(dir, "missing.yaml")}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), bad+`: kind: unsupported kind "Secret"`)
	assert.Contains(t, err.Error(), "missing.yaml: open")

	_, err = ReadFiles([]string{Stdin}, strings.NewReader("# nothing\n"))
	assert.ErrorIs(t, err, ErrNoPods)
	assert.EqualError(t, err, "<stdin>: no pods found")

	empty := filepath.Join(dir, "empty.yaml")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	_, err = ReadFiles([]string{empty}, nil)
	assert.EqualError(t, err, empty+": no pods found")

	_, err = ReadFiles([]string{dir}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), dir+": read "+dir+": is a directory")

	// An endless input (`-f /dev/zero`, a runaway pipe) is read only up to the bound.
	_, err = ReadFiles([]string{Stdin}, endless{})
	assert.EqualError(t, err, "<stdin>: larger than 64 MiB: not read (the most node reads of one manifest)")
	_, err = ReadFiles([]string{"/dev/zero"}, nil)
	assert.EqualError(t, err, "/dev/zero: larger than 64 MiB: not read (the most node reads of one manifest)")
	// One exactly at the bound is read whole.
	data, err := readLimited(io.LimitReader(endless{}, MaxFileSize))
	require.NoError(t, err)
	assert.Len(t, data, MaxFileSize)
}

// endless reads as an endless run of 'x'.
type endless struct{}

var xs = bytes.Repeat([]byte{'x'}, 64<<10)

func (endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], xs)
	}
	return n, nil
}
