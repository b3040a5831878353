package main

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/remotesec/remotesectest"
)

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
		{name: "no fleet: a node name for spec.nodeName", cfg: fleetConfig{nodeName: "n1"}},
		{name: "no fleet: the node name a DNS subdomain", cfg: fleetConfig{nodeName: "BAD NAME"}, want: `--node-name "BAD NAME"`},
		{name: "fleet-listen without fleet", cfg: fleetConfig{given: map[string]bool{"fleet-listen": true}}, want: "--fleet-listen: needs --fleet"},
		{name: "fleet-listen without fleet, with cluster", cfg: fleetConfig{nodeName: "n1", given: map[string]bool{"fleet-listen": true}}, cluster: true, want: "--fleet-listen: needs --fleet"},
		{name: "status frequency without fleet", cfg: fleetConfig{given: map[string]bool{"node-status-update-frequency": true}}, want: "--node-status-update-frequency: needs --fleet"},
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
		{[]string{"--node-name", "BAD NAME"}, `--node-name "BAD NAME": a lowercase RFC 1123 subdomain`},
		{[]string{"--node-status-update-frequency", "-1s"}, "--node-status-update-frequency: needs --fleet"},
		{[]string{"--fleet-listen", "127.0.0.1:7000"}, "--fleet-listen: needs --fleet"},
	} {
		var stderr bytes.Buffer
		code := runCommand(append(tc.args, "--root-dir", t.TempDir()), nil, io.Discard, &stderr)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Contains(t, stderr.String(), tc.want, "%v", tc.args)
	}
}
