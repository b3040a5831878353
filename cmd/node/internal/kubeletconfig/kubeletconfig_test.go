package kubeletconfig

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

// write writes files (name → content) under a new directory and returns it.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

// flags is c's settings as flag → value.
func flags(c *Config) map[string]string {
	m := map[string]string{}
	for _, s := range c.Settings {
		m[s.Flag] = s.Value
	}
	return m
}

func fields(us []Unused) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Field)
	}
	return out
}

// TestKubeadmsFile: the file kubeadm writes gives node its static pod path (relative to the file)
// and nothing else: its "0s" durations are kubelet's defaults, and the rest is reported unused.
func TestKubeadmsFile(t *testing.T) {
	dir := write(t, map[string]string{"config.yaml": header + `authentication:
  anonymous: {enabled: false}
  x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: systemd
clusterDNS: [10.96.0.10]
crashLoopBackOff: {}
fileCheckFrequency: 0s
httpCheckFrequency: 0s
nodeStatusUpdateFrequency: 0s
logging:
  flushFrequency: 0
  verbosity: 0
rotateCertificates: true
staticPodPath: manifests
`})
	c, err := Read(filepath.Join(dir, "config.yaml"), "")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"pod-manifest-path": filepath.Join(dir, "manifests")}, flags(c))
	assert.Equal(t, "--config "+filepath.Join(dir, "config.yaml"), c.Settings[0].From)
	assert.Equal(t, []string{"authentication", "authorization", "cgroupDriver", "clusterDNS", "logging.flushFrequency",
		"logging.verbosity", "rotateCertificates"}, fields(c.Unused))
	assert.Empty(t, c.Warnings)
	assert.Nil(t, c.Header)
}

// TestEveryFieldNodeUses: each field in Fields sets its flag, in the flag's syntax.
func TestEveryFieldNodeUses(t *testing.T) {
	dir := write(t, map[string]string{"c.json": `{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
"staticPodPath": "/etc/manifests", "staticPodURL": "http://config.example/pods", "staticPodURLHeader": {"Authorization": ["Bearer a,b"], "x-more": ["1", "2"]},
"fileCheckFrequency": "5s", "httpCheckFrequency": "1m", "address": "0.0.0.0", "readOnlyPort": 10266, "enableProfilingHandler": false,
"featureGates": {"H2CContainerProbe": true, "ContainerRestartRules": true}, "crashLoopBackOff": {"maxContainerRestartPeriod": "30s"},
"nodeStatusUpdateFrequency": "4s", "logging": {"format": "json"}}`})
	c, err := Read(filepath.Join(dir, "c.json"), "")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"pod-manifest-path":            "/etc/manifests",
		"manifest-url":                 "http://config.example/pods",
		"manifest-url-header":          "Authorization:Bearer a,b,x-more:1,x-more:2",
		"file-check-frequency":         "5s",
		"http-check-frequency":         "1m0s",
		"listen":                       "0.0.0.0:10266",
		"profiling":                    "false",
		"feature-gates":                "ContainerRestartRules=true,H2CContainerProbe=true",
		"crashloop-backoff-max":        "30s",
		"node-status-update-frequency": "4s",
		"log-format":                   "json",
	}, flags(c))
	assert.Equal(t, http.Header{"Authorization": {"Bearer a,b"}, "X-More": {"1", "2"}}, c.Header, "exact, commas and all")
	assert.Empty(t, c.Unused)
	assert.Empty(t, c.Warnings)
	for _, s := range c.Settings {
		assert.Contains(t, Fields, firstField(s.Field), "every setting comes from a field in Fields")
		assert.Equal(t, Fields[firstField(s.Field)], s.Flag)
	}
}

func firstField(f string) string {
	if f == "address, readOnlyPort" {
		return "readOnlyPort"
	}
	return f
}

// TestReadOnlyPort: address and readOnlyPort set --listen only with a port (loopback when no
// address); kubelet's port 0 (no read-only port) leaves node's API where it is, and says so.
func TestReadOnlyPort(t *testing.T) {
	for _, tc := range []struct {
		body   string
		listen string // "" for no setting
		unused []string
	}{
		{"readOnlyPort: 10255\n", "127.0.0.1:10255", nil},
		{"readOnlyPort: 10255\naddress: 10.0.0.7\n", "10.0.0.7:10255", nil},
		{"readOnlyPort: 10255\naddress: \"::1\"\n", "[::1]:10255", nil},
		{"address: 0.0.0.0\n", "", []string{"address"}},
		{"address: 0.0.0.0\nreadOnlyPort: 0\n", "", []string{"address", "readOnlyPort"}},
	} {
		dir := write(t, map[string]string{"c.yaml": header + tc.body})
		c, err := Read(filepath.Join(dir, "c.yaml"), "")
		require.NoError(t, err, tc.body)
		listen, ok := flags(c)["listen"]
		assert.Equal(t, tc.listen != "", ok, tc.body)
		assert.Equal(t, tc.listen, listen, tc.body)
		assert.Equal(t, tc.unused, fields(c.Unused), tc.body)
	}
}

