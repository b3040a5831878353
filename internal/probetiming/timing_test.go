package probetiming

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

const s = time.Second

// timing builds a Timing from whole seconds: delay, period, timeout, success, failure.
func timing(d, p, t, succ, fail int32) Timing {
	return Of(&v1.Probe{InitialDelaySeconds: d, PeriodSeconds: p, TimeoutSeconds: t, SuccessThreshold: succ, FailureThreshold: fail})
}

func ptr(t Timing) *Timing { return &t }

func TestOfReadsRefusedValuesAsTheClosestAllowed(t *testing.T) {
	assert.Equal(t, Timing{Delay: 0, Period: s, Timeout: s, Success: 1, Failure: 1}, timing(-5, 0, -1, 0, -3))
	assert.Equal(t, Timing{Delay: 7 * s, Period: 10 * s, Timeout: 2 * s, Success: 1, Failure: 3}, timing(7, 10, 2, 1, 3))
}

// Every case is worked out by hand in its comment: P period, T timeout, F failure threshold, D
// initial delay; the first tick after a failure begins comes at once at the earliest and a period
// later at the latest.
func TestFailureWindow(t *testing.T) {
	for name, c := range map[string]struct {
		t    Timing
		want Window
	}{
		// kubelet's defaults: failures at 0, 10, 20 → 20 s; at the latest 10 (first tick) + 2×10 + 1.
		"defaults P10 T1 F3": {timing(0, 10, 1, 1, 3), Window{20 * s, 31 * s}},
		// The first failure is the last: at once, or a period and a timeout later.
		"F1 P1 T1": {timing(0, 1, 1, 1, 1), Window{0, 2 * s}},
		// T ≥ P: a hanging attempt delays the next tick until it ends: 5 + 2×10 + 10.
		"T10 over P5 F3": {timing(0, 5, 10, 1, 3), Window{10 * s, 35 * s}},
		// The delay does not matter once the container runs: 4×3 = 12, 3 + 4×3 + 1 = 16.
		"D30 P3 T1 F5": {timing(30, 3, 1, 1, 5), Window{12 * s, 16 * s}},
	} {
		t.Run(name, func(t *testing.T) { assert.Equal(t, c.want, c.t.FailureWindow()) })
	}
}

func TestStartWindow(t *testing.T) {
	for name, c := range map[string]struct {
		t    Timing
		want Window
	}{
		// The docs' startup probe (F30 × P10 = "300 s"): the 30th failure can come 290 s after the
		// start (first tick right at it), or 10 + 29×10 + 1 = 301 s.
		"startup F30 P10": {timing(0, 10, 1, 1, 30), Window{290 * s, 301 * s}},
		// The docs' liveness example (D15, P20): 15 + 2×20 = 55; 15 + 20 + 2×20 + 1 = 76.
		"liveness D15 P20 F3": {timing(15, 20, 1, 1, 3), Window{55 * s, 76 * s}},
		// One failure kills: the first tick after the delay.
		"D5 P10 F1": {timing(5, 10, 1, 1, 1), Window{5 * s, 16 * s}},
	} {
		t.Run(name, func(t *testing.T) { assert.Equal(t, c.want, c.t.StartWindow()) })
	}
}

func TestStartedWindow(t *testing.T) {
	assert.Equal(t, Window{}, StartedWindow(nil), "no startup probe: started as soon as it runs")
	// The first startup tick at the start, or a period later plus the attempt.
	assert.Equal(t, Window{0, 11 * s}, StartedWindow(ptr(timing(0, 10, 1, 1, 30))))
	assert.Equal(t, Window{20 * s, 33 * s}, StartedWindow(ptr(timing(20, 10, 3, 1, 3))))
}

func TestReadyWindow(t *testing.T) {
	for name, c := range map[string]struct {
		startup    *Timing
		readiness  Timing
		jitter     bool
		wantWindow Window
	}{
		// Started at once; the manual trigger probes at the container's start: ready within one
		// timeout.
		"no startup, D0 P10 T1": {nil, timing(0, 10, 1, 1, 3), false, Window{0, 1 * s}},
		// The node just started: the worker's first run (where the remembered trigger takes
		// effect) is up to a period away: 10 + 1.
		"no startup, D0 P10 T1, jitter": {nil, timing(0, 10, 1, 1, 3), true, Window{0, 11 * s}},
		// A trigger before the delay only restarts the period: the first tick after 5 s comes
		// up to 10 s later, then 1 s: 16; jitter changes nothing (its bound 11 is lower).
		"no startup, D5 P10 T1":         {nil, timing(5, 10, 1, 1, 3), false, Window{5 * s, 16 * s}},
		"no startup, D5 P10 T1, jitter": {nil, timing(5, 10, 1, 1, 3), true, Window{5 * s, 16 * s}},
		// Three successes: triggered at 0, then two periods: 20 at the earliest, 2×10 + 2 = 22;
		// with jitter the first run is up to 10 s away: 32.
		"no startup, S3 P10 T2":         {nil, timing(0, 10, 2, 3, 3), false, Window{20 * s, 22 * s}},
		"no startup, S3 P10 T2, jitter": {nil, timing(0, 10, 2, 3, 3), true, Window{20 * s, 32 * s}},
		// Started at 0..11 s (startup P10 T1); the trigger at the start probes at once: 11 + 1.
		"startup P10, readiness D0 P5": {ptr(timing(0, 10, 1, 1, 30)), timing(0, 5, 1, 1, 3), false, Window{0, 12 * s}},
		// Started within 0..3 s, before the readiness delay of 10 s: the first tick after it,
		// up to 10 + 10 + 1.
		"startup P2, readiness D10 P10": {ptr(timing(0, 2, 1, 1, 30)), timing(10, 10, 1, 1, 3), false, Window{10 * s, 21 * s}},
		// Started 20..31 s, always after the readiness delay of 5 s: probed at the start: 31 + 1;
		// the node's jitter is over by then.
		"startup D20, readiness D5":         {ptr(timing(20, 10, 1, 1, 3)), timing(5, 10, 1, 1, 3), false, Window{20 * s, 32 * s}},
		"startup D20, readiness D5, jitter": {ptr(timing(20, 10, 1, 1, 3)), timing(5, 10, 1, 1, 3), true, Window{20 * s, 32 * s}},
		// T ≥ P: the second success can come a timeout after the first: 0 + 10 + 10; earliest a
		// period after the trigger.
		"no startup, S2 P5 T10": {nil, timing(0, 5, 10, 2, 3), false, Window{5 * s, 20 * s}},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, c.wantWindow, ReadyWindow(c.startup, c.readiness, c.jitter))
		})
	}
}
