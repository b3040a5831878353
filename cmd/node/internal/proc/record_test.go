package proc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/messages"
)

// snapshot and restore are a pair: a podState written to its record and read back (through
// JSON, as the next node reads it) decides and reports exactly as before — apart from what an
// adopted instance shows at once (the readiness and startup it was last seen with).
func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	side := sidecar("side")
	side.StartupProbe = &v1.Probe{}
	cases := map[string]struct {
		pod    *v1.Pod
		states map[string]string
		setup  func(p *podState)
	}{
		"never started":      {pod: testPod(v1.RestartPolicyAlways, nil, "app")},
		"running":            {pod: testPod(v1.RestartPolicyAlways, nil, "app"), states: map[string]string{"app": "running"}},
		"in back-off":        {pod: testPod(v1.RestartPolicyAlways, nil, "app"), states: map[string]string{"app": "exited 1 backoff"}},
		"killed for restart": {pod: testPod(v1.RestartPolicyNever, nil, "app"), states: map[string]string{"app": "running killed"}},
		"init done, sidecar unstarted": {
			pod:    testPod(v1.RestartPolicyNever, []v1.Container{side, {Name: "init"}}, "app"),
			states: map[string]string{"side": "running unstarted", "init": "exited 0"},
		},
		"init failed": {
			pod:    testPod(v1.RestartPolicyNever, []v1.Container{{Name: "init"}}, "app"),
			states: map[string]string{"init": "exited 2"},
			setup:  func(p *podState) { p.initFailed = true },
		},
		"restarting all, a container still running": {
			pod:    restartAllPod(v1.RestartPolicyNever),
			states: map[string]string{"init": "exited 0", "app": "exited 42", "other": "running"},
			setup:  func(p *podState) { p.restartingAll = true },
		},
		"restarted all, waiting to start again": {
			pod:    restartAllPod(v1.RestartPolicyNever),
			states: map[string]string{"init": "exited 0", "app": "exited 42", "other": "exited 137"},
			setup:  func(p *podState) { p.resetForRestartAll(decideNow) },
		},
		"restarted, previous kept, probed": {
			pod:    testPod(v1.RestartPolicyAlways, nil, "app", "other"),
			states: map[string]string{"app": "exited 1 backoff", "other": "running"},
			setup: func(p *podState) {
				c := p.byName["app"]
				c.previous, c.restarts = c.current, 3
				c.current = &instance{id: "proc://next", startedAt: decideNow}
				c.backoffUntil = decideNow.Add(20 * time.Second)
				c.backoffShown = decideNow.Add(-time.Second)
				p.probeResult("app", "proc://next", messages.Readiness, true)
				p.probeResult("app", "proc://next", messages.Startup, true)
				p.probeResult("app", "proc://stale", messages.Readiness, false)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := stated(t, tc.pod, tc.states)
			if tc.setup != nil {
				tc.setup(p)
			}
			sockets := map[string]string{}
			for _, c := range p.containers {
				if c.running() {
					sockets[c.current.id] = "/root/shims/" + c.spec.Name + ".sock"
				}
			}
			rec := snapshot(p, 7*time.Second, sockets)
			b, err := json.Marshal(rec)
			require.NoError(t, err)
			var read podRecord
			require.NoError(t, json.Unmarshal(b, &read))
			assert.Equal(t, rec, read, "the record survives JSON")
			got, err := restore(tc.pod, read, 10*time.Second, 40*time.Second)
			require.NoError(t, err)

			assert.Equal(t, snapshot(p, 7*time.Second, sockets), snapshot(got, 7*time.Second, sockets), "round trip")
			for _, c := range p.containers {
				g := got.byName[c.spec.Name]
				want := *c
				if c.running() {
					want.adopted, want.wasAdopted = c.probed, true // an adopted instance shows what it was last seen with
				}
				assert.Equal(t, want, *g, c.spec.Name)
			}
			wantPlan, gotPlan := p.decide(decideNow, false, false), got.decide(decideNow, false, false)
			assert.Equal(t, wantPlan, gotPlan, "the same decisions")
		})
	}
}

