package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/probeactor/probeactor/cmd/node/internal/demo"
	"github.com/probeactor/probeactor/cmd/node/internal/proc"
	"github.com/probeactor/probeactor/cmd/node/internal/rootlock"
	"github.com/probeactor/probeactor/cmd/node/internal/server"
	"github.com/probeactor/probeactor/features"
	"github.com/probeactor/probeactor/internal/fleettest"
)

func TestMain(m *testing.M) {
	proc.RunHelper(os.Args)                         // the test binary doubles as the container shim and the exec-probe guard
	if len(os.Args) > 1 && os.Args[1] == demo.Arg { // and as the demo's containers (restart tests)
		os.Exit(demo.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	// Fleet and cluster process tests run aggregators and nodes as children of this binary.
	fleettest.Register("node", func(args []string) int {
		return dispatch(append([]string{"run"}, args...), os.Stdin, os.Stdout, os.Stderr)
	})
	fleettest.Register(fleettest.AggregatorRole, func(args []string) int {
		return dispatch(append([]string{"fleet"}, args...), os.Stdin, os.Stdout, os.Stderr)
	})
	fleettest.Main()
	goleak.VerifyTestMain(m)
}

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
	pods, err := loadPods([]string{good}, nil, &stderr, time.Now(), features.Gates{})
	require.NoError(t, err, stderr.String())
	require.Len(t, pods, 1)
	p := pods[0]
	assert.Equal(t, "default", p.Namespace)
	assert.NotEmpty(t, p.UID)
	assert.Equal(t, int32(10), p.Spec.Containers[0].LivenessProbe.PeriodSeconds, "probe defaults applied")

	// The same pod twice is a duplicate, reported with both origins.
	stderr.Reset()
	_, err = loadPods([]string{good, good}, nil, &stderr, time.Now(), features.Gates{})
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
	_, err = loadPods([]string{twins}, nil, &stderr, time.Now(), features.Gates{})
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

// TestValidateTakesFeatureGates: `node validate` (and `node explain`) validates under the gates `node run` would get, so
// a field whose gate is off is refused with its path, and accepted once the gate is on; a bad
// --feature-gates is a usage error naming the gate.
func TestValidateTakesFeatureGates(t *testing.T) {
	manifest := "apiVersion: v1\nkind: Pod\nmetadata: {name: h2c}\nspec: {containers: [{name: c, args: [sleep, \"9\"], " +
		"readinessProbe: {httpGet: {port: 8080, protocol: HTTP2}}}]}\n"
	var out, errOut bytes.Buffer
	assert.Equal(t, 1, dispatch([]string{"validate", "-f", "-"}, strings.NewReader(manifest), &out, &errOut))
	assert.Equal(t, "error: <stdin>: spec.containers[0].readinessProbe.httpGet.protocol: Forbidden: may not be set when the H2CContainerProbe feature gate is disabled\n",
		errOut.String())
	out.Reset()
	errOut.Reset()
	assert.Equal(t, 0, dispatch([]string{"validate", "--feature-gates", "H2CContainerProbe=true", "-f", "-"}, strings.NewReader(manifest), &out, &errOut), errOut.String())
	assert.Equal(t, "valid: 1 pod(s): default/h2c\n", out.String())
	errOut.Reset()
	assert.Equal(t, 2, dispatch([]string{"validate", "--feature-gates", "h2c=true", "-f", "-"}, strings.NewReader(manifest), &out, &errOut))
	assert.Contains(t, errOut.String(), "unrecognized feature gate: h2c")
	assert.Contains(t, errOut.String(), "H2CContainerProbe=true|false (ALPHA - default=false)", "the usage lists the gates")

	// node explain validates the same way.
	errOut.Reset()
	assert.Equal(t, 1, dispatch([]string{"explain", "-f", "-"}, strings.NewReader(manifest), &out, &errOut))
	assert.Contains(t, errOut.String(), "httpGet.protocol: Forbidden: may not be set when the H2CContainerProbe feature gate is disabled")
	errOut.Reset()
	assert.Equal(t, 0, dispatch([]string{"explain", "--feature-gates", "H2CContainerProbe=true", "-f", "-"}, strings.NewReader(manifest), &out, &errOut), errOut.String())
}

// -f DIR reads a directory's manifests, as kubectl -f DIR; with -R (--recursive) its subdirectories
// too, for run, validate and explain alike.
func TestManifestDirectories(t *testing.T) {
	dir := t.TempDir()
	pod := func(name string) []byte {
		return []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec: {containers: [{name: c, args: [sleep, \"9\"]}]}\n")
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "m", "sub", "deeper"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "none"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m", "top.yaml"), pod("top"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m", "sub", "mid.yml"), pod("mid"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m", "sub", "deeper", "low.json"), []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"low"},"spec":{"containers":[{"name":"c","args":["sleep","9"]}]}}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m", "sub", "deeper", "notes.md"), []byte("# not a manifest\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "none", "readme.txt"), []byte("x"), 0o600))
	m, none := filepath.Join(dir, "m"), filepath.Join(dir, "none")

	for _, tc := range []struct {
		args []string
		code int
		out  string // stdout, or what stderr contains
	}{
		{[]string{"validate", "-f", m}, 0, "valid: 1 pod(s): default/top\n"},
		{[]string{"validate", "-R", "-f", m}, 0, "valid: 3 pod(s): default/low, default/mid, default/top\n"},
		{[]string{"validate", "-f", m, "--recursive"}, 0, "valid: 3 pod(s): default/low, default/mid, default/top\n"},
		{[]string{"validate", "-f", none}, 1, none + ": a directory with no .json, .yaml, .yml file (what -f reads in a directory, as kubectl)"},
		{[]string{"validate", "-R", "-f", none}, 1, none + ": a directory with no .json, .yaml, .yml file in it or its subdirectories"},
		{[]string{"explain", "-R", "-f", none}, 1, none + ": a directory with no"},
		{[]string{"run", "-R", "-f", none}, 1, "node: nothing was started"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			assert.Equal(t, tc.code, dispatch(tc.args, strings.NewReader(""), &out, &errOut), errOut.String())
			if tc.code == 0 {
				assert.Equal(t, tc.out, out.String())
			} else {
				assert.Contains(t, errOut.String(), tc.out)
				assert.Empty(t, out.String())
			}
		})
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"explain", "-R", "-f", m}, strings.NewReader(""), &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "Pod default/low")
}

// TestCrashLoopBackOff is kubelet 1.37.2's newCrashLoopBackOff with node's flags.
func TestCrashLoopBackOff(t *testing.T) {
	for _, tc := range []struct {
		gates       string
		initial     time.Duration
		initialSet  bool
		max         time.Duration
		maxSet      bool
		wantInitial time.Duration
		wantMax     time.Duration
		wantErr     string
	}{
		{gates: "", max: 300 * time.Second, wantInitial: 10 * time.Second, wantMax: 300 * time.Second},
		{gates: "", max: 2 * time.Second, maxSet: true, wantInitial: 2 * time.Second, wantMax: 2 * time.Second},
		{gates: "", initial: time.Second, initialSet: true, max: 4 * time.Second, maxSet: true, wantInitial: time.Second, wantMax: 4 * time.Second},
		{gates: "", max: 999 * time.Millisecond, maxSet: true, wantErr: "must be between 1s and 300s"},
		{gates: "ReduceDefaultCrashLoopBackOffDecay=true", max: 300 * time.Second, wantInitial: time.Second, wantMax: 300 * time.Second},
		{gates: "ReduceDefaultCrashLoopBackOffDecay=true,KubeletCrashLoopBackOffMax=false", max: 300 * time.Second, wantInitial: time.Second, wantMax: 60 * time.Second},
		{gates: "KubeletCrashLoopBackOffMax=false", max: 300 * time.Second, wantInitial: 10 * time.Second, wantMax: 300 * time.Second},
		{gates: "KubeletCrashLoopBackOffMax=false", max: 300 * time.Second, maxSet: true, wantErr: "FeatureGate KubeletCrashLoopBackOffMax not enabled"},
		{gates: "", initial: 0, initialSet: true, max: 300 * time.Second, wantErr: "--crashloop-backoff-initial 0s: must be a positive duration"},
	} {
		t.Run(fmt.Sprintf("%s/%v/%v", tc.gates, tc.initial, tc.max), func(t *testing.T) {
			initial, maxBackoff, err := crashLoopBackOff(features.MustParse(tc.gates), tc.initial, tc.initialSet, tc.max, tc.maxSet)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []time.Duration{tc.wantInitial, tc.wantMax}, []time.Duration{initial, maxBackoff})
		})
	}
}

// Bad input to `node run` is a clear error naming the flag or file, and nothing starts: no event
// (every container start prints one) reaches stdout.
func TestRunBadInputFailsBeforeStarting(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(good, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, args: [sleep, \"30\"]}]}\n"), 0o600))
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: 5}\n"), 0o600))
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	root := filepath.Join(dir, "root")
	held := filepath.Join(dir, "held") // a live node's --root-dir
	require.NoError(t, os.Mkdir(held, 0o755))
	lock, err := rootlock.Acquire(held)
	require.NoError(t, err)
	defer lock.Release()

	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"listen unparseable", []string{"-f", good, "--listen", "nonsense"}, 2, `--listen "nonsense": address nonsense: missing port`},
		{"listen port unknown", []string{"-f", good, "--listen", "127.0.0.1:http-ish"}, 2, `--listen "127.0.0.1:http-ish": lookup tcp/http-ish`},
		{"listen port out of range", []string{"-f", good, "--listen", "127.0.0.1:70000"}, 2, `--listen "127.0.0.1:70000": address 70000: invalid port`},
		{"root dir empty", []string{"-f", good, "--root-dir", ""}, 2, "--root-dir is empty"},
		{"listen in use", []string{"-f", good, "--listen", busy.Addr().String(), "--root-dir", root}, 1, "--listen " + busy.Addr().String() + ": listen tcp"},
		{"reattach timeout negative", []string{"-f", good, "--reattach-timeout", "-1s"}, 2, "--reattach-timeout -1s: must be 0 (containers die with node) or a positive duration"},
		{"reattach timeout unparseable", []string{"-f", good, "--reattach-timeout", "soon"}, 2, `invalid value "soon" for flag -reattach-timeout`},
		{"root dir held by a live node", []string{"-f", good, "--listen", "127.0.0.1:0", "--root-dir", held}, 1,
			fmt.Sprintf(`--root-dir %q: another node (pid %d) holds it`, held, os.Getpid())},
		{"root dir is a file", []string{"-f", good, "--listen", "127.0.0.1:0", "--root-dir", good}, 1, `--root-dir "` + good + `": cannot create the log directory`},
		{"log level", []string{"-f", good, "--log-level", "bogus"}, 2, `--log-level "bogus": use trace, debug, info, warn or error`},
		{"log format", []string{"-f", good, "--log-format", "xml"}, 2, `--log-format "xml": use text or json`},
		{"backoff", []string{"-f", good, "--crashloop-backoff-initial", "-1s"}, 2, "--crashloop-backoff-initial -1s: must be a positive duration"},
		{"backoff max over kubelet's", []string{"-f", good, "--crashloop-backoff-max", "10m"}, 2, "--crashloop-backoff-max 10m0s: must be between 1s and 300s"},
		{"backoff max without its gate", []string{"-f", good, "--crashloop-backoff-max", "1m", "--feature-gates", "KubeletCrashLoopBackOffMax=false"}, 2,
			"--crashloop-backoff-max: FeatureGate KubeletCrashLoopBackOffMax not enabled, CrashLoopBackOff.MaxContainerRestartPeriod must not be set"},
		{"unknown feature gate", []string{"-f", good, "--feature-gates", "H2CContainerProbe=true,Bogus=true"}, 2,
			`invalid value "H2CContainerProbe=true,Bogus=true" for flag -feature-gates: unrecognized feature gate: Bogus`},
		{"feature gate value", []string{"-f", good, "--feature-gates=H2CContainerProbe=sure"}, 2,
			`invalid value of H2CContainerProbe=sure, err: strconv.ParseBool: parsing "sure": invalid syntax`},
		{"feature gate dependency", []string{"-f", good, "--feature-gates=ContainerRestartRules=false"}, 2,
			"RestartAllContainersOnContainerExits is enabled, but depends on features that are disabled: [ContainerRestartRules]"},
		{"missing file", []string{"-f", filepath.Join(dir, "missing.yaml")}, 1, "missing.yaml: open "},
		{"directory as -f: its manifests", []string{"-f", dir}, 1, bad + ": spec.containers: Invalid value: got number, want a list"},
		{"directory as -f without one", []string{"-f", held}, 1, held + ": a directory with no .json, .yaml, .yml file"},
		{"invalid manifest", []string{"-f", bad}, 1, bad + ": spec.containers: Invalid value: got number, want a list"},
		{"stray argument", []string{good}, 2, "unexpected arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := dispatch(append([]string{"run"}, tc.args...), strings.NewReader(""), &out, &errOut)
			assert.Equal(t, tc.code, code, errOut.String())
			assert.Contains(t, errOut.String(), tc.want)
			assert.Empty(t, out.String(), "no event: nothing was started")
		})
	}
}

