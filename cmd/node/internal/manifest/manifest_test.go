package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
			want: []string{"f.yaml: invalid YAML", `line 4: key "metadata" already set`},
		},
		{
			name: "a YAML error names the file's line, and the document as the others do",
			data: "# header\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\n# second\napiVersion: v1\nkind: Pod\nmetadata:\n\tname: b\n",
			want: []string{"f.yaml: document 2: invalid YAML: yaml: line 11: found character that cannot start any token"},
		},
		{
			name: "a YAML error after a comment header: one document, the file's line",
			data: "# header\n---\napiVersion: v1\nkind: Pod\nmetadata:\n\tname: t\n",
			want: []string{"f.yaml: invalid YAML: yaml: line 6: found character that cannot start any token"},
		},
		{
			name: "a comment header before the separator is not a document",
			data: "# Copyright\n# header\n---\napiVersion: v1\nkind: Pod\nmetadata: {nam: a}\n",
			want: []string{"f.yaml: metadata.nam: unknown field"},
		},
		{
			name: "a separator with more than a comment",
			data: "apiVersion: v1\nkind: Pod\n--- kind: Pod\n",
			want: []string{"f.yaml: line 3: invalid YAML document separator: kind: Pod"},
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
			want: []string{"f.yaml: spec.containers[0].livenessProbe.periodSeconds: Invalid value: got string, want an integer"},
		},
		{
			name: "a number where a list belongs",
			data: "apiVersion: v1\nkind: Pod\nspec: {containers: 5}\n",
			want: []string{"f.yaml: spec.containers: Invalid value: got number, want a list"},
		},
		{
			name: "wrong type of a named string type",
			data: "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, imagePullPolicy: [x]}]}\n",
			want: []string{"f.yaml: spec.containers[0].imagePullPolicy: Invalid value: got array, want v1.PullPolicy"},
		},
		{
			name: "wrong type in a later list item: its index",
			data: "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - {name: a, livenessProbe: {periodSeconds: 3}}\n  - {name: b}\n  - {name: c, livenessProbe: {periodSeconds: soon}}\n",
			want: []string{"f.yaml: spec.containers[2].livenessProbe.periodSeconds: Invalid value: got string, want an integer"},
		},
		{
			name: "an out-of-range number after valid ones on the same path",
			data: "apiVersion: v1\nkind: Pod\nspec:\n  initContainers: [{name: i, readinessProbe: {periodSeconds: 10}}]\n  containers:\n  - {name: a, readinessProbe: {periodSeconds: 10}}\n  - {name: b, readinessProbe: {periodSeconds: 99999999999}}\n",
			want: []string{"f.yaml: spec.containers[1].readinessProbe.periodSeconds: Invalid value: got number 99999999999, want an integer"},
		},
		{
			name: "a wrong list element: its index too",
			data: "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, command: [sleep], args: [a, b, 3]}]}\n",
			want: []string{"f.yaml: spec.containers[0].args[2]: Invalid value: got number, want a string"},
		},
		{
			name: "YAML's y is a boolean: the path without Go's embedded ProbeHandler, and a hint",
			data: "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, livenessProbe: {exec: {command: [test, -f, y]}}}]}\n",
			want: []string{"f.yaml: spec.containers[0].livenessProbe.exec.command[2]: Invalid value: got bool, want a string: " +
				"quote it (YAML reads an unquoted y, n, yes, no, on, off, true or false as a boolean)"},
		},
		{
			name: "a number where text belongs: the hint",
			data: "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, command: [sleep, 30]}]}\n",
			want: []string{"f.yaml: spec.containers[0].command[1]: Invalid value: got number, want a string: quote it (YAML reads an unquoted number as a number)"},
		},
		{
			name: "a wrong map value: its key",
			data: "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {app: web, tier: 2}}\n",
			want: []string{"f.yaml: metadata.labels[tier]: Invalid value: got number, want a string"},
		},
		{
			name: "lists within lists, inside a List",
			data: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  spec: {containers: [{name: a}]}\n- apiVersion: v1\n  kind: Pod\n  spec: {containers: [{name: a}, {name: b, ports: [{containerPort: 80}, {containerPort: http}]}]}\n",
			want: []string{"f.yaml: items[1].spec.containers[1].ports[1].containerPort: Invalid value: got string, want an integer"},
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

	// A directory: its .json, .yaml and .yml files in name order, as kubectl -f DIR (not -R).
	mdir := filepath.Join(dir, "manifests")
	require.NoError(t, os.MkdirAll(filepath.Join(mdir, "sub"), 0o755))
	onePod := func(name string) []byte {
		return []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec: {containers: [{name: c}]}\n")
	}
	for file, pod := range map[string]string{"b.yml": "b", "a.json": "a", "c.yaml": "c", "notes.txt": "txt", "sub/d.yaml": "sub"} {
		require.NoError(t, os.WriteFile(filepath.Join(mdir, file), onePod(pod), 0o600))
	}
	pods, err = ReadFiles([]string{mdir, good}, nil)
	require.NoError(t, err)
	var names []string
	for _, p := range pods {
		names = append(names, p.Pod.Name)
	}
	assert.Equal(t, []string{"a", "b", "c", "a", "b"}, names, "the directory's three, then good.yaml's two")
	assert.Equal(t, filepath.Join(mdir, "a.json"), pods[0].Origin)

	// A link to a directory is read as the directory (a mounted ConfigMap's ..data, say).
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(mdir, link))
	pods, err = ReadFiles([]string{link}, nil)
	require.NoError(t, err)
	require.Len(t, pods, 3)
	assert.Equal(t, filepath.Join(link, "a.json"), pods[0].Origin)

	// -R: the subdirectories' too, in name order; files and stdin pass through.
	files, err := ExpandDirs([]string{mdir, good, Stdin, link})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(mdir, "a.json"), filepath.Join(mdir, "b.yml"), filepath.Join(mdir, "c.yaml"),
		filepath.Join(mdir, "sub", "d.yaml"), good, Stdin, filepath.Join(link, "a.json"), filepath.Join(link, "b.yml"),
		filepath.Join(link, "c.yaml"), filepath.Join(link, "sub", "d.yaml")}, files)
	_, err = ExpandDirs([]string{t.TempDir(), t.TempDir()})
	assert.Len(t, strings.Split(err.Error(), "\n"), 2, "every directory's error")

	_, err = ReadFiles([]string{filepath.Join(mdir, "sub"), dir + "/none"}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "none: open") // not a directory: read as a file, and missing
	_, err = ReadFiles([]string{t.TempDir()}, nil)
	assert.ErrorContains(t, err, ": a directory with no .json, .yaml, .yml file (what -f reads in a directory, as kubectl)")
	require.NoError(t, os.WriteFile(filepath.Join(mdir, "c.yaml"), []byte("kind: Secret\n"), 0o600))
	_, err = ReadFiles([]string{mdir}, nil)
	assert.ErrorContains(t, err, filepath.Join(mdir, "c.yaml")+`: kind: unsupported kind "Secret"`, "a file of the directory is named")

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

