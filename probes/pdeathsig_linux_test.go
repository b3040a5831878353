package probes

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestExecCommandDiesWithProber: a prober SIGKILLed mid-attempt (no chance to kill the group) does
// not leave its probe command running: Pdeathsig SIGKILLs it. The prober is this test binary
// re-executed (see TestMain), running one long RunLocal.
func TestExecCommandDiesWithProber(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	prober := exec.Command(os.Args[0], "-test.run=^$")
	// sh writes its pid and then becomes sleep (exec), so the pid is the probe command's.
	script := filepath.Join(t.TempDir(), "probe.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho $$ > "+pidFile+"\nexec sleep 600\n"), 0o755))
	prober.Env = append(os.Environ(), helperEnv+"="+script)
	require.NoError(t, prober.Start())
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		return err == nil && len(b) > 0 && b[len(b)-1] == '\n'
	}, 10*time.Second, 10*time.Millisecond, "the probe command never started")
	pid := readPid(t, pidFile)
	require.False(t, processGone(pid), "probe command %d should run while the prober lives", pid)

	require.NoError(t, prober.Process.Signal(syscall.SIGKILL))
	_ = prober.Wait()
	require.Eventually(t, func() bool { return processGone(pid) }, 5*time.Second, 10*time.Millisecond,
		"probe command %d outlived its SIGKILLed prober", pid)
}
