//go:build !unix

package probes

import (
	"os"
	"syscall"
)

func newProcessGroupAttr() *syscall.SysProcAttr { return nil }

// killProcessGroup kills only the process itself where process groups are not available.
func killProcessGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
