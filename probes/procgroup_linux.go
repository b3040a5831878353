//go:build linux

package probes

import "syscall"

// newProcessGroupAttr puts the command in a new process group whose id is its pid, and has the
// kernel SIGKILL it when its parent dies, so a probe command does not outlive a SIGKILLed prober.
// Pdeathsig fires when the forking *thread* exits, not the process (golang/go#27505): RunLocal
// keeps its goroutine locked to that thread until the command is reaped.
func newProcessGroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killProcessGroup sends SIGKILL to every process of group pgid; a group that no longer exists is
// not an error.
func killProcessGroup(pgid int) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}
