//go:build unix

package probes

import "syscall"

func setLinger(fd uintptr, seconds int) error {
	return syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER,
		&syscall.Linger{Onoff: 1, Linger: int32(seconds)})
}
