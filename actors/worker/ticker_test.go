package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

func TestTickerFirstRunThenPeriod(t *testing.T) {
	tk := NewTicker(10 * time.Second)
	s := tk.Start(t0, 3*time.Second)
	assert.Equal(t, Step{Wake: t0.Add(3 * time.Second)}, s)
	s = tk.Fire(t0.Add(3 * time.Second))
	assert.Equal(t, Step{Run: true, Wake: t0.Add(13 * time.Second)}, s)
	assert.Equal(t, Step{}, tk.Done(t0.Add(4*time.Second)))
	s = tk.Fire(t0.Add(13 * time.Second))
	assert.Equal(t, Step{Run: true, Wake: t0.Add(23 * time.Second)}, s)
}

func TestTickerOverrunCoalesces(t *testing.T) {
	tk := NewTicker(time.Second)
	tk.Start(t0, 0)
	assert.True(t, tk.Fire(t0).Run)
	// The attempt runs 3.5 periods: three ticks arrive, one run follows, then the phase is kept.
	for i := 1; i <= 3; i++ {
		s := tk.Fire(t0.Add(time.Duration(i) * time.Second))
		assert.False(t, s.Run)
		assert.Equal(t, t0.Add(time.Duration(i+1)*time.Second), s.Wake)
	}
	assert.Equal(t, Step{Run: true}, tk.Done(t0.Add(3500*time.Millisecond)))
	assert.Equal(t, Step{}, tk.Done(t0.Add(3600*time.Millisecond)), "one catch-up run, never a burst")
	// A late timer skips missed deadlines.
	s := tk.Fire(t0.Add(6500 * time.Millisecond))
	assert.Equal(t, Step{Run: true, Wake: t0.Add(7 * time.Second)}, s)
}

func TestTickerTriggerResetsPeriod(t *testing.T) {
	tk := NewTicker(10 * time.Second)
	tk.Start(t0, 0)
	tk.Fire(t0)
	tk.Done(t0)
	s := tk.Trigger(t0.Add(4 * time.Second))
	assert.Equal(t, Step{Run: true, Wake: t0.Add(14 * time.Second)}, s)
	// Two triggers while busy: one extra run only (§7.12 manual trigger buffer).
	assert.Equal(t, Step{}, tk.Trigger(t0.Add(5*time.Second)))
	assert.Equal(t, Step{}, tk.Trigger(t0.Add(5*time.Second)))
	s = tk.Done(t0.Add(6 * time.Second))
	assert.Equal(t, Step{Run: true, Wake: t0.Add(16 * time.Second)}, s)
	assert.Equal(t, Step{}, tk.Done(t0.Add(6*time.Second)))
}

func TestTickerTriggerBeforeFirstRun(t *testing.T) {
	tk := NewTicker(10 * time.Second)
	tk.Start(t0, 5*time.Second)
	assert.Equal(t, Step{}, tk.Trigger(t0.Add(time.Second)), "jitter sleep is not interrupted")
	assert.True(t, tk.Fire(t0.Add(5*time.Second)).Run)
	assert.Equal(t, Step{Run: true, Wake: t0.Add(16 * time.Second)}, tk.Done(t0.Add(6*time.Second)))
}

func TestJitter(t *testing.T) {
	half := func() float64 { return 0.5 }
	assert.Equal(t, 5*time.Second, Jitter(t0.Add(9*time.Second), t0, 10*time.Second, half))
	assert.Zero(t, Jitter(t0.Add(10*time.Second), t0, 10*time.Second, half), "created a period after start")
	assert.Zero(t, Jitter(t0, t0, 10*time.Second, nil))
}

type fakeProber struct {
	outs  []probes.Outcome
	errs  []error
	calls int
}

func (f *fakeProber) Probe(context.Context, *v1.Probe, probes.Target) (probes.Outcome, error) {
	i := f.calls
	f.calls++
	if i >= len(f.outs) {
		i = len(f.outs) - 1
	}
	return f.outs[i], f.errs[i]
}

func TestRunProbe(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name   string
		out    probes.Outcome
		err    error
		want   messages.Result
		calls  int
		events []EventText
	}{
		{name: "success", out: probes.Outcome{Result: probes.Success}, want: messages.Success, calls: 1},
		{name: "warning", out: probes.Outcome{Result: probes.Warning, Output: "Probe terminated redirects, Response body: x"},
			want: messages.Success, calls: 1,
			events: []EventText{{"ProbeWarning", "Readiness probe warning: Probe terminated redirects, Response body: x"}}},
		{name: "failure not retried", out: probes.Outcome{Result: probes.Failure, Output: "HTTP probe failed with statuscode: 500"},
			want: messages.Failure, calls: 1,
			events: []EventText{{"Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 500"}}},
		{name: "unknown without error", out: probes.Outcome{Result: probes.Unknown}, want: messages.Failure, calls: 1},
		{name: "error retried 3 times", out: probes.Outcome{Result: probes.Unknown}, err: boom, want: messages.Failure, calls: 3,
			events: []EventText{{"Unhealthy", "Readiness probe errored and resulted in unknown state: boom"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakeProber{outs: []probes.Outcome{tc.out}, errs: []error{tc.err}}
			v := RunProbe(context.Background(), p, messages.Readiness, &v1.Probe{}, probes.Target{})
			assert.Equal(t, tc.want, v.Result)
			assert.Equal(t, tc.calls, p.calls)
			assert.Equal(t, tc.events, v.Events)
			assert.ErrorIs(t, v.Err, tc.err)
		})
	}
	t.Run("error then success", func(t *testing.T) {
		p := &fakeProber{outs: []probes.Outcome{{Result: probes.Unknown}, {Result: probes.Success}}, errs: []error{boom, nil}}
		v := RunProbe(context.Background(), p, messages.Liveness, &v1.Probe{}, probes.Target{})
		assert.NoError(t, v.Err)
		assert.Equal(t, messages.Success, v.Result)
		assert.Equal(t, 2, p.calls)
	})
	t.Run("nil spec", func(t *testing.T) {
		v := RunProbe(context.Background(), nil, messages.Liveness, nil, probes.Target{})
		assert.Equal(t, messages.Success, v.Result)
	})
}
