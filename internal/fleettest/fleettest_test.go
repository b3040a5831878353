package fleettest

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// race is a race detector report between the given innermost frames.
func race(write, read string) string {
	return "==================\nWARNING: DATA RACE\nWrite at 0x00c000096c40 by main goroutine:\n  " + write +
		"()\n      /src/a.go:1 +0x1\n\nPrevious read at 0x00c000096c40 by goroutine 327:\n  " + read +
		"()\n      /src/b.go:2 +0x2\n==================\n"
}

func exitWith(t *testing.T, code string) error {
	err := exec.Command("sh", "-c", "exit "+code).Run()
	require.Error(t, err)
	return err
}

func TestARaceExitIsCleanOnlyWhenEveryRaceIsAllowListed(t *testing.T) {
	known := race("github.com/asynkron/protoactor-go/remote.(*endpointManager).stop", "github.com/asynkron/protoactor-go/remote.(*endpointManager).removeEndpoint")
	ours := race("github.com/probeactor/probeactor/cluster/membership.(*Member).Stop", "github.com/asynkron/protoactor-go/remote.(*endpointManager).removeEndpoint")
	raced := exitWith(t, "66")

	assert.True(t, racedExit(raced, "starting\n"+known+"left the cluster\n"), "an allow-listed protoactor shutdown race")
	assert.False(t, racedExit(raced, known+ours), "one race outside the allow-list")
	assert.False(t, racedExit(raced, "no report at all\n"), "status 66 without a race report is the program's own")
	assert.False(t, racedExit(exitWith(t, "1"), known), "another exit status")
	assert.False(t, racedExit(nil, known), "a clean exit needs no tolerance")
}
