package messages

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// AddPod asks probeManager to probe a pod: embedder / node (kubelet's SyncPod) → probeManager.
// It starts one worker per probe of every container and restartable init container and is idempotent:
// keys that already have a worker are left alone (the rest of the pod is still added).
type AddPod struct {
	Pod *v1.Pod
}

// RemovePod stops every worker of a pod: embedder / node (kubelet's SyncTerminatingPod, after the
// containers were killed) → probeManager. Safe to repeat and for unknown pods.
type RemovePod struct {
	Pod *v1.Pod
}

// CleanupPods stops every worker whose pod is not in Desired: embedder / node (kubelet's
// HandlePodCleanups housekeeping) → probeManager.
type CleanupPods struct {
	Desired map[types.UID]struct{}
}

// StopLivenessAndStartup stops a terminating pod's liveness and startup workers while readiness keeps
// running: embedder / node (start of kubelet's SyncTerminatingPod) → probeManager.
type StopLivenessAndStartup struct {
	Pod *v1.Pod
}

// SetPodStatus is the container runtime's current view of a pod (phase, container states and IDs,
// restart counts, pod IP): runtime (node's process runtime, an embedder, the fake runtime) →
// statusManager, whenever anything in it changes. statusManager overlays Ready/Started from probe
// results, recomputes the pod conditions and pushes container states on to the probe workers.
type SetPodStatus struct {
	Pod    *v1.Pod
	Status v1.PodStatus
}

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
