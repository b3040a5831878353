package messages

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

// The names are part of kubelet's surface: metric labels (probe_type), event messages
// ("Liveness probe failed: ...") and logs.
func TestNames(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{Liveness.String(), "Liveness"},
		{Readiness.String(), "Readiness"},
		{Startup.String(), "Startup"},
		{ProbeType(666).String(), "UNKNOWN"},
		{Success.String(), "Success"},
		{Failure.String(), "Failure"},
		{Unknown.String(), "UNKNOWN"},
		{ProbeKey{PodUID: "uid", Container: "c", Type: Startup}.String(), "uid/c/Startup"},
	} {
		assert.Equal(t, tc.want, tc.got)
	}
}

// kubelet's iota orders: results.Result Unknown=-1, Success=0, Failure=1; the zero value of a
// worker's lastResult is Success.
func TestKubeletValues(t *testing.T) {
	assert.Equal(t, Result(-1), Unknown)
	assert.Equal(t, Result(0), Success)
	assert.Equal(t, Result(1), Failure)
	var zero Result
	assert.Equal(t, Success, zero)
	assert.Equal(t, []ProbeType{Startup, Readiness, Liveness}, ProbeTypes, "AddPod's creation order")
}

func TestSpec(t *testing.T) {
	l, r, s := &v1.Probe{PeriodSeconds: 1}, &v1.Probe{PeriodSeconds: 2}, &v1.Probe{PeriodSeconds: 3}
	c := &v1.Container{LivenessProbe: l, ReadinessProbe: r, StartupProbe: s}
	assert.Same(t, l, Liveness.Spec(c))
	assert.Same(t, r, Readiness.Spec(c))
	assert.Same(t, s, Startup.Spec(c))
	assert.Nil(t, ProbeType(666).Spec(c))
	assert.Nil(t, Liveness.Spec(&v1.Container{}))
}
