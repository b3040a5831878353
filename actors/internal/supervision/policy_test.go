package supervision

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestPolicyValidate(t *testing.T) {
	require.NoError(t, DefaultPolicy().Validate())
	tests := []struct {
		name   string
		mutate func(*Policy)
		want   string
	}{
		{"zero initial", func(p *Policy) { p.Initial = 0 }, "policy.Initial"},
		{"max below initial", func(p *Policy) { p.Max = p.Initial / 2 }, "policy.Max"},
		{"shrinking multiplier", func(p *Policy) { p.Multiplier = 0.5 }, "policy.Multiplier"},
		{"jitter above one", func(p *Policy) { p.Jitter = 1.5 }, "policy.Jitter"},
		{"negative jitter", func(p *Policy) { p.Jitter = -0.1 }, "policy.Jitter"},
		{"negative reset", func(p *Policy) { p.ResetAfter = -time.Second }, "policy.ResetAfter"},
		{"negative max failures", func(p *Policy) { p.MaxFailures = -1 }, "policy.MaxFailures"},
		{"negative window", func(p *Policy) { p.Window = -time.Second }, "policy.Window"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultPolicy()
			tc.mutate(&p)
			err := p.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

type failure struct {
	at        time.Duration // since t0
	rnd       float64
	wantDelay time.Duration
	wantGive  bool
}

func TestTrackerFailure(t *testing.T) {
	base := Policy{Initial: time.Second, Max: 10 * time.Second, Multiplier: 2}
	tests := []struct {
		name     string
		policy   func(Policy) Policy
		failures []failure
	}{
		{
			name:   "doubles then caps at Max",
			policy: func(p Policy) Policy { return p },
			failures: []failure{
				{at: 0, wantDelay: 1 * time.Second},
				{at: 2 * time.Second, wantDelay: 2 * time.Second},
				{at: 5 * time.Second, wantDelay: 4 * time.Second},
				{at: 10 * time.Second, wantDelay: 8 * time.Second},
				{at: 20 * time.Second, wantDelay: 10 * time.Second},
				{at: 40 * time.Second, wantDelay: 10 * time.Second},
			},
		},
		{
			name:   "zero multiplier means 2",
			policy: func(p Policy) Policy { p.Multiplier = 0; return p },
			failures: []failure{
				{at: 0, wantDelay: time.Second},
				{at: time.Second, wantDelay: 2 * time.Second},
			},
		},
		{
			name:   "multiplier 3",
			policy: func(p Policy) Policy { p.Multiplier = 3; p.Max = time.Minute; return p },
			failures: []failure{
				{at: 0, wantDelay: 1 * time.Second},
				{at: 1 * time.Second, wantDelay: 3 * time.Second},
				{at: 4 * time.Second, wantDelay: 9 * time.Second},
				{at: 13 * time.Second, wantDelay: 27 * time.Second},
				{at: 40 * time.Second, wantDelay: time.Minute},
			},
		},
		{
			name:   "jitter only shortens, never exceeds Max",
			policy: func(p Policy) Policy { p.Jitter = 0.5; return p },
			failures: []failure{
				{at: 0, rnd: 0, wantDelay: time.Second},
				{at: time.Second, rnd: 0.5, wantDelay: 1500 * time.Millisecond}, // 2 s - 25%
				{at: 3 * time.Second, rnd: 1, wantDelay: 2 * time.Second},       // 4 s - 50%
				{at: 10 * time.Second, rnd: 7, wantDelay: 4 * time.Second},      // rnd clamped to 1
				{at: 20 * time.Second, rnd: 0, wantDelay: 10 * time.Second},     // capped base
			},
		},
		{
			name:   "reset after a stable period counted from the restart",
			policy: func(p Policy) Policy { p.ResetAfter = 30 * time.Second; return p },
			failures: []failure{
				{at: 0, wantDelay: 1 * time.Second},                // restarted at 1 s
				{at: 20 * time.Second, wantDelay: 2 * time.Second}, // ran 19 s: no reset; restarted at 22 s
				{at: 51 * time.Second, wantDelay: 4 * time.Second}, // ran 29 s: no reset; restarted at 55 s
				{at: 85 * time.Second, wantDelay: 1 * time.Second}, // ran 30 s: reset
				{at: 87 * time.Second, wantDelay: 2 * time.Second},
			},
		},
		{
			name:   "gives up at MaxFailures within Window",
			policy: func(p Policy) Policy { p.MaxFailures = 3; p.Window = time.Minute; return p },
			failures: []failure{
				{at: 0, wantDelay: time.Second},
				{at: 10 * time.Second, wantDelay: 2 * time.Second},
				{at: 20 * time.Second, wantGive: true},
			},
		},
		{
			name:   "failures that slide out of the Window are forgotten",
			policy: func(p Policy) Policy { p.MaxFailures = 3; p.Window = time.Minute; p.Max = time.Second; return p },
			failures: []failure{
				{at: 0, wantDelay: time.Second},
				{at: 30 * time.Second, wantDelay: time.Second},
				{at: 61 * time.Second, wantDelay: time.Second}, // the one at 0 s is out: 2 in window
				{at: 80 * time.Second, wantGive: true},         // 30 s, 61 s, 80 s
			},
		},
		{
			name:   "zero Window never forgets",
			policy: func(p Policy) Policy { p.MaxFailures = 2; p.Max = time.Second; return p },
			failures: []failure{
				{at: 0, wantDelay: time.Second},
				{at: 24 * time.Hour, wantGive: true},
			},
		},
		{
			name:   "zero MaxFailures never gives up",
			policy: func(p Policy) Policy { p.Max = time.Second; return p },
			failures: func() []failure {
				var fs []failure
				for i := range 50 {
					fs = append(fs, failure{at: time.Duration(i) * time.Millisecond, wantDelay: time.Second})
				}
				return fs
			}(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.policy(base)
			require.NoError(t, p.Validate())
			tr := NewTracker(p)
			for i, f := range tc.failures {
				delay, give := tr.Failure(t0.Add(f.at), f.rnd)
				assert.Equal(t, f.wantGive, give, "failure %d at %v: give up", i, f.at)
				if !f.wantGive {
					assert.Equal(t, f.wantDelay, delay, "failure %d at %v: delay", i, f.at)
				}
			}
		})
	}
}

func TestTrackerKeepsBoundedHistory(t *testing.T) {
	tr := NewTracker(Policy{Initial: time.Second, Max: time.Second, MaxFailures: 100, Window: 100 * time.Millisecond})
	for i := range 10_000 {
		_, give := tr.Failure(t0.Add(time.Duration(i)*2*time.Millisecond), 0) // 50 per window
		require.False(t, give, "failure %d", i)
	}
	assert.LessOrEqual(t, len(tr.failures), 100)
	assert.LessOrEqual(t, cap(tr.failures), 128)
}
