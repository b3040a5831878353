// Package freeport picks unused loopback ports for tests that must name an address before anything
// binds it (a cluster's peer list, a manifest's probe port).
//
// Invariant: within one process no port is handed out twice. The kernel may offer a port it just
// offered again once the probing listener is closed, so picks that are not remembered can collide
// (a cluster test once listed "127.0.0.1:45531" twice in --cluster-peers). Another process can
// still take a port between the pick and the bind; where the code under test can bind port 0 and
// report what it got, that is the better way.
package freeport

import (
	"net"
	"strconv"
	"sync"
	"testing"
)

var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Port returns an unused loopback port that no earlier call in this process returned.
func Port(t testing.TB) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port
		}
	}
	t.Fatalf("free port: the kernel offered only ports handed out before (100 tries)")
	return 0
}

// Addr is Port as "127.0.0.1:<port>".
func Addr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(Port(t)))
}
