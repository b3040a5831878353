package aggregator

import (
	"crypto/x509"
	"fmt"
	"strings"

	"github.com/probeactor/probeactor/remotesec"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// NodeCommonNamePrefix is the Common Name prefix of a node's certificate, as kubelets' client
// certificates have it (system:node:<name>, what Kubernetes' node authorizer checks).
const NodeCommonNamePrefix = "system:node:"

// CertifiesNode says whether a node's certificate may speak for node: its Common Name is
// system:node:<node> (or exactly <node>).
func CertifiesNode(cert *x509.Certificate, node string) bool {
	cn := cert.Subject.CommonName
	return cn == NodeCommonNamePrefix+node || cn == node
}

// checkNodeIdentity is the aggregator's remotesec.Config.Inspect: with mutual TLS, a node's
// messages must name the node its certificate names, so an authenticated member cannot report as
// (and overwrite the view of) another node. Without TLS (loopback only) there is nothing to bind.
func checkNodeIdentity(typeName string, data []byte, peer remotesec.Peer) error {
	if peer.Certificate == nil {
		return nil
	}
	node, ok, err := fleetv1.NodeName(typeName, data)
	if err != nil || !ok {
		return err
	}
	if !CertifiesNode(peer.Certificate, node) {
		return fmt.Errorf("node %q is not the one its certificate names (CN %q; want %s%s)", node, peer.Certificate.Subject.CommonName,
			NodeCommonNamePrefix, strings.TrimPrefix(peer.Certificate.Subject.CommonName, NodeCommonNamePrefix))
	}
	return nil
}
