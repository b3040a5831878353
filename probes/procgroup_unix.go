//go:build unix && !linux

package probes

import "syscall"

// newProcessGroupAttr puts the command in a new process group whose id is its pid.
func newProcessGroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup sends SIGKILL to every process of group pgid; a group that no longer exists is
// not an error.
func killProcessGroup(pgid int) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}