// `node get pods` / `node logs` against no node, or one that never answers, fail with a clear
// error and a non-zero exit instead of hanging.
func TestClientWithoutServer(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := closed.Addr().String()
	require.NoError(t, closed.Close())

	mute, err := net.Listen("tcp", "127.0.0.1:0") // accepts into its backlog, never answers
	require.NoError(t, err)
	defer mute.Close()
	saved := apiClient
	apiClient = &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 200 * time.Millisecond}}
	defer func() { apiClient.CloseIdleConnections(); apiClient = saved }()

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"get pods, refused", []string{"get", "pods", "--server", refused}, "cannot reach node at http://" + refused + " (is `node run` running? see --server)"},
		{"logs, refused", []string{"logs", "web", "--server", refused}, "cannot reach node at http://" + refused},
		{"get nodes, refused", []string{"get", "nodes", "--server", refused}, "cannot reach a fleet aggregator or node at http://" + refused + " (is `node fleet` or `node run` running? see --server)"},
		{"get pods, never answers", []string{"get", "pods", "--server", mute.Addr().String()}, "timeout awaiting response headers"},
		{"logs -f, never answers", []string{"logs", "web", "-c", "app", "-f", "--server", mute.Addr().String()}, "timeout awaiting response headers"},
		{"unparseable server", []string{"get", "pods", "--server", "ht tp://x"}, "--server ht tp://x: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			assert.Equal(t, 1, dispatch(tc.args, nil, &out, &errOut))
			assert.Contains(t, errOut.String(), tc.want)
		})
	}
}

