package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/probeactor/probeactor/remotesec"
)

// `node run --fleet ADDR --node-name NAME`: the node reports its pods (the merged status /pods
// serves, spec.nodeName set) and its probe results to a fleet aggregator (`node fleet`) through
// the fleet-link part (package fleet/link: the feed and the uplink), with its own Node object and,
// from the fleet-usage part, its usage every --node-status-update-frequency, over the process's one
// guarded remote (the remote part: --fleet-listen, default loopback on an ephemeral port, which
// exists because protoactor answers requests over the requester's own server; with --cluster the
// cluster's remote, --cluster-listen). This file holds the flags.

const (
	// defaultStatusUpdateFrequency is kubelet's --node-status-update-frequency default: the idle
	// time after which the uplink sends a heartbeat (keep it well under the aggregator's
	// --node-monitor-grace-period).
	defaultStatusUpdateFrequency = 10 * time.Second
	// defaultFleetListen is --fleet-listen's default: loopback, an ephemeral port.
	defaultFleetListen = "127.0.0.1:0"
)

// fleetConfig is the fleet flags of `node run`, and the mTLS flags the cluster shares.
type fleetConfig struct {
	nodeName    string
	aggregator  string        // --fleet
	listen      string        // --fleet-listen
	statusEvery time.Duration // --node-status-update-frequency
	certFile    string
	keyFile     string
	caFile      string
	tls         *remotesec.TLS  // loaded by validate
	given       map[string]bool // the flags given on the command line (flagsSet)
}

func addFleetFlags(fs *flag.FlagSet, c *fleetConfig) {
	fs.StringVar(&c.nodeName, "node-name", "", "this node's name (a DNS subdomain): every served pod's spec.nodeName; required with --fleet or --cluster, its name there")
	fs.StringVar(&c.aggregator, "fleet", "", "`host:port` of a fleet aggregator's remote (node fleet --remote-listen) to report this node's pods and probe results to")
	fs.StringVar(&c.listen, "fleet-listen", defaultFleetListen, "host:port of this node's remote endpoint for the aggregator's answers (port 0: ephemeral); a non-loopback address needs mutual TLS")
	fs.DurationVar(&c.statusEvery, "node-status-update-frequency", defaultStatusUpdateFrequency, "idle time after which the node tells the aggregator it is alive (keep it well under the aggregator's --node-monitor-grace-period)")
	fs.StringVar(&c.certFile, "tls-cert-file", "", "PEM certificate of this node (Common Name system:node:<node name>, serverAuth and clientAuth); enables mutual TLS on --fleet-listen and --cluster-listen")
	fs.StringVar(&c.keyFile, "tls-private-key-file", "", "PEM private key of --tls-cert-file")
	fs.StringVar(&c.caFile, "client-ca-file", "", "PEM CA bundle that signed the aggregator's and every peer's certificate")
}

// validate checks the fleet flags (cluster: --cluster was given) and loads the TLS files; errors
// name the flag.
func (c *fleetConfig) validate(cluster bool) error {
	if c.nodeName != "" { // standalone too: it is every served pod's spec.nodeName
		if errs := validation.IsDNS1123Subdomain(c.nodeName); len(errs) > 0 {
			return fmt.Errorf("--node-name %q: %s", c.nodeName, errs[0])
		}
	}
	if c.aggregator == "" {
		for _, f := range []string{"fleet-listen", "node-status-update-frequency"} {
			if c.given[f] { // a setting that would silently do nothing
				return fmt.Errorf("--%s: needs --fleet", f)
			}
		}
	}
	tlsGiven := c.certFile != "" || c.keyFile != "" || c.caFile != ""
	if c.aggregator == "" && !cluster {
		if tlsGiven {
			return errors.New("--tls-cert-file, --tls-private-key-file and --client-ca-file need --fleet or --cluster")
		}
		return nil
	}
	if c.nodeName == "" {
		return errors.New("--node-name: required with --fleet and --cluster")
	}
	if c.aggregator != "" {
		if err := checkHostPort(c.aggregator, false); err != nil {
			return fmt.Errorf("--fleet %q: %w", c.aggregator, err)
		}
		if cluster && c.listen != defaultFleetListen {
			return fmt.Errorf("--fleet-listen %s: not used with --cluster (the uplink uses the cluster's remote, --cluster-listen)", c.listen)
		}
		if err := checkHostPort(c.listen, true); err != nil {
			return fmt.Errorf("--fleet-listen %q: %w", c.listen, err)
		}
		if c.statusEvery <= 0 {
			return fmt.Errorf("--node-status-update-frequency %v: must be a positive duration (e.g. 10s)", c.statusEvery)
		}
	}
	tlsCfg, err := remotesec.LoadTLS(c.certFile, c.keyFile, c.caFile)
	if err != nil {
		return err
	}
	c.tls = tlsCfg
	if c.aggregator != "" && !cluster && c.tls == nil {
		host, _, _ := net.SplitHostPort(c.listen)
		if !loopbackHost(host) {
			return fmt.Errorf("--fleet-listen %s is not a loopback address: configure mutual TLS (--tls-cert-file, --tls-private-key-file, --client-ca-file) to listen on it", c.listen)
		}
	}
	return nil
}

// checkHostPort accepts host:port with a numeric port (0 only when zeroOK) and a non-empty host.
func checkHostPort(addr string, zeroOK bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want host:port")
	}
	if host == "" {
		return errors.New("the host is missing")
	}
	p, err := netip.ParseAddrPort("127.0.0.1:" + port)
	if err != nil || (p.Port() == 0 && !zeroOK) {
		return fmt.Errorf("port %q: want 1-65535", port)
	}
	return nil
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}
