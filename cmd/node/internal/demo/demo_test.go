package demo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/probes"
)

func TestScript(t *testing.T) {
	s := Script{StartAfter: 6 * time.Second, UnreadyAt: 14 * time.Second, UnreadyFor: 6 * time.Second, FailAt: 25 * time.Second}
	cases := []struct {
		at     time.Duration
		failed bool
		want   State
	}{
		{0, false, State{Started: false, Ready: false, Healthy: true}},
		{6 * time.Second, false, State{Started: true, Ready: true, Healthy: true}},
		{14 * time.Second, false, State{Started: true, Ready: false, Healthy: true}},
		{19 * time.Second, false, State{Started: true, Ready: false, Healthy: true}},
		{20 * time.Second, false, State{Started: true, Ready: true, Healthy: true}},
		{25 * time.Second, false, State{Started: true, Ready: false, Healthy: false}},
		{25 * time.Second, true, State{Started: true, Ready: true, Healthy: true}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, s.At(tc.at, tc.failed), "at %s failed=%t", tc.at, tc.failed)
	}
}

func TestDemoPodIsValid(t *testing.T) {
	pod := Pod("/bin/node", t.TempDir(), Ports{HTTP: 1001, TCP: 1002, GRPC: 1003})
	probes.SetDefaults(pod)
	assert.Empty(t, probes.ValidatePod(pod))
	kinds := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		for _, pr := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if pr == nil {
				continue
			}
			switch {
			case pr.HTTPGet != nil:
				kinds["http"] = true
			case pr.TCPSocket != nil:
				kinds["tcp"] = true
			case pr.GRPC != nil:
				kinds["grpc"] = true
			case pr.Exec != nil:
				kinds["exec"] = true
			}
		}
	}
	assert.Len(t, kinds, 4, "all four probe kinds: %v", kinds)
}