// TestDropIns: the directory's *.conf files, in lexical walk order and subdirectories included,
// merge over the file as JSON merge patches; the last to set a field is named as its origin.
func TestDropIns(t *testing.T) {
	base := write(t, map[string]string{"config.yaml": header + `staticPodPath: /etc/manifests
fileCheckFrequency: 5s
featureGates: {H2CContainerProbe: true}
cgroupDriver: systemd
`})
	dir := write(t, map[string]string{
		"10-url.conf":         header + "staticPodURL: http://a/\nfeatureGates: {GRPCContainerProbeTLS: true}\n",
		"20-later.conf":       header + "staticPodURL: http://b/\nfileCheckFrequency: null\n",
		"sub/30-path.conf":    header + "staticPodPath: local\n",
		"README":              "not a configuration",
		"sub/40-notconf.yaml": header + "staticPodURL: http://never/\n",
	})
	c, err := Read(filepath.Join(base, "config.yaml"), dir)
	require.NoError(t, err)
	got := map[string]Setting{}
	for _, s := range c.Settings {
		got[s.Flag] = s
	}
	assert.Equal(t, "http://b/", got["manifest-url"].Value, "a later drop-in wins")
	assert.Equal(t, "--config-dir "+filepath.Join(dir, "20-later.conf"), got["manifest-url"].From)
	assert.Equal(t, filepath.Join(dir, "sub", "local"), got["pod-manifest-path"].Value,
		"a drop-in's relative path is its own directory's")
	assert.Equal(t, "GRPCContainerProbeTLS=true,H2CContainerProbe=true", got["feature-gates"].Value, "maps merge key by key")
	assert.NotContains(t, got, "file-check-frequency", "null removes a field")
	assert.Equal(t, []Unused{{"cgroupDriver", filepath.Join(base, "config.yaml")}}, c.Unused)
	assert.Equal(t, []string{
		filepath.Join(dir, "README") + ": skipped: only the drop-in directory's .conf files are read",
		filepath.Join(dir, "sub", "40-notconf.yaml") + ": skipped: only the drop-in directory's .conf files are read",
	}, c.Warnings)

	c, err = Read("", dir)
	require.NoError(t, err, "the drop-in directory alone, as kubelet's --config-dir")
	assert.Equal(t, "http://b/", flags(c)["manifest-url"])
}

// TestUnknownFields: kubelet reads a file leniently when strict decoding fails only for unknown
// fields; each is a warning naming the file and the field, and not also "unused".
func TestUnknownFields(t *testing.T) {
	dir := write(t, map[string]string{"c.yaml": header + "staticPodPth: /x\nlogging: {formatt: json, verbosity: 2}\nstaticPodPath: /etc/manifests\n"})
	file := filepath.Join(dir, "c.yaml")
	c, err := Read(file, "")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"pod-manifest-path": "/etc/manifests"}, flags(c))
	assert.Equal(t, []string{
		file + `: unknown field "logging.formatt": ignored, as kubelet ignores it (it reads a file leniently when only unknown fields fail strict decoding)`,
		file + `: unknown field "staticPodPth": ignored, as kubelet ignores it (it reads a file leniently when only unknown fields fail strict decoding)`,
	}, c.Warnings)
	assert.Equal(t, []string{"logging.verbosity"}, fields(c.Unused))
}

