package worker

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

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
