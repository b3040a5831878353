package worker

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// Prober runs one attempt of a probe (package probes implements it). Probe must be safe for
// concurrent use and return soon after ctx is cancelled: a stopping worker cancels its in-flight
// attempt and waits for it, so a Probe that ignores ctx holds up RemovePod and Tree.Stop.
type Prober interface {
	Probe(ctx context.Context, spec *v1.Probe, t probes.Target) (probes.Outcome, error)
}

// MaxTries is kubelet's maxProbeRetries: an attempt is repeated while the prober returns an error.
const MaxTries = 3

// EventText is an event a probe attempt asks for (type Warning; the shell adds time and object).
type EventText struct {
	Reason  string
	Message string
}

// Verdict is the wrapped outcome of one attempt (kubelet's prober.probe).
type Verdict struct {
	Result  messages.Result
	Err     error // non-nil: the worker discards the result
	Outcome probes.Outcome
	Tries   int
	Events  []EventText
}

// RunProbe is kubelet's prober.probe (spec §3.1): up to MaxTries while the prober errs, then maps
// probes.Result to a worker result with kubelet's events:
//
//	error       → Failure + err (discarded), Unhealthy "<Type> probe errored and resulted in <result> state: <err>"
//	Success     → Success
//	Warning     → Success, ProbeWarning "<Type> probe warning: <output>"
//	Failure     → Failure, Unhealthy "<Type> probe failed: <output>"
//	Unknown     → Failure, no event
//
// A nil spec is a Success. RunProbe stops retrying when ctx is done.
func RunProbe(ctx context.Context, p Prober, pt messages.ProbeType, spec *v1.Probe, target probes.Target) Verdict {
	if spec == nil {
		return Verdict{Result: messages.Success}
	}
	var (
		out probes.Outcome
		err error
		n   int
	)
	for n = 1; ; n++ {
		out, err = p.Probe(ctx, spec, target)
		if err == nil || n >= MaxTries || ctx.Err() != nil {
			break
		}
	}
	v := Verdict{Outcome: out, Tries: n}
	if err != nil {
		v.Result = messages.Failure
		v.Err = err
		v.Events = []EventText{{messages.ReasonUnhealthy,
			fmt.Sprintf("%s probe errored and resulted in %s state: %s", pt, out.Result, err)}}
		return v
	}
	switch out.Result {
	case probes.Success:
		v.Result = messages.Success
	case probes.Warning:
		v.Result = messages.Success
		v.Events = []EventText{{messages.ReasonProbeWarning, fmt.Sprintf("%s probe warning: %s", pt, out.Output)}}
	case probes.Failure:
		v.Result = messages.Failure
		v.Events = []EventText{{messages.ReasonUnhealthy, fmt.Sprintf("%s probe failed: %s", pt, out.Output)}}
	default:
		v.Result = messages.Failure
	}
	return v
}
