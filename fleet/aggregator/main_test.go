package aggregator_test

import (
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"go.uber.org/goleak"

	"github.com/probeactor/probeactor/fleet/aggregator/aggregatortest"
	"github.com/probeactor/probeactor/internal/fleettest"
)

func TestMain(m *testing.M) {
	fleettest.Register(fleettest.AggregatorRole, aggregatortest.Child)
	fleettest.Register("unguarded", unguardedMember)
	fleettest.Main() // a re-executed child becomes an aggregator (or another registered role) here
	goleak.VerifyTestMain(m)
}

// unguardedMember is a bare protoactor member as the pinned version ships it: remote with its
// defaults and an actor named fleet, no guard. It runs until SIGTERM; args: the port.
func unguardedMember(args []string) int {
	port, err := strconv.Atoi(args[0])
	if err != nil {
		return 2
	}
	sys := actor.NewActorSystem()
	r := remote.NewRemote(sys, remote.Configure("127.0.0.1", port))
	r.Start()
	_, _ = sys.Root.SpawnNamed(actor.PropsFromFunc(func(actor.Context) {}), "fleet")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	return 0
}
