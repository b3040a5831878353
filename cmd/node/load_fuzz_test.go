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

	"github.com/probeactor/probeactor/features"
)

// seedManifests are the fuzz seeds: the real manifests in testdata/manifests plus small inputs at
// the edges of the decoder (empty, scalars, lists, JSON streams, type errors).
func seedManifests(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{
		"empty":          nil,
		"comment":        []byte("# nothing\n---\n"),
		"scalar":         []byte("hello"),
		"json array":     []byte("[1, {\"kind\": \"Pod\"}]"),
		"json garbage":   []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}} garbage`),
		"list of junk":   []byte("apiVersion: v1\nkind: List\nitems: [1, null, {kind: Pod}, {apiVersion: v1, kind: List, items: []}]\n"),
		"wrong types":    []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: {a: 1}}\nspec: {containers: 5}\n"),
		"duplicate keys": []byte("apiVersion: v1\nkind: Pod\nkind: Pod\n"),
		"anchors":        []byte("apiVersion: v1\nkind: Pod\nmetadata: &m {name: a}\nspec: {containers: [{name: c, args: [x], env: [{name: A, value: *m}]}]}\n"),
	}
	files, err := filepath.Glob(filepath.Join("testdata", "manifests", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		seeds[filepath.Base(f)] = data
	}
	return seeds
}

// FuzzLoadPods feeds arbitrary bytes through manifest decoding, defaulting and validation (what
// `node run -f` and `node validate -f` do before anything starts), under kubelet 1.37.2's default
// feature gates, with the alpha probe gates on, and with the restart-rule gates off: it never panics, an input is
// either a non-empty set of named, defaulted pods with nothing printed, or errInvalid with every
// printed error naming the file. The seeds run as ordinary tests in `make test`;
// `go test -fuzz FuzzLoadPods ./cmd/node` explores further.
func FuzzLoadPods(f *testing.F) {
	for _, data := range seedManifests(f) {
		f.Add(data)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	gateSets := []features.Gates{{}, features.MustParse("H2CContainerProbe=true,GRPCContainerProbeTLS=true"),
		features.MustParse("ContainerRestartRules=false,RestartAllContainersOnContainerExits=false")}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, gates := range gateSets {
			var stderr bytes.Buffer
			pods, err := loadPods([]string{"-"}, bytes.NewReader(data), &stderr, now, gates)
			if err != nil {
				require.ErrorIs(t, err, errInvalid)
				require.Empty(t, pods)
				out := strings.TrimSuffix(stderr.String(), "\n")
				require.NotEmpty(t, out, "an invalid input prints its errors")
				for _, line := range strings.Split(out, "\n") {
					require.True(t, strings.HasPrefix(line, "error: <stdin>"), "every error names the file: %q", line)
				}
				continue
			}
			require.Empty(t, stderr.String())
			require.NotEmpty(t, pods)
			for _, p := range pods {
				require.NotEmpty(t, p.Name)
				require.NotEmpty(t, p.Namespace)
				require.NotEmpty(t, p.UID)
				require.NotEmpty(t, p.Spec.Containers)
				require.Equal(t, now, p.CreationTimestamp.Time)
			}
		}
	})
}

// The real manifests in testdata load as documented: the valid ones entirely, the invalid one with
// every problem reported.
func TestSeedManifests(t *testing.T) {
	dir := filepath.Join("testdata", "manifests")
	var stderr bytes.Buffer
	pods, err := loadPods([]string{filepath.Join(dir, "exec-liveness.yaml"), filepath.Join(dir, "http-tcp-grpc.yaml"), filepath.Join(dir, "list.json"),
		filepath.Join(dir, "restart-rules.yaml")}, nil, &stderr, time.Now(), features.Gates{})
	require.NoError(t, err, stderr.String())
	assert.Len(t, pods, 6)

	stderr.Reset()
	_, err = loadPods([]string{filepath.Join(dir, "invalid.yaml")}, nil, &stderr, time.Now(), features.Gates{})
	require.ErrorIs(t, err, errInvalid)
	assert.Contains(t, stderr.String(), `invalid.yaml: document 2: kind: unsupported kind "Deployment"`)

	// Gated fields: accepted with their gates on, refused (naming field and gate) with them off.
	alpha := filepath.Join(dir, "h2c-grpc-tls.yaml")
	stderr.Reset()
	pods, err = loadPods([]string{alpha}, nil, &stderr, time.Now(), features.MustParse("H2CContainerProbe=true,GRPCContainerProbeTLS=true"))
	require.NoError(t, err, stderr.String())
	require.Len(t, pods, 1)
	stderr.Reset()
	_, err = loadPods([]string{alpha}, nil, &stderr, time.Now(), features.Gates{})
	require.ErrorIs(t, err, errInvalid)
	assert.Equal(t, "error: "+alpha+": spec.containers[0].livenessProbe.grpc.mode: Forbidden: may not be set when the GRPCContainerProbeTLS feature gate is disabled\n"+
		"error: "+alpha+": spec.containers[0].readinessProbe.httpGet.protocol: Forbidden: may not be set when the H2CContainerProbe feature gate is disabled\n",
		stderr.String())
	stderr.Reset()
	_, err = loadPods([]string{filepath.Join(dir, "restart-rules.yaml")}, nil, &stderr, time.Now(),
		features.MustParse("RestartAllContainersOnContainerExits=false"))
	require.ErrorIs(t, err, errInvalid)
	assert.Contains(t, stderr.String(), `spec.containers[1].restartPolicyRules[0].action: Unsupported value: "RestartAllContainers": supported values: "Restart"`)
}