// TestBadFiles: every problem is an error naming the flag, the file and, where one is at fault,
// the field.
func TestBadFiles(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       string // after "--config <file>"
	}{
		{"empty", "  \n", ": the file is empty: a KubeletConfiguration needs apiVersion: kubelet.config.k8s.io/v1beta1 and kind: KubeletConfiguration"},
		{"a pod", "apiVersion: v1\nkind: Pod\n", `: apiVersion "v1", kind "Pod": want apiVersion: kubelet.config.k8s.io/v1beta1 and kind: KubeletConfiguration`},
		{"no kind", "apiVersion: kubelet.config.k8s.io/v1beta1\n", `: apiVersion "kubelet.config.k8s.io/v1beta1", kind "": want`},
		{"a list", "- a\n- b\n", ": not a KubeletConfiguration: want an object"},
		{"bad YAML", header + "staticPodPath: [\n", ": yaml: line 3: did not find expected node content"},
		{"bad duration", header + "fileCheckFrequency: 2 minutes\n", `: fileCheckFrequency: time: unknown unit " minutes" in duration "2 minutes"`},
		{"wrong type", header + "readOnlyPort: ten\n", ": readOnlyPort: json: cannot unmarshal string"},
		{"bad unused field", header + "syncFrequency: often\n", `: syncFrequency: time: invalid duration "often"`},
		{"negative", header + "httpCheckFrequency: -1s\n", ": httpCheckFrequency: -1s: must not be negative"},
		{"negative nested", header + "crashLoopBackOff: {maxContainerRestartPeriod: -5s}\n", ": crashLoopBackOff.maxContainerRestartPeriod: -5s: must not be negative"},
		{"port", header + "readOnlyPort: 70000\n", ": readOnlyPort: 70000: must be between 0 and 65535, inclusive"},
		{"header name", header + "staticPodURLHeader: {\" \": [x]}\n", ": staticPodURLHeader: a header name is empty"},
	} {
		dir := write(t, map[string]string{"c.yaml": tc.body})
		file := filepath.Join(dir, "c.yaml")
		_, err := Read(file, "")
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), "--config "+file+tc.want, tc.name)
	}

	none := filepath.Join(t.TempDir(), "none.yaml")
	_, err := Read(none, "")
	require.Error(t, err)
	assert.Equal(t, "--config "+none+": no such file or directory", err.Error())

	_, err = Read("", filepath.Join(t.TempDir(), "none"))
	require.Error(t, err)
	assert.Regexp(t, `^--config-dir: the drop-in directory: .*none: no such file or directory$`, err.Error())

	dir := write(t, map[string]string{"10-a.conf": header + "staticPodURL: http://a/\n", "20-b.conf": "kind: Pod\n"})
	_, err = Read("", dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--config-dir "+filepath.Join(dir, "20-b.conf")+`: apiVersion "", kind "Pod"`)

	dir = write(t, map[string]string{"10-a.conf": header + "fileCheckFrequency: soon\n"})
	_, err = Read("", dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--config-dir "+filepath.Join(dir, "10-a.conf")+`: fileCheckFrequency: time: invalid duration "soon"`,
		"a bad value is blamed on the drop-in that gave it")
}

// TestMergePatch: RFC 7386's examples.
func TestMergePatch(t *testing.T) {
	for _, tc := range []struct{ target, patch, want any }{
		{map[string]any{"a": "b"}, map[string]any{"a": "c"}, map[string]any{"a": "c"}},
		{map[string]any{"a": "b"}, map[string]any{"b": "c"}, map[string]any{"a": "b", "b": "c"}},
		{map[string]any{"a": "b"}, map[string]any{"a": nil}, map[string]any{}},
		{map[string]any{"a": "b", "b": "c"}, map[string]any{"a": nil}, map[string]any{"b": "c"}},
		{map[string]any{"a": []any{"b"}}, map[string]any{"a": "c"}, map[string]any{"a": "c"}},
		{map[string]any{"a": "c"}, map[string]any{"a": []any{"b"}}, map[string]any{"a": []any{"b"}}},
		{map[string]any{"a": map[string]any{"b": "c"}}, map[string]any{"a": map[string]any{"b": "d", "c": nil}}, map[string]any{"a": map[string]any{"b": "d"}}},
		{map[string]any{"a": []any{map[string]any{"b": "c"}}}, map[string]any{"a": []any{float64(1)}}, map[string]any{"a": []any{float64(1)}}},
		{[]any{"a", "b"}, []any{"c", "d"}, []any{"c", "d"}},
		{map[string]any{"a": "b"}, []any{"c"}, []any{"c"}},
		{map[string]any{"a": "foo"}, "bar", "bar"},
		{map[string]any{"e": nil}, map[string]any{"a": float64(1)}, map[string]any{"e": nil, "a": float64(1)}},
		{[]any{float64(1), float64(2)}, map[string]any{"a": "b", "c": nil}, map[string]any{"a": "b"}},
		{map[string]any{}, map[string]any{"a": map[string]any{"bb": map[string]any{"ccc": nil}}}, map[string]any{"a": map[string]any{"bb": map[string]any{}}}},
	} {
		assert.Equal(t, tc.want, mergePatch(tc.target, tc.patch), "%v + %v", tc.target, tc.patch)
	}
}

func TestNoFiles(t *testing.T) {
	c, err := Read("", "")
	require.NoError(t, err)
	assert.Equal(t, &Config{}, c)
}
