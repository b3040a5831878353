package clusterv1

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// MaxView bounds Heartbeat.view: no cluster of that many static peers is meant to exist.
const MaxView = 1024

// MaxStopping bounds Heartbeat.stopping: the pods one member may report as still stopping (a
// member stopping more reports the first MaxStopping and holds its peers back no less: see
// cluster/membership).
const MaxStopping = 65536

// MaxClaims bounds Heartbeat.claims: the restart budget's claims one member lists (its own and the
// ones it relays, waiting and taken). A budget allows at most N taken claims per window,
// and a member waits with one claim per container whose kill waits; a member with more lists the
// first MaxClaims of its own and relays fewer (see cluster/membership).
const MaxClaims = 4096

// maxClaimKey bounds one claim's key (pod UID/container name/container ID).
const maxClaimKey = 512

// maxUID bounds one pod UID in Heartbeat.stopping (Kubernetes' UIDs are 36 bytes; a UID node
// derives is a 64-character hash).
const maxUID = 128

// Validate checks what every member's heartbeat satisfies, naming the field that does not.
func (h *Heartbeat) Validate() error {
	if h.GetCluster() == "" {
		return errors.New("heartbeat: cluster: required")
	}
	if err := CheckAddress(h.GetAddress()); err != nil {
		return fmt.Errorf("heartbeat: address: %w", err)
	}
	if h.GetIncarnation() == 0 {
		return errors.New("heartbeat: incarnation: required")
	}
	if h.GetSeq() == 0 {
		return errors.New("heartbeat: seq: must be at least 1")
	}
	if len(h.GetView()) > MaxView {
		return fmt.Errorf("heartbeat: view: %d members (at most %d)", len(h.GetView()), MaxView)
	}
	seen := make(map[string]bool, len(h.GetView()))
	for i, m := range h.GetView() {
		if err := CheckAddress(m); err != nil {
			return fmt.Errorf("heartbeat: view[%d]: %w", i, err)
		}
		if seen[m] {
			return fmt.Errorf("heartbeat: view[%d]: duplicate %q", i, m)
		}
		seen[m] = true
	}
	if len(h.GetAcks()) > MaxView {
		return fmt.Errorf("heartbeat: acks: %d entries (at most %d)", len(h.GetAcks()), MaxView)
	}
	for i, a := range h.GetAcks() {
		if err := CheckAddress(a.GetAddress()); err != nil {
			return fmt.Errorf("heartbeat: acks[%d].address: %w", i, err)
		}
		if a.GetIncarnation() == 0 || a.GetSeq() == 0 {
			return fmt.Errorf("heartbeat: acks[%d]: incarnation and seq are required", i)
		}
	}
	if len(h.GetStopping()) > MaxStopping {
		return fmt.Errorf("heartbeat: stopping: %d pods (at most %d)", len(h.GetStopping()), MaxStopping)
	}
	for i, uid := range h.GetStopping() {
		if uid == "" || len(uid) > maxUID {
			return fmt.Errorf("heartbeat: stopping[%d]: a pod UID of 1 to %d bytes", i, maxUID)
		}
	}
	if len(h.GetClaims()) > MaxClaims {
		return fmt.Errorf("heartbeat: claims: %d entries (at most %d)", len(h.GetClaims()), MaxClaims)
	}
	for i, c := range h.GetClaims() {
		if err := CheckAddress(c.GetOrigin()); err != nil {
			return fmt.Errorf("heartbeat: claims[%d].origin: %w", i, err)
		}
		if c.GetIncarnation() == 0 || c.GetLamport() == 0 {
			return fmt.Errorf("heartbeat: claims[%d]: incarnation and lamport are required", i)
		}
		if len(c.GetKey()) > maxClaimKey {
			return fmt.Errorf("heartbeat: claims[%d].key: %d bytes (at most %d)", i, len(c.GetKey()), maxClaimKey)
		}
	}
	return nil
}

// CheckAddress accepts host:port with a non-empty host and a port from 1 to 65535.
func CheckAddress(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("%q: want host:port: %w", a, err)
	}
	if host == "" {
		return fmt.Errorf("%q: no host", a)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 1 to 65535", a, port)
	}
	return nil
}

// Names lists the full protobuf names of every message of this protocol, for a remote guard's
// allow-list (remotesec.Config.Accept).
func Names() []string {
	return []string{string((&Heartbeat{}).ProtoReflect().Descriptor().FullName())}
}
