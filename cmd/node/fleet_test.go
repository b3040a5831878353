package main

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/remotesec/remotesectest"
)

func TestPodSyncPlansReadsAndRemovals(t *testing.T) {
	uids := func(s ...string) []types.UID {
		var out []types.UID
		for _, u := range s {
			out = append(out, types.UID(u))
		}
		return out
	}
	report := func(s *podSync, us ...string) {
		for _, u := range us {
			s.Changed(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(u)}})
		}
	}
	cases := []struct {
		name        string
		reported    []string // pods handed over before
		mark        []string
		all         bool
		running     []string
		wantRead    []types.UID
		wantRemoved []types.UID
	}{
		{name: "nothing marked: nothing to do", reported: []string{"a"}, running: []string{"a", "b"}},
		{name: "a dirty running pod is read", mark: []string{"b", "b"}, running: []string{"a", "b"}, wantRead: uids("b")},
		{name: "a dirty pod gone is removed", reported: []string{"a"}, mark: []string{"a"}, running: []string{"b"}, wantRemoved: uids("a")},
		{name: "a late result of a pod never reported is removed (drops the result)", mark: []string{"x"}, running: []string{"b"}, wantRemoved: uids("x")},
		{name: "all: every running pod read, every reported pod gone removed", reported: []string{"a", "c"}, mark: []string{"z"}, all: true,
			running: []string{"b", "a"}, wantRead: uids("a", "b"), wantRemoved: uids("c", "z")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newPodSync()
			report(s, tc.reported...)
			for _, u := range tc.mark {
				s.Mark(types.UID(u))
			}
			if tc.all {
				s.MarkAll()
			}
			read, removed := s.Plan(uids(tc.running...))
			assert.Equal(t, tc.wantRead, read)
			assert.Equal(t, tc.wantRemoved, removed)
			read, removed = s.Plan(uids(tc.running...))
			assert.Empty(t, read, "marks are cleared")
			assert.Empty(t, removed, "marks are cleared")
			for _, u := range tc.wantRemoved {
				assert.NotContains(t, s.sent, u, "a removed pod is forgotten: it is reported again if it comes back")
			}
		})
	}
}

func TestPodSyncChangedComparesStatusSemantically(t *testing.T) {
	s := newPodSync()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pod := func(ready v1.ConditionStatus, ts time.Time) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: v1.PodSpec{NodeName: "n1"},
			Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: ready, LastTransitionTime: metav1.NewTime(ts)}}}}
	}
	assert.True(t, s.Changed(pod(v1.ConditionFalse, at)), "the first report is a change")
	assert.False(t, s.Changed(pod(v1.ConditionFalse, at.In(time.Local))), "the same status (a time in another zone) is no change")
	assert.True(t, s.Changed(pod(v1.ConditionTrue, at)), "readiness changed")
	p := pod(v1.ConditionTrue, at)
	p.Spec.NodeName = "n2"
	assert.True(t, s.Changed(p), "the node name changed")
}

func TestFleetFlagsAreValidatedAndNamed(t *testing.T) {
	ca := remotesectest.NewCA(t, "fleet")
	files := ca.Issue(t, "system:node:n1", "127.0.0.1")
	missing := filepath.Join(t.TempDir(), "missing.pem")
	ok := fleetConfig{nodeName: "n1", aggregator: "127.0.0.1:10257", listen: "127.0.0.1:0", statusEvery: time.Second}
	with := func(f func(c *fleetConfig)) fleetConfig { c := ok; f(&c); return c }
	cases := []struct {
		name    string
		cfg     fleetConfig
		cluster bool
		want    string // "" = valid
	}{
		{name: "no fleet: nothing to check", cfg: fleetConfig{listen: "127.0.0.1:0"}},
		{name: "fleet on loopback", cfg: ok},
		{name: "node name required", cfg: with(func(c *fleetConfig) { c.nodeName = "" }), want: "--node-name: required"},
		{name: "node name a DNS subdomain", cfg: with(func(c *fleetConfig) { c.nodeName = "N_1" }), want: `--node-name "N_1"`},
		{name: "fleet host:port", cfg: with(func(c *fleetConfig) { c.aggregator = "127.0.0.1" }), want: `--fleet "127.0.0.1": want host:port`},
		{name: "fleet port 0", cfg: with(func(c *fleetConfig) { c.aggregator = "127.0.0.1:0" }), want: `--fleet "127.0.0.1:0": port "0"`},
		{name: "fleet-listen host:port", cfg: with(func(c *fleetConfig) { c.listen = "x" }), want: `--fleet-listen "x"`},
		{name: "fleet-listen off loopback without mTLS", cfg: with(func(c *fleetConfig) { c.listen = "0.0.0.0:7000" }), want: "--fleet-listen 0.0.0.0:7000 is not a loopback address: configure mutual TLS"},
		{name: "status frequency positive", cfg: with(func(c *fleetConfig) { c.statusEvery = 0 }), want: "--node-status-update-frequency"},
		{name: "TLS flags without fleet or cluster", cfg: fleetConfig{certFile: files.Cert}, want: "need --fleet or --cluster"},
		{name: "TLS flags incomplete", cfg: with(func(c *fleetConfig) { c.certFile = files.Cert }), want: "--tls-cert-file, --tls-private-key-file and --client-ca-file go together"},
		{name: "TLS file missing", cfg: with(func(c *fleetConfig) { c.certFile, c.keyFile, c.caFile = missing, files.Key, files.CA }), want: "--tls-cert-file"},
		{name: "mTLS", cfg: with(func(c *fleetConfig) { c.certFile, c.keyFile, c.caFile = files.Cert, files.Key, files.CA })},
		{name: "cluster without fleet needs a node name", cfg: fleetConfig{listen: "127.0.0.1:0"}, cluster: true, want: "--node-name: required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			err := c.validate(tc.cluster)
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, c.certFile != "", c.tls != nil, "TLS loaded when given")
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestRunRefusesBadFleetFlags: `node run` exits 2 before starting anything, naming the flag.
func TestRunRefusesBadFleetFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--fleet", "127.0.0.1:10257"}, "--node-name: required"},
		{[]string{"--fleet", "nowhere", "--node-name", "n1"}, `--fleet "nowhere": want host:port`},
		{[]string{"--fleet", "127.0.0.1:10257", "--node-name", "n1", "--fleet-listen", "10.1.2.3:7000"}, "--fleet-listen 10.1.2.3:7000 is not a loopback address"},
		{[]string{"--tls-cert-file", "x.pem"}, "need --fleet or --cluster"},
	} {
		var stderr bytes.Buffer
		code := runCommand(append(tc.args, "--root-dir", t.TempDir()), nil, io.Discard, &stderr)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Contains(t, stderr.String(), tc.want, "%v", tc.args)
	}
}