// Usage errors of the client commands exit 2 with a message, before any request.
func TestClientUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logs"}, "expected POD [CONTAINER] or -l SELECTOR, got 0 arguments"},
		{[]string{"logs", "a", "b", "c"}, "expected POD [CONTAINER] or -l SELECTOR, got 3 arguments"},
		{[]string{"logs", "a", "-l", "app=web"}, "only a selector (-l) or a POD name is allowed"},
		{[]string{"logs", "-l", "app in ("}, `-l "app in (": `},
		{[]string{"logs", "a", "--max-log-requests", "0"}, "--max-log-requests 0: must be at least 1"},
		{[]string{"logs", "a", "b", "-c", "b"}, "only one of -c or an inline [CONTAINER] arg is allowed"},
		{[]string{"logs", "a", "--all-containers", "-c", "b"}, "--all-containers=true should not be specified with container name b"},
		{[]string{"logs", "a", "--tail", "-5"}, "--tail -5: use a number of lines, or -1 for all"},
		{[]string{"logs", "a", "--limit-bytes", "-1"}, "--limit-bytes -1: must be greater than 0"},
		{[]string{"logs", "a", "--since", "-1s"}, "--since -1s: must be greater than 0"},
		{[]string{"logs", "a", "--since", "1m", "--since-time", "2026-01-02T15:04:05Z"}, "at most one of --since-time or --since may be given"},
		{[]string{"logs", "a", "--since-time", "yesterday"}, `--since-time "yesterday": want an RFC 3339 time`},
		{[]string{"logs", "a", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"get", "pods", "-o", "xml", "--server", "127.0.0.1:1"}, `-o "xml": use json, yaml, name, wide, jsonpath=TEMPLATE or custom-columns=HEADER:PATH,...`},
		{[]string{"get", "nodes", "-o", "wide", "--server", "127.0.0.1:1"}, `-o "wide": only for pods (nodes: json, yaml, name, jsonpath= or custom-columns=)`},
		{[]string{"get", "deployments"}, "only `node get pods [NAME...]` and `node get nodes [NAME...]` are supported"},
		{[]string{"get"}, "only `node get pods [NAME...]` and `node get nodes [NAME...]` are supported"},
		{[]string{"get", "pods", "-l", "app in (a", "--server", "127.0.0.1:1"}, `-l "app in (a": `},
		{[]string{"get", "pods", "web", "-l", "app=web"}, "selectors and the all flag cannot be used when passing resource/name arguments"},
		{[]string{"get", "pods", "web", "-A"}, "a resource cannot be retrieved by name across all namespaces"},
		{[]string{"get", "pods", "web", "--field-selector", "status.phase=Running"}, "selectors and the all flag cannot be used when passing resource/name arguments"},
		{[]string{"get", "pods", "--field-selector", "status.hostIP=1.2.3.4"}, `--field-selector "status.hostIP=1.2.3.4": field label not supported: status.hostIP`},
		{[]string{"get", "nodes", "--field-selector", "status.phase=Running"}, `--field-selector "status.phase=Running": field label not supported: status.phase`},
		{[]string{"get", "pods", "--field-selector", "status.phase"}, `--field-selector "status.phase": invalid selector: 'status.phase'; can't understand 'status.phase'`},
		{[]string{"get", "pods", "-o", "jsonpath={.items[*}"}, "error parsing jsonpath {.items[*}, "},
		{[]string{"get", "pods", "-o", "custom-columns=NAME"}, "unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>"},
		{[]string{"get", "pods", "-o", "custom-columns="}, "custom-columns format specified but no custom columns given"},
		{[]string{"get", "pods", "-w", "-o", "jsonpath={.items}"}, "-w prints rows (the table, -o wide or -o name), not -o jsonpath"},
		{[]string{"get", "pods", "--sort-by", "{.metadata.name"}, `--sort-by "{.metadata.name": unexpected path string`},
		{[]string{"get", "pods", "-o", "name", "--show-labels"}, "--show-labels: only for the table (-o wide or no -o), not -o name"},
	} {
		var out, errOut bytes.Buffer
		code := dispatch(tc.args, nil, &out, &errOut)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errOut.String())
		assert.Contains(t, errOut.String(), tc.want, "%v", tc.args)
	}
}

// A node's Warning header (a cluster member that runs no pods says why) is printed as kubectl
// prints the API server's.
func TestGetPodsPrintsTheWarning(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Add("Warning", server.WarningHeader("QuorumLost: this member is in contact with 1 of the 3 cluster members (a quorum needs 2)"))
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","items":[]}`)
	}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 0, dispatch([]string{"get", "pods", "--server", srv.URL}, nil, &stdout, &stderr))
	assert.Equal(t, "Warning: QuorumLost: this member is in contact with 1 of the 3 cluster members (a quorum needs 2)\nNo resources found\n", stderr.String())
}
