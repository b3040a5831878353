package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

// memberBin is the test member binary, built once per test run by TestMain.
var memberBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "testmember")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	memberBin = filepath.Join(dir, "testmember")
	if err := build(memberBin); err != nil {
		fmt.Fprintln(os.Stderr, "build the test member:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	// goleak.VerifyTestMain's check, done by hand so the binary is removed before exiting.
	code := m.Run()
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// build compiles this package's member with the go tool that built the test (with -race when the
// test runs under it, so the members' races are checked too).
func build(out string) error {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		if goTool, err = exec.LookPath("go"); err != nil {
			return fmt.Errorf("no go tool: %w", err)
		}
	}
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(goTool, append(args, ".")...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}
