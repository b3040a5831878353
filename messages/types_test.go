package messages

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
