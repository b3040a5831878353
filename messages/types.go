package messages

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ProbeType is the kind of probe, in kubelet's iota order.
type ProbeType int

const (
	// Liveness probes restart a container that stops being healthy.
	Liveness ProbeType = iota
	// Readiness probes gate a container's Ready flag.
	Readiness
	// Startup probes hold liveness and readiness off until the container has started.
	Startup
)

// String returns kubelet's capitalised name ("Liveness", "Readiness", "Startup"), used in metric
// labels, event messages and logs.
func (t ProbeType) String() string {
	switch t {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	default:
		return "UNKNOWN"
	}
}

// Spec returns the container's probe of this type (nil when the container has none).
func (t ProbeType) Spec(c *v1.Container) *v1.Probe {
	switch t {
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	case Startup:
		return c.StartupProbe
	default:
		return nil
	}
}

// ProbeTypes lists every probe type in the order AddPod creates workers (startup, readiness, liveness).
var ProbeTypes = []ProbeType{Startup, Readiness, Liveness}

// Result is a probe worker's published verdict for a container (kubelet's results.Result).
type Result int

const (
	// Unknown is the startup probe's initial value.
	Unknown Result = iota - 1
	// Success is healthy / ready / started.
	Success
	// Failure is unhealthy / not ready / failed to start.
	Failure
)

// String returns "Success", "Failure" or "UNKNOWN", as kubelet does.
func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	default:
		return "UNKNOWN"
	}
}

// ContainerID is a container's runtime identity in kubelet's "<type>://<id>" form. It changes on every
// restart; the empty string means "no container yet".
type ContainerID string

// ProbeKey identifies one probe worker: kubelet's probeKey {pod UID, container name, probe type}.
type ProbeKey struct {
	PodUID    types.UID
	Container string
	Type      ProbeType
}

// String renders the key as "<uid>/<container>/<type>" for logs.
func (k ProbeKey) String() string {
	return fmt.Sprintf("%s/%s/%s", k.PodUID, k.Container, k.Type)
}
