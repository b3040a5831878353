package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/features"
)

const kubeletConfigHeader = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

// writeKubeletConfig writes a KubeletConfiguration with body under a new directory.
func writeKubeletConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(p, []byte(kubeletConfigHeader+body), 0o644))
	return p
}

// parseRun parses `node run`'s args and applies their --config as runCommand does.
func parseRun(t *testing.T, args ...string) (runConfig, *kubeletConfig) {
	t.Helper()
	var cfg runConfig
	fs, _ := runFlags(&cfg, io.Discard)
	_, err := parseInterspersed(fs, args)
	require.NoError(t, err)
	kc, err := applyKubeletConfig(fs, &cfg, flagsSet(fs))
	require.NoError(t, err)
	return cfg, kc
}

// TestKubeletConfigUnderTheCommandLine: the file sets the flags the command line does not give; a
// flag given wins (--manifest-url-header's replace the file's headers, as kubelet's multimap flag
// does), and --feature-gates merges over featureGates gate by gate.
func TestKubeletConfigUnderTheCommandLine(t *testing.T) {
	path := writeKubeletConfig(t, `staticPodPath: manifests
staticPodURL: http://config.example/pods
staticPodURLHeader: {X-A: ["1,2"]}
fileCheckFrequency: 7s
httpCheckFrequency: 9s
readOnlyPort: 10266
enableProfilingHandler: true
featureGates: {H2CContainerProbe: true, ReduceDefaultCrashLoopBackOffDecay: true}
crashLoopBackOff: {maxContainerRestartPeriod: 30s}
nodeStatusUpdateFrequency: 4s
logging: {format: json}
`)
	cfg, kc := parseRun(t, "--config", path)
	assert.Equal(t, filepath.Join(filepath.Dir(path), "manifests"), cfg.manifestPath)
	assert.Equal(t, "http://config.example/pods", cfg.manifestURL)
	assert.Equal(t, http.Header{"X-A": {"1,2"}}, cfg.urlHeader.header)
	assert.Equal(t, 7*time.Second, cfg.fileCheck)
	assert.Equal(t, 9*time.Second, cfg.httpCheck)
	assert.Equal(t, "127.0.0.1:10266", cfg.listen)
	assert.True(t, cfg.profiling)
	assert.True(t, cfg.gates.Enabled(features.H2CContainerProbe))
	assert.Equal(t, 30*time.Second, cfg.backoffMax)
	assert.Equal(t, 4*time.Second, cfg.fleet.statusEvery)
	assert.Equal(t, "json", cfg.logFormat)
	assert.Empty(t, kc.kept)
	assert.Len(t, kc.applied, 11)

	cfg, kc = parseRun(t, "--config", path, "--file-check-frequency", "3s", "--listen", "127.0.0.1:9999",
		"--manifest-url-header", "X-B:3", "--feature-gates", "H2CContainerProbe=false,GRPCContainerProbeTLS=true", "--log-format", "text")
	assert.Equal(t, 3*time.Second, cfg.fileCheck, "the command line wins")
	assert.Equal(t, "127.0.0.1:9999", cfg.listen)
	assert.Equal(t, "text", cfg.logFormat)
	assert.Equal(t, http.Header{"X-B": {"3"}}, cfg.urlHeader.header, "the flag's headers replace the file's")
	assert.False(t, cfg.gates.Enabled(features.H2CContainerProbe), "a gate on the command line wins")
	assert.True(t, cfg.gates.Enabled(features.GRPCContainerProbeTLS))
	assert.True(t, cfg.gates.Enabled(features.ReduceDefaultCrashLoopBackOffDecay), "the file's other gates stay")
	assert.Equal(t, 9*time.Second, cfg.httpCheck, "what the command line does not give still comes from the file")
	assert.ElementsMatch(t, []string{"file-check-frequency", "listen", "manifest-url-header", "log-format"}, kc.kept)
}

// TestRunRefusesBadKubeletConfig: a bad file, or a value from it that node refuses, is a usage
// error (exit 2) before anything starts, naming the file and the field.
func TestRunRefusesBadKubeletConfig(t *testing.T) {
	for _, tc := range []struct {
		body  string
		extra []string
		want  string
	}{
		{"fileCheckFrequency: soon\n", nil, `config.yaml: fileCheckFrequency: time: invalid duration "soon"`},
		{"crashLoopBackOff: {maxContainerRestartPeriod: 10m}\n", nil,
			"--crashloop-backoff-max 10m0s: must be between 1s and 300s (kubelet's CrashLoopBackOff.MaxContainerRestartPeriod) (--crashloop-backoff-max is crashLoopBackOff.maxContainerRestartPeriod in --config "},
		{"crashLoopBackOff: {maxContainerRestartPeriod: 30s}\n", []string{"--feature-gates", "KubeletCrashLoopBackOffMax=false"},
			"--crashloop-backoff-max: FeatureGate KubeletCrashLoopBackOffMax not enabled, CrashLoopBackOff.MaxContainerRestartPeriod must not be set (--crashloop-backoff-max is crashLoopBackOff.maxContainerRestartPeriod in --config "},
		{"staticPodURL: ftp://config.example/pods\n", nil, `--manifest-url "ftp://config.example/pods": must be an absolute http or https URL (e.g. http://config.example/pods.yaml) (--manifest-url is staticPodURL in --config `},
		{"logging: {format: xml}\n", nil, `--log-format "xml": use text or json (--log-format is logging.format in --config `},
		{"featureGates: {InPlacePodVerticalScaling: true}\n", nil, "config.yaml: featureGates: unrecognized feature gate: InPlacePodVerticalScaling"},
		{"featureGates: {ContainerRestartRules: false}\n", []string{"--feature-gates", "RestartAllContainersOnContainerExits=true"},
			"--feature-gates over featureGates (--config "},
		{"readOnlyPort: 70000\n", nil, "config.yaml: readOnlyPort: 70000: must be between 0 and 65535, inclusive"},
		{"cgroupDriver: systemd\n", nil, "--config, --config-dir: the files set neither staticPodPath nor staticPodURL, and no -f, --pod-manifest-path or --manifest-url was given: node would run no pods"},
	} {
		path := writeKubeletConfig(t, tc.body)
		var stderr bytes.Buffer
		code := runCommand(append([]string{"--config", path, "--root-dir", t.TempDir()}, tc.extra...), nil, io.Discard, &stderr)
		assert.Equal(t, 2, code, tc.body)
		assert.Contains(t, stderr.String(), tc.want, tc.body)
	}

	var stderr bytes.Buffer
	missing := filepath.Join(t.TempDir(), "none.yaml")
	assert.Equal(t, 2, runCommand([]string{"--config", missing}, nil, io.Discard, &stderr))
	assert.Equal(t, "error: --config "+missing+": no such file or directory\n", stderr.String())

	// Settings a kubelet file carries for what node runs without (a URL, a fleet) pass the flags'
	// checks, unlike the same flags given alone on the command line: node goes on to read -f.
	stderr.Reset()
	code := runCommand([]string{"--config", writeKubeletConfig(t, "httpCheckFrequency: 20s\nnodeStatusUpdateFrequency: 10s\n"),
		"-f", missing, "--root-dir", t.TempDir()}, nil, io.Discard, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "none.yaml")
	assert.NotContains(t, stderr.String(), "needs")
}