// What restore refuses: a record of another pod, spec or format, or with a container the spec
// lacks; and what no runtime writes is refused on reading.
func TestRestoreRejects(t *testing.T) {
	t.Parallel()
	pod := testPod(v1.RestartPolicyAlways, nil, "app")
	good := snapshot(stated(t, pod, map[string]string{"app": "running"}), time.Second, map[string]string{"proc://app": "/s.sock"})
	cases := map[string]func(r *podRecord){
		"other uid":         func(r *podRecord) { r.UID = "other" },
		"other spec":        func(r *podRecord) { r.SpecHash = "00" },
		"other version":     func(r *podRecord) { r.Version = 99 },
		"unknown container": func(r *podRecord) { r.Containers[0].Name = "ghost" },
		"running, no shim":  func(r *podRecord) { r.Containers[0].Socket = "" },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			rec := good
			rec.Containers = append([]containerRecord(nil), good.Containers...)
			mutate(&rec)
			_, err := restore(pod, rec, time.Second, time.Second)
			assert.Error(t, err)
		})
	}
	_, err := restore(pod, good, time.Second, time.Second)
	assert.NoError(t, err)
}

// writeFileAtomic replaces the file whole (a temporary file renamed over it, nothing left
// behind); loadRecords removes a temporary file a crash left and does not count it as a record.
func TestWriteFileAtomicAndLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pod := testPod(v1.RestartPolicyAlways, nil, "app")
	rec := snapshot(newPodState(pod, t0, time.Second, time.Second), time.Second, nil)
	path := recordPath(dir, pod.UID)
	require.NoError(t, writeFileAtomic(path, []byte("old")))
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, writeFileAtomic(path, b))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, b, got)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left")
	info, err := entries[0].Info()
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "only node's user reads it")

	assert.Error(t, writeFileAtomic(filepath.Join(dir, "missing", "x.json"), b))
	crash := filepath.Join(dir, tempPrefix+"x.json-123")
	require.NoError(t, os.WriteFile(crash, []byte(`{"vers`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "junk.json"), []byte(`{"vers`), 0o600))
	good, bad, err := loadRecords(dir)
	require.NoError(t, err)
	require.Len(t, good, 1)
	assert.Equal(t, rec.UID, good[0].UID)
	require.Len(t, bad, 1)
	assert.Equal(t, filepath.Join(dir, "junk.json"), bad[0].path)
	assert.NoFileExists(t, crash, "a write that never finished is not a record")
}

// TestAnAdoptedInstanceIsReportedAsItsProbesLastSawIt: the readiness and startup an adopted
// instance is reported with at once (KEP-4781) follow its probe results from then on, so a tree
// that makes its workers anew adopts today's outcome; a fresh instance never reports them.
func TestAnAdoptedInstanceIsReportedAsItsProbesLastSawIt(t *testing.T) {
	t.Parallel()
	p := stated(t, testPod(v1.RestartPolicyAlways, nil, "app", "fresh"), map[string]string{"app": "running", "fresh": "running"})
	app, fresh := p.byName["app"], p.byName["fresh"]
	app.spec.ReadinessProbe, app.spec.StartupProbe = &v1.Probe{}, &v1.Probe{}
	app.adopted, app.wasAdopted = probeOutcome{Ready: true, Started: true}, true
	report := func(name string) (bool, bool) {
		for _, cs := range p.status().ContainerStatuses {
			if cs.Name == name {
				return cs.Ready, cs.Started != nil && *cs.Started
			}
		}
		t.Fatalf("no status of %s", name)
		return false, false
	}
	ready, started := report("app")
	assert.True(t, ready && started, "adopted: ready and started at once")
	p.probeResult("app", app.current.id, messages.Readiness, false)
	ready, started = report("app")
	assert.False(t, ready, "a readiness failure since is what is reported")
	assert.True(t, started)
	p.probeResult("fresh", fresh.current.id, messages.Readiness, true)
	ready, _ = report("fresh")
	assert.False(t, ready, "a fresh instance leaves readiness to the tree")

	// Without probes, an adopted instance is what the tree makes of a running container: started,
	// and ready once started.
	plain := stated(t, testPod(v1.RestartPolicyAlways, nil, "plain"), map[string]string{"plain": "running"})
	plain.byName["plain"].wasAdopted = true
	for _, cs := range plain.status().ContainerStatuses {
		assert.True(t, cs.Ready && cs.Started != nil && *cs.Started, "no probes: ready and started")
	}
}
