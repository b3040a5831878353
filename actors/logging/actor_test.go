package logging

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const waitLimit = 10 * time.Second

func TestSystemOptionRoutesProtoactorLogsIntoHclog(t *testing.T) {
	l, buf := jsonLogger(hclog.Debug)
	sys := actor.NewActorSystem(SystemOption(l), actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
	defer sys.Shutdown()

	var started map[string]any
	for _, line := range buf.lines(t) {
		if line["@message"] == "actor system started" {
			started = line
		}
	}
	require.NotNil(t, started, "protoactor's startup line reached hclog")
	assert.Equal(t, "test.protoactor", started["@module"])
	assert.Equal(t, sys.ID, started["system"])
	assert.Equal(t, sys.ID, started["id"])
	assert.Equal(t, "info", started["@level"])
}

type boom struct{ why string }

func TestPanicStackLogsStackAndStillFails(t *testing.T) {
	l, buf := jsonLogger(hclog.Trace)
	sys := actor.NewActorSystem(SystemOption(l), actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
	defer sys.Shutdown()

	starts := make(chan struct{}, 10)
	props := actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *actor.Started:
			starts <- struct{}{}
		case boom:
			panic(msg.why)
		case string:
			ctx.Respond(msg)
		default:
		}
	}, actor.WithReceiverMiddleware(PanicStack(l.Named("worker"))))
	pid, err := sys.Root.SpawnNamed(props, "panicky")
	require.NoError(t, err)
	defer func() { require.NoError(t, sys.Root.PoisonFuture(pid).Wait()) }()
	waitStart := func() {
		t.Helper()
		select {
		case <-starts:
		case <-time.After(waitLimit):
			t.Fatal("actor did not (re)start")
		}
	}
	waitStart()

	sys.Root.Send(pid, boom{why: "kaboom"})
	waitStart() // the guardian's default strategy restarted it: the failure reached supervision

	res, err := sys.Root.RequestFuture(pid, "still alive", waitLimit).Result()
	require.NoError(t, err)
	assert.Equal(t, "still alive", res)

	var logged map[string]any
	for _, line := range buf.lines(t) {
		if line["@message"] == "actor panicked" {
			logged = line
		}
	}
	require.NotNil(t, logged, "panic logged")
	assert.Equal(t, "error", logged["@level"])
	assert.Equal(t, "test.worker", logged["@module"])
	assert.Equal(t, pid.Id, logged["actor"])
	assert.Equal(t, "logging.boom", logged["message_type"])
	assert.Equal(t, "kaboom", logged["panic"])
	stack, _ := logged["stack"].(string)
	assert.Contains(t, stack, "runtime/debug.Stack")
	assert.Contains(t, stack, "actor_test.go", "the stack reaches the panicking Receive")
}