// -f URL reads what a GET returns, as kubectl -f URL; a failed GET is an error naming the URL and
// why, and a server that never answers cannot hang it.
func TestReadFilesFromURLs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/pods.yaml":
			_, _ = io.WriteString(w, twoPods)
		case "/slow":
			<-r.Context().Done()
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	pods, err := ReadFiles([]string{srv.URL + "/pods.yaml"}, nil)
	require.NoError(t, err)
	require.Len(t, pods, 2)
	assert.Equal(t, srv.URL+"/pods.yaml: document 2", pods[1].Origin)

	_, err = ReadFiles([]string{srv.URL + "/gone.yaml"}, nil)
	assert.EqualError(t, err, srv.URL+"/gone.yaml: unable to read the URL: the server reported 404 Not Found")

	saved := URLTimeout
	URLTimeout = 100 * time.Millisecond
	defer func() { URLTimeout = saved }()
	_, err = ReadFiles([]string{srv.URL + "/slow"}, nil)
	assert.ErrorContains(t, err, srv.URL+"/slow: unable to read the URL: ")
	assert.ErrorContains(t, err, "Client.Timeout exceeded")

	files, err := ExpandDirs([]string{srv.URL + "/pods.yaml"})
	require.NoError(t, err)
	assert.Equal(t, []string{srv.URL + "/pods.yaml"}, files, "a URL is not a directory")
}

// Every document's YAML error is reported, each with its lines in the file.
func TestDecodeReportsEveryYAMLError(t *testing.T) {
	data := "apiVersion: v1\nkind: Pod\nmetadata:\n\tname: a\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\n" +
		"---\napiVersion: v1\nkind: Pod\nkind: Pod\n"
	_, errs := Decode("f.yaml", []byte(data))
	require.Len(t, errs, 2)
	assert.Equal(t, "f.yaml: document 1: invalid YAML: yaml: line 4: found character that cannot start any token", errs[0].Error())
	assert.Equal(t, "f.yaml: document 3: invalid YAML: yaml: unmarshal errors:\n  line 12: key \"kind\" already set in map", errs[1].Error())
}

