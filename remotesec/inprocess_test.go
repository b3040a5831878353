package remotesec

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/internal/racecheck"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const stringValue = "google.protobuf.StringValue"

func startMember(t testing.TB, cfg Config) *actor.ActorSystem {
	t.Helper()
	log := logtest.New(t)
	sys := actor.NewActorSystem(logging.SystemOption(log), actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	cfg.Logger = log
	r, err := Start(sys, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		Stop(r)
		sys.Shutdown()
	})
	return sys
}

func echoProps() *actor.Props {
	return actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*wrapperspb.StringValue); ok {
			ctx.Respond(wrapperspb.String("echo:" + m.GetValue()))
		}
	})
}

// Two remotes in one process hit protoactor's grpclog.SetLoggerV2 race, so the scenario runs in a
// child process that tolerates exactly the known protoactor races (internal/racecheck).
func TestRequestAcrossTwoGuardedMembers(t *testing.T) {
	racecheck.InChild(t, racecheck.KnownProtoactorRaces, func(t testing.TB) {
		a := startMember(t, Config{Accept: []string{stringValue}, Targets: []string{"echo"}})
		_, err := a.Root.SpawnNamed(echoProps(), "echo")
		require.NoError(t, err)
		b := startMember(t, Config{Accept: []string{stringValue}, Futures: true})

		res, err := b.Root.RequestFuture(actor.NewPID(a.Address(), "echo"), wrapperspb.String("hi"), 5*time.Second).Result()
		require.NoError(t, err)
		require.Equal(t, "echo:hi", res.(*wrapperspb.StringValue).GetValue())
	})
}
