package clusterv1

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// MaxView bounds Heartbeat.view: no cluster of that many static peers is meant to exist.
const MaxView = 1024

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
