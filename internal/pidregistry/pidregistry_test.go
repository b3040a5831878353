package pidregistry

import (
	"runtime"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/internal/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newSystem: protoactor's log into the test's, and a dead-letter throttle that ends quickly.
func newSystem(t *testing.T) *actor.ActorSystem {
	return actor.NewActorSystem(logging.SystemOption(logtest.New(t)), actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
}

type echo struct{}

func (echo) Receive(ctx actor.Context) {
	if s, ok := ctx.Message().(string); ok {
		ctx.Respond("echo " + s)
	}
}

// A compacted registry still resolves everything: the processes NewActorSystem registered (the
// event stream, through which dead letters are reported), spawned actors, futures, and a stopped
// actor's PID turns into a dead letter.
func TestCompactedSystemWorks(t *testing.T) {
	sys := newSystem(t)
	require.NoError(t, Compact(sys, 4))
	assert.Equal(t, 4, Buckets(sys))
	_, ok := sys.ProcessRegistry.GetLocal("eventstream")
	require.True(t, ok, "the event stream NewActorSystem registered was moved")

	dead := make(chan *actor.DeadLetterEvent, 1)
	sub := sys.EventStream.Subscribe(func(evt any) {
		if e, ok := evt.(*actor.DeadLetterEvent); ok {
			select {
			case dead <- e:
			default:
			}
		}
	})
	defer sys.EventStream.Unsubscribe(sub)

	pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return echo{} }))
	res, err := sys.Root.RequestFuture(pid, "hi", 5*time.Second).Result()
	require.NoError(t, err)
	assert.Equal(t, "echo hi", res)
	require.NoError(t, sys.Root.StopFuture(pid).Wait())
	sys.Root.Send(pid, "late")
	select {
	case e := <-dead:
		assert.Equal(t, pid.Id, e.PID.Id)
	case <-time.After(5 * time.Second):
		t.Fatal("a message to a stopped actor was not reported as a dead letter")
	}
	sys.Shutdown()
}

func TestCompactRefusesNoBuckets(t *testing.T) {
	assert.EqualError(t, Compact(newSystem(t), 0), "pidregistry: 0 buckets: must be at least 1")
}

// liveHeapAfterChurn spawns and stops n actors one after another (each a new PID, as node's
// workers and futures) and returns how much the live heap grew.
func liveHeapAfterChurn(t *testing.T, sys *actor.ActorSystem, n int) int64 {
	props := actor.PropsFromProducer(func() actor.Actor { return echo{} })
	before := liveHeap()
	for range n {
		pid := sys.Root.Spawn(props)
		require.NoError(t, sys.Root.StopFuture(pid).Wait())
	}
	return liveHeap() - before
}

func liveHeap() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// The point of Compact: churning 20,000 PIDs through protoactor's own registry leaves megabytes of
// map storage behind (every shard map they landed in keeps its storage); through a compacted one,
// at most the compacted registry's small bound.
func TestCompactBoundsTheRegistrysGrowth(t *testing.T) {
	if testing.Short() {
		t.Skip("churns 40,000 actors")
	}
	const n = 20000
	plain := newSystem(t)
	grewPlain := liveHeapAfterChurn(t, plain, n)
	plain.Shutdown()

	compact := newSystem(t)
	require.NoError(t, Compact(compact, DefaultBuckets))
	grewCompact := liveHeapAfterChurn(t, compact, n)
	compact.Shutdown()

	t.Logf("live heap growth after %d PIDs: protoactor's registry %d KiB, compacted %d KiB", n, grewPlain>>10, grewCompact>>10)
	assert.Greater(t, grewPlain, int64(2<<20), "protoactor's 1,024 buckets keep megabytes (the control)")
	assert.Less(t, grewCompact, int64(1<<20), "64 buckets stay under a megabyte")
}
