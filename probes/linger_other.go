//go:build !unix

package probes

// setLinger is a no-op where probe sockets' SO_LINGER is not managed by this package.
func setLinger(uintptr, int) error { return nil }
