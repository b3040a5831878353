package lifecycle

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/probeactor/probeactor/internal/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// journal records what the parts did, in order.
type journal struct {
	mu    sync.Mutex
	steps []string
}

func (j *journal) add(s string) { j.mu.Lock(); j.steps = append(j.steps, s); j.mu.Unlock() }
func (j *journal) get() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.steps...)
}

// fake is a part that records its start and stop and can fail either.
type fake struct {
	name              string
	j                 *journal
	startErr, stopErr error
	stopTook          time.Duration // how long Stop blocks (it honours ctx only when honour is set)
	honour            bool
	fail              chan error
	sawDeadline       time.Duration
}

func (f *fake) Start(context.Context) error { f.j.add("start " + f.name); return f.startErr }
func (f *fake) Stop(ctx context.Context) error {
	if d, ok := ctx.Deadline(); ok {
		f.sawDeadline = time.Until(d).Round(time.Second)
	}
	select {
	case <-time.After(f.stopTook):
	case <-ctxDone(ctx, f.honour):
	}
	f.j.add("stop " + f.name)
	return f.stopErr
}

func ctxDone(ctx context.Context, honour bool) <-chan struct{} {
	if honour {
		return ctx.Done()
	}
	return nil
}

type failing struct {
	*fake
}

func (f failing) Failed() <-chan error { return f.fail }

type budgeted struct {
	*fake
	budget time.Duration
}

func (b budgeted) StopTimeout() time.Duration { return b.budget }

func parts(j *journal, names ...string) []Part {
	out := make([]Part, len(names))
	for i, n := range names {
		out[i] = Part{Name: n, Component: &fake{name: n, j: j}}
	}
	return out
}

func TestStartsInOrderAndStopsInReverse(t *testing.T) {
	j := &journal{}
	var events []Event
	l := New(parts(j, "a", "b", "c"), WithLogger(logtest.New(t)), WithObserver(func(e Event) { events = append(events, e) }))
	assert.Equal(t, []string{"a", "b", "c"}, l.Names())
	require.NoError(t, l.Start(context.Background()))
	l.Stop()
	l.Stop() // a second Stop does nothing
	assert.Equal(t, []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}, j.get())
	var phases []string
	for _, e := range events {
		phases = append(phases, string(e.Phase)+" "+e.Part)
	}
	assert.Equal(t, []string{"starting a", "started a", "starting b", "started b", "starting c", "started c",
		"stopping c", "stopped c", "stopping b", "stopped b", "stopping a", "stopped a"}, phases)
}

func TestAFailedStartStopsWhatStartedInReverse(t *testing.T) {
	j := &journal{}
	ps := parts(j, "a", "b", "c", "d")
	ps[2].Component.(*fake).startErr = errors.New("address in use")
	l := New(ps, WithLogger(logtest.New(t)))
	err := l.Start(context.Background())
	require.Error(t, err)
	assert.Equal(t, "start c: address in use", err.Error(), "the error names the part")
	assert.Equal(t, []string{"start a", "start b", "start c", "stop b", "stop a"}, j.get(), "c undid itself; d never started")
	l.Stop()
	assert.Len(t, j.get(), 5, "nothing is stopped twice")
}

func TestAFailedStopDoesNotKeepTheOthersRunning(t *testing.T) {
	j := &journal{}
	ps := parts(j, "a", "b")
	ps[1].Component.(*fake).stopErr = errors.New("boom")
	var stopped []Event
	l := New(ps, WithLogger(logtest.New(t)), WithObserver(func(e Event) {
		if e.Phase == Stopped {
			stopped = append(stopped, e)
		}
	}))
	require.NoError(t, l.Start(context.Background()))
	l.Stop()
	assert.Equal(t, []string{"start a", "start b", "stop b", "stop a"}, j.get())
	require.Len(t, stopped, 2)
	assert.EqualError(t, stopped[0].Err, "boom")
	assert.NoError(t, stopped[1].Err)
}

