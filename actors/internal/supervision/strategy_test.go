package supervision

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitLimit = 10 * time.Second // generous upper bound for an actor round trip; never a sleep

type (
	boom     struct{}
	ping     struct{}
	pong     struct{ name string }
	children struct{}
)

type testChild struct {
	name   string
	starts chan<- string
}

func (c *testChild) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		c.starts <- c.name
	case boom:
		panic("boom " + c.name)
	case ping:
		ctx.Respond(pong{c.name})
	default:
	}
}

type testParent struct {
	strategy   *Strategy
	starts     chan<- string
	terminated chan<- *actor.PID
	kids       map[string]*actor.PID
}

func (p *testParent) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		p.kids = map[string]*actor.PID{}
		for _, name := range []string{"a", "b"} {
			props := actor.PropsFromProducer(func() actor.Actor { return &testChild{name: name, starts: p.starts} })
			pid, err := ctx.SpawnNamed(props, name)
			if err != nil {
				panic(err)
			}
			p.kids[name] = pid
		}
	case *actor.Terminated:
		p.strategy.Forget(msg.Who)
		p.terminated <- msg.Who
	case *actor.Stopping:
		p.strategy.Stop()
	case children:
		ctx.Respond(p.kids)
	default:
	}
}

type giveUp struct {
	child  *actor.PID
	reason any
}

type harness struct {
	t          *testing.T
	sys        *actor.ActorSystem
	clk        *clock.Fake
	strategy   *Strategy
	logs       *logtest.Buffer
	parent     *actor.PID
	kids       map[string]*actor.PID
	starts     chan string
	terminated chan *actor.PID
	gaveUp     chan giveUp
}

func newHarness(t *testing.T, p Policy) *harness {
	t.Helper()
	h := &harness{
		t:          t,
		clk:        clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		logs:       &logtest.Buffer{},
		starts:     make(chan string, 100),
		terminated: make(chan *actor.PID, 100),
		gaveUp:     make(chan giveUp, 100),
	}
	var err error
	h.strategy, err = New(p,
		WithClock(h.clk),
		WithRand(func() float64 { return 0 }),
		WithLogger(hclog.New(&hclog.LoggerOptions{Output: h.logs, Level: hclog.Debug})),
		OnGiveUp(func(child *actor.PID, reason any) { h.gaveUp <- giveUp{child, reason} }),
	)
	require.NoError(t, err)
	h.sys = actor.NewActorSystem(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }),
		actor.WithDeadLetterThrottleInterval(10*time.Millisecond),
	)
	props := actor.PropsFromProducer(func() actor.Actor {
		return &testParent{strategy: h.strategy, starts: h.starts, terminated: h.terminated}
	}, actor.WithSupervisor(h.strategy))
	h.parent, err = h.sys.Root.SpawnNamed(props, "manager")
	require.NoError(t, err)
	res, err := h.sys.Root.RequestFuture(h.parent, children{}, waitLimit).Result()
	require.NoError(t, err)
	h.kids = res.(map[string]*actor.PID)
	h.expectStart("a", "b")
	t.Cleanup(func() {
		require.NoError(t, h.sys.Root.PoisonFuture(h.parent).Wait())
		h.sys.Shutdown()
	})
	return h
}

// expectStart waits for the named children's *actor.Started, in any order.
func (h *harness) expectStart(names ...string) {
	h.t.Helper()
	var got []string
	for range names {
		select {
		case n := <-h.starts:
			got = append(got, n)
		case <-time.After(waitLimit):
			h.t.Fatalf("children %v not started within %v (got %v)", names, waitLimit, got)
		}
	}
	assert.ElementsMatch(h.t, names, got)
}

// failAndExpectDelay makes child name panic and checks that its restart is scheduled after want.
func (h *harness) failAndExpectDelay(name string, want time.Duration) {
	h.t.Helper()
	h.sys.Root.Send(h.kids[name], boom{})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	require.NoError(h.t, h.clk.WaitPending(ctx, 1), "restart timer armed")
	next, ok := h.clk.Next()
	require.True(h.t, ok)
	assert.Equal(h.t, want, next.Sub(h.clk.Now()), "restart delay")
	assert.Equal(h.t, 1, h.strategy.Pending())
	for kid, pid := range h.kids {
		assert.Equal(h.t, kid == name, h.strategy.Waiting(pid), "Waiting(%s)", kid)
	}
}

func (h *harness) ping(name string) {
	h.t.Helper()
	res, err := h.sys.Root.RequestFuture(h.kids[name], ping{}, waitLimit).Result()
	require.NoError(h.t, err)
	assert.Equal(h.t, pong{name}, res)
}