// jsonPath drops Go's embedded struct names from a decoder's path; the hint is for text alone.
func TestJSONPathAndHints(t *testing.T) {
	for in, want := range map[string]string{
		"spec.containers.livenessProbe.ProbeHandler.exec.command":       "spec.containers.livenessProbe.exec.command",
		"items.spec.initContainers.startupProbe.ProbeHandler.grpc.port": "items.spec.initContainers.startupProbe.grpc.port",
		"spec.containers": "spec.containers",
		"":                "",
	} {
		assert.Equal(t, want, jsonPath(in), in)
	}
	_, errs := Decode("f.yaml", []byte("apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, imagePullPolicy: true}]}\n"))
	require.Len(t, errs, 1)
	assert.Equal(t, "f.yaml: spec.containers[0].imagePullPolicy: Invalid value: got bool, want v1.PullPolicy", errs[0].Error(),
		"no hint where the wanted type is not plain text")
}

// indexPath puts list indices and map keys into a decoder's path, and leaves a path it cannot place
// as it is.
func TestIndexPath(t *testing.T) {
	for name, tc := range map[string]struct {
		doc, path, got, want string
	}{
		"no lists on the way":          {`{"a":{"b":"x"}}`, "a.b", "string", "a.b"},
		"the first of the kind":        {`{"a":[{"b":1},{"b":"x"},{"b":"y"}]}`, "a.b", "string", "a[1].b"},
		"a number by its literal":      {`{"a":[{"b":1},{"b":2}]}`, "a.b", "number 2", "a[1].b"},
		"a list's element":             {`{"a":["x",["y"]]}`, "a", "array", "a[1]"},
		"the whole list's value":       {`{"a":[{"b":[1]}]}`, "a.b", "array", "a[0].b"},
		"a map's value by key order":   {`{"m":{"z":1,"y":2,"x":"s"}}`, "m", "number", "m[y]"},
		"one level into a map":         {`{"m":{"a":{"b":{}}}}`, "m", "object", "m[a]"},
		"the field's own list":         {`{"a":[{"b":["x"]}]}`, "a.b", "array", "a[0].b"},
		"an object where none belongs": {`{"a":[{"b":{}}]}`, "a.b", "object", "a[0].b"},
		"a boolean":                    {`{"a":[{"b":"x"},{"b":true}]}`, "a.b", "bool", "a[1].b"},
		"no value of that kind":        {`{"a":[{"b":1}]}`, "a.b", "string", "a.b"},
		"no such field":                {`{"a":[{"b":1}]}`, "a.c", "number", "a.c"},
		"not JSON":                     {`{"a":`, "a", "number", "a"},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, indexPath([]byte(tc.doc), tc.path, tc.got))
		})
	}
}

// splitDocuments splits YAML as kubectl's reader does (utilyaml.YAMLReader), on random files of
// separators, comments and content: the same documents with more than comments (kubectl's reader
// keeps a `---` line that opens a document in it, ours drops it), and an error for the same files.
func TestSplitDocumentsIsKubectls(t *testing.T) {
	lines := []string{"---", "--- # c", "---\r", "---x", "----", "# comment", "a: 1", "", "  - b", " ---", "b: |", "  ---"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		var sb strings.Builder
		for range rng.IntN(12) {
			sb.WriteString(lines[rng.IntN(len(lines))])
			sb.WriteString("\n")
		}
		if rng.IntN(4) == 0 { // no final newline
			sb.WriteString(lines[rng.IntN(len(lines))])
		}
		data := sb.String()
		if t := strings.TrimSpace(data); t != "" && (t[0] == '{' || t[0] == '[') {
			continue
		}

		var want []string
		reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(data)))
		var wantErr error
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				wantErr = err
				break
			}
			if d := strings.TrimPrefix(string(doc), firstLineIfSeparator(doc)); !isBlankYAML([]byte(d)) {
				want = append(want, d)
			}
		}
		for i, d := range want { // kubectl's line reader ends a file's last line with "\n"; YAML reads it alike
			want[i] = strings.TrimSuffix(d, "\n")
		}
		docs, err := splitDocuments([]byte(data))
		if wantErr != nil {
			require.Error(t, err, "%q", data)
			continue
		}
		require.NoError(t, err, "%q", data)
		var got []string
		for _, d := range docs {
			got = append(got, strings.TrimSuffix(string(d.data), "\n"))
		}
		require.Equal(t, want, got, "%q", data)
	}
}

// firstLineIfSeparator is doc's first line if it is a `---` separator (kubectl's reader keeps the
// one that opens a document), else "".
func firstLineIfSeparator(doc []byte) string {
	line, _, _ := bytes.Cut(doc, []byte("\n"))
	if bytes.HasPrefix(line, []byte("---")) {
		return string(line) + "\n"
	}
	return ""
}