func TestRunEndsWithTheContextOrAFailure(t *testing.T) {
	t.Run("context", func(t *testing.T) {
		j := &journal{}
		ctx, cancel := context.WithCancel(context.Background())
		l := New(parts(j, "a"), WithObserver(func(e Event) {
			if e.Phase == Started {
				cancel()
			}
		}))
		assert.NoError(t, l.Run(ctx))
		assert.Equal(t, []string{"start a", "stop a"}, j.get())
	})
	t.Run("failure", func(t *testing.T) {
		j := &journal{}
		f := failing{&fake{name: "api", j: j, fail: make(chan error, 1)}}
		l := New([]Part{{Name: "a", Component: &fake{name: "a", j: j}}, {Name: "api", Component: f}, {Name: "c", Component: &fake{name: "c", j: j}}},
			WithObserver(func(e Event) {
				if e.Part == "c" && e.Phase == Started {
					f.fail <- errors.New("listener closed")
				}
			}))
		err := l.Run(context.Background())
		assert.EqualError(t, err, "api: listener closed")
		assert.Equal(t, []string{"start a", "start api", "start c", "stop c", "stop api", "stop a"}, j.get())
	})
}

func TestAStopPastItsDeadlineIsLoggedAndAwaited(t *testing.T) {
	j := &journal{}
	slow := &fake{name: "slow", j: j, stopTook: 300 * time.Millisecond}
	log, buf := logtest.Capture(t)
	var stopped Event
	l := New([]Part{{Name: "first", Component: &fake{name: "first", j: j}}, {Name: "slow", Component: slow, StopTimeout: 50 * time.Millisecond}},
		WithLogger(log), WithObserver(func(e Event) {
			if e.Part == "slow" && e.Phase == Stopped {
				stopped = e
			}
		}))
	require.NoError(t, l.Start(context.Background()))
	l.Stop()
	assert.Equal(t, []string{"start first", "start slow", "stop slow", "stop first"}, j.get(), "the part before waits for the slow one")
	assert.True(t, stopped.Overran)
	assert.GreaterOrEqual(t, stopped.Took, 300*time.Millisecond)
	assert.Contains(t, buf.String(), "a part is past its stop deadline; waiting for it: part=slow deadline=50ms")
	assert.Contains(t, buf.String(), "a part stopped after its deadline: part=slow")
}

func TestStopDeadlines(t *testing.T) {
	j := &journal{}
	def, fixed := &fake{name: "default", j: j, honour: true}, &fake{name: "fixed", j: j, honour: true}
	b := budgeted{&fake{name: "budgeted", j: j, honour: true}, 70 * time.Second}
	l := New([]Part{{Name: "default", Component: def}, {Name: "fixed", Component: fixed, StopTimeout: 3 * time.Second},
		{Name: "budgeted", Component: b, StopTimeout: time.Second}})
	require.NoError(t, l.Start(context.Background()))
	l.Stop()
	assert.Equal(t, DefaultStopTimeout, def.sawDeadline)
	assert.Equal(t, 3*time.Second, fixed.sawDeadline)
	assert.Equal(t, 70*time.Second, b.sawDeadline, "a Budgeted part's own deadline wins")
}

func TestNewRefusesBadWiring(t *testing.T) {
	j := &journal{}
	assert.PanicsWithValue(t, `lifecycle: two parts are named "a"`, func() { New(parts(j, "a", "a")) })
	assert.Panics(t, func() { New([]Part{{Name: "x"}}) })
}

func TestFuncs(t *testing.T) {
	var did []string
	c := Funcs{StartFunc: func(context.Context) error { did = append(did, "start"); return nil }}
	require.NoError(t, c.Start(context.Background()))
	require.NoError(t, c.Stop(context.Background()), "a nil StopFunc does nothing")
	assert.Equal(t, []string{"start"}, did)
}