func TestRestartsWithExponentialBackoffCappedAtMax(t *testing.T) {
	h := newHarness(t, Policy{Initial: time.Second, Max: 4 * time.Second, Multiplier: 2, ResetAfter: time.Minute})

	for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		h.failAndExpectDelay("a", want)

		// While a waits, messages queue in its suspended mailbox and the sibling keeps working.
		queued := h.sys.Root.RequestFuture(h.kids["a"], ping{}, waitLimit)
		h.ping("b")

		h.clk.Advance(want - time.Nanosecond)
		assert.Equal(t, 1, h.clk.Pending(), "not restarted before its delay")
		assert.Empty(t, h.starts)
		h.clk.Advance(time.Nanosecond)
		h.expectStart("a")
		res, err := queued.Result()
		require.NoError(t, err)
		assert.Equal(t, pong{"a"}, res, "the restarted child processed the queued message")
		assert.Equal(t, 0, h.strategy.Pending())
		assert.False(t, h.strategy.Waiting(h.kids["a"]), "restarted")
	}

	logs := h.logs.String()
	assert.Contains(t, logs, "reason=\"boom a\"")
	assert.Contains(t, logs, "delay=4s")
	assert.Contains(t, logs, "child failed; restarting after back-off")
}

func TestBackoffResetsAfterAStablePeriod(t *testing.T) {
	h := newHarness(t, Policy{Initial: time.Second, Max: time.Minute, ResetAfter: 30 * time.Second})
	h.failAndExpectDelay("a", time.Second)
	h.clk.Advance(time.Second)
	h.expectStart("a")
	h.failAndExpectDelay("a", 2*time.Second)
	h.clk.Advance(2 * time.Second)
	h.expectStart("a")

	h.clk.Advance(30 * time.Second) // stable
	h.failAndExpectDelay("a", time.Second)
	h.clk.Advance(time.Second)
	h.expectStart("a")
}

func TestGivesUpAfterTooManyFailuresInWindow(t *testing.T) {
	h := newHarness(t, Policy{Initial: time.Second, Max: time.Minute, MaxFailures: 3, Window: time.Minute})
	a := h.kids["a"]
	h.failAndExpectDelay("a", time.Second)
	h.clk.Advance(time.Second)
	h.expectStart("a")
	h.failAndExpectDelay("a", 2*time.Second)
	h.clk.Advance(2 * time.Second)
	h.expectStart("a")

	h.sys.Root.Send(a, boom{})
	select {
	case g := <-h.gaveUp:
		assert.Equal(t, a.Id, g.child.Id)
		assert.Equal(t, "boom a", g.reason)
	case <-time.After(waitLimit):
		t.Fatal("OnGiveUp not called")
	}
	select {
	case who := <-h.terminated:
		assert.Equal(t, a.Id, who.Id, "the given-up child is stopped")
	case <-time.After(waitLimit):
		t.Fatal("given-up child not terminated")
	}
	assert.Equal(t, 0, h.clk.Pending(), "no restart scheduled")
	require.Eventually(t, func() bool { return h.strategy.Tracked() == 0 }, waitLimit, time.Millisecond)
	h.ping("b")
	assert.Contains(t, h.logs.String(), "child failed too often; stopping it")
}

func TestSiblingFailuresHaveIndependentBackoff(t *testing.T) {
	h := newHarness(t, Policy{Initial: time.Second, Max: time.Minute})
	h.failAndExpectDelay("a", time.Second)
	h.clk.Advance(time.Second)
	h.expectStart("a")
	h.failAndExpectDelay("a", 2*time.Second)
	h.clk.Advance(2 * time.Second)
	h.expectStart("a")

	h.failAndExpectDelay("b", time.Second) // b's first failure starts from Initial
	h.clk.Advance(time.Second)
	h.expectStart("b")
	assert.Equal(t, 2, h.strategy.Tracked())
}

func TestStoppingTheParentCancelsPendingRestarts(t *testing.T) {
	h := newHarness(t, Policy{Initial: time.Hour, Max: time.Hour})
	h.failAndExpectDelay("a", time.Hour)
	require.NoError(t, h.sys.Root.PoisonFuture(h.parent).Wait())
	assert.Equal(t, 0, h.strategy.Pending())
	assert.Equal(t, 0, h.strategy.Tracked())
	assert.Equal(t, 0, h.clk.Pending(), "restart timer cancelled")
	h.clk.Advance(2 * time.Hour)
	assert.Empty(t, h.starts, "nothing restarted after the parent stopped")
}

func TestNewRejectsInvalidPolicy(t *testing.T) {
	_, err := New(Policy{Initial: 0, Max: time.Second})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "policy.Initial"), err.Error())
}
