package messages

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// KillContainer asks the runtime to kill a container whose liveness or startup probe failed and,
// when Restart is set, start it again: syncLoop → runtime.
type KillContainer struct {
	Pod         *v1.Pod
	Container   string
	ContainerID ContainerID
	Probe       ProbeType     // Liveness or Startup
	Message     string        // kubelet's Killing text, e.g. "Container web failed liveness probe, will be restarted"
	GracePeriod time.Duration // probe-level terminationGracePeriodSeconds if set, else the pod's (default 30 s)
	Restart     bool          // false when the pod's restartPolicy is Never
}

// Event is a Kubernetes-style event (kubelet's reasons and messages): prober, syncLoop or runtime →
// the embedder's event sink.
type Event struct {
	Time      time.Time
	Type      string // v1.EventTypeNormal or v1.EventTypeWarning
	Reason    string // "Unhealthy", "ProbeWarning", "Killing", "Started", "BackOff", ...
	Message   string
	Pod       types.NamespacedName
	PodUID    types.UID
	FieldPath string // "spec.containers{name}" or "spec.initContainers{name}"; empty for the pod itself
}

// Event reasons kubelet uses for probing and restarts.
const (
	ReasonUnhealthy    = "Unhealthy"
	ReasonProbeWarning = "ProbeWarning"
	ReasonKilling      = "Killing"
)

// ReasonProbeWorkerGaveUp is the warning event reason when a probe worker failed (panicked) too
// often and was stopped; its key then reports Unknown.
const ReasonProbeWorkerGaveUp = "ProbeWorkerGaveUp"

// Reasons of the restart budget's events (actors.WithRestartBudget; not kubelet's: it has no
// budget). RestartBudgetExhausted (Warning): a liveness or startup failure's kill waits for the
// budget; the container keeps running, reported not ready. RestartCancelled (Normal): its probe
// passed again before the budget allowed the kill, which is dropped.
const (
	ReasonRestartBudgetExhausted = "RestartBudgetExhausted"
	ReasonRestartCancelled       = "RestartCancelled"
)
