package racecheck

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// report builds a race report with the given innermost frames of the two accesses and an extra
// caller frame under the first.
func report(first, caller, second string) string {
	return `==================
WARNING: DATA RACE
Write at 0x0000019794b0 by goroutine 11:
  ` + first + `()
      /src/a.go:39 +0x13b
  ` + caller + `()
      /src/b.go:61 +0x32
  testing.tRunner()
      /usr/local/go/src/testing/testing.go:2036 +0x21c

Previous read at 0x0000019794b0 by goroutine 15:
  ` + second + `()
      /src/c.go:141 +0x8a

Goroutine 11 (running) created at:
  github.com/probeactor/probeactor/remotesec.Start()
      /src/d.go:1 +0x1
==================
`
}

func TestOnlyAllowListedProtoactorRacesAreTolerated(t *testing.T) {
	known := report("google.golang.org/grpc/grpclog.SetLoggerV2", "github.com/asynkron/protoactor-go/remote.(*Remote).Start", "google.golang.org/grpc/grpclog.InfoDepth")
	ours := report("github.com/probeactor/probeactor/fleet/uplink.(*Coalescer).SetResult", "github.com/asynkron/protoactor-go/remote.(*Remote).Start", "google.golang.org/grpc/grpclog.SetLoggerV2")
	other := report("github.com/asynkron/protoactor-go/remote.(*endpointWriter).sendEnvelopes", "github.com/asynkron/protoactor-go/actor.(*ActorSystem).Root", "x.y")

	rs := Parse([]byte("some output\n" + known + "more output\n" + ours + other))
	require.Len(t, rs, 3)
	assert.Equal(t, "protoactor remote.Start replaces gRPC's global logger while another server logs", rs[0].Match(KnownProtoactorRaces))
	assert.Empty(t, rs[1].Match(KnownProtoactorRaces), "an access in probeactor code is never tolerated, whatever else the report names")
	assert.Empty(t, rs[2].Match(KnownProtoactorRaces), "a protoactor race nobody allow-listed")
	assert.Len(t, Unexpected([]byte(known+ours+other), KnownProtoactorRaces), 2)

	// Frames of a goroutine's creation stack do not count: here remote.(*Remote).Start only created
	// the goroutine of an access in some other code.
	creation := report("a.b", "c.d", "e.f") + ""
	creation = creation[:len(creation)-len("==================\n")] + `Goroutine 15 (running) created at:
  google.golang.org/grpc/grpclog.SetLoggerV2()
      /src/e.go:1 +0x1
  github.com/asynkron/protoactor-go/remote.(*Remote).Start()
      /src/f.go:1 +0x1
==================
`
	require.Len(t, Parse([]byte(creation)), 1)
	assert.Len(t, Unexpected([]byte(creation), KnownProtoactorRaces), 1)
	assert.Empty(t, Unexpected([]byte("no races here\n"), KnownProtoactorRaces))
}

func TestTheDisconnectChannelRaceNeedsBothProtoactorFrames(t *testing.T) {
	both := report("runtime.closechan", "github.com/asynkron/protoactor-go/remote.(*endpointReader).Receive.func1", "runtime.chansend")
	both = strings.Replace(both, "  runtime.chansend()\n", "  runtime.chansend()\n      /src/chan.go:1 +0x1\n  github.com/asynkron/protoactor-go/remote.(*endpointManager).stop.func1()\n", 1)
	rs := Parse([]byte(both))
	require.Len(t, rs, 1)
	assert.Equal(t, "protoactor remote.Shutdown signals endpoint readers on channels they close", rs[0].Match(KnownProtoactorRaces))
	readerOnly := report("runtime.closechan", "github.com/asynkron/protoactor-go/remote.(*endpointReader).Receive.func1", "runtime.chansend")
	assert.Len(t, Unexpected([]byte(readerOnly), KnownProtoactorRaces), 1, "the reader's close racing anything else is not tolerated")
}

// Nothing runs protoactor's cluster package any more (cluster/membership stands on the remote
// alone), so its BlockList race is no longer tolerated, from protoactor's frames or ours.
func TestTheBlockListRaceIsNoLongerTolerated(t *testing.T) {
	r := report("github.com/asynkron/protoactor-go/remote.(*BlockList).Block", "github.com/asynkron/protoactor-go/cluster.(*MemberList).UpdateClusterTopology",
		"github.com/asynkron/protoactor-go/remote.(*BlockList).IsBlocked")
	assert.Len(t, Unexpected([]byte(r), KnownProtoactorRaces), 1, "no protoactor cluster code runs: a BlockList race is new")
	ours := report("github.com/asynkron/protoactor-go/remote.(*BlockList).Block", "x.y", "github.com/probeactor/probeactor/cluster/membership.(*memberActor).Receive")
	assert.Len(t, Unexpected([]byte(ours), KnownProtoactorRaces), 1, "Block racing probeactor code is not tolerated")
}

func TestTheConnectionsRaceHasItsOwnRuleAndOursIsNeverTolerated(t *testing.T) {
	r := report("github.com/asynkron/protoactor-go/remote.(*endpointManager).stop", "github.com/asynkron/protoactor-go/remote.(*Remote).Shutdown",
		"github.com/asynkron/protoactor-go/remote.(*endpointManager).removeEndpoint")
	rs := Parse([]byte(r))
	require.Len(t, rs, 1)
	assert.Equal(t, "protoactor endpointManager.stop clears its connections while a lost connection's event reads them", rs[0].Match(KnownProtoactorRaces))
	ours := report("github.com/asynkron/protoactor-go/remote.(*endpointManager).stop", "x.y", "github.com/probeactor/probeactor/remotesec.Stop")
	assert.Len(t, Unexpected([]byte(ours), KnownProtoactorRaces), 1, "stop racing probeactor code is not tolerated")
}
