package worker

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/messages"
)

// Config describes one probe worker (kubelet's newWorker arguments).
type Config struct {
	Type messages.ProbeType
	// Spec is the container's probe of Type; the Core reads its InitialDelaySeconds and thresholds.
	Spec *v1.Probe
	// RestartNever is true when the pod's restartPolicy is Never.
	RestartNever bool
	// Sidecar is true for a restartable init container (restartPolicy Always). A terminated sidecar
	// is always restarted, so its worker keeps going (kubelet ≥1.34 behaviour; 1.30–1.33 exits).
	Sidecar bool
	// Deleting is true when the pod object the worker was created from had a DeletionTimestamp.
	Deleting bool
}

// InitialValue is the result a worker publishes for a new container ID: readiness Failure,
// liveness Success, startup Unknown.
func InitialValue(t messages.ProbeType) messages.Result {
	switch t {
	case messages.Readiness:
		return messages.Failure
	case messages.Startup:
		return messages.Unknown
	default:
		return messages.Success
	}
}

// Decision is what a Core asks its shell to do, in this order: remove the cached result of
// RemoveID, publish each of Set for ContainerID, start an attempt against ContainerID when Probe,
// and exit when Exit (the shell then removes ContainerID's result, as kubelet's deferred cleanup).
type Decision struct {
	RemoveID    messages.ContainerID
	ContainerID messages.ContainerID
	Set         []messages.Result
	Probe       bool
	Exit        bool
}

// Core is kubelet's per-key worker state (spec §2.1) and doProbe logic (§2.4). Not safe for
// concurrent use; the actor shell serialises calls.
type Core struct {
	cfg      Config
	initial  messages.Result
	view     messages.ContainerView
	inFlight bool
	attempt  messages.ContainerID // container ID the in-flight attempt targets

	containerID messages.ContainerID
	lastResult  messages.Result // zero value is Success, as in kubelet
	resultRun   int32
	onHold      bool
}

// New returns a Core for cfg. cfg.Spec must not be nil.
func New(cfg Config) *Core {
	return &Core{cfg: cfg, initial: InitialValue(cfg.Type)}
}

// SetView records the latest pushed view of the container. It takes effect at the next Begin, as
// kubelet's worker reads the status manager's cache only at the start of doProbe.
func (c *Core) SetView(v messages.ContainerView) { c.view = v }

// View returns the latest pushed view.
func (c *Core) View() messages.ContainerView { return c.view }

// ContainerID is the container the worker currently tracks ("" before the first one is seen).
func (c *Core) ContainerID() messages.ContainerID { return c.containerID }

// OnHold reports whether probing is suspended until a new container ID appears.
func (c *Core) OnHold() bool { return c.onHold }

// ResultRun is the length of the current run of identical attempt results.
func (c *Core) ResultRun() int { return int(c.resultRun) }

// InFlight reports whether an attempt has been started and not completed.
func (c *Core) InFlight() bool { return c.inFlight }

// Abandon forgets an in-flight attempt without counting it (its goroutine was lost, e.g. the actor
// restarted after a panic).
func (c *Core) Abandon() { c.inFlight = false }

// Begin is doProbe steps 1–9 at time now. When it returns Probe, the shell runs an attempt and
// reports it with Complete; until then Begin returns no further attempt.
func (c *Core) Begin(now time.Time) Decision {
	v := c.view
	d := Decision{ContainerID: c.containerID}
	if c.inFlight {
		return d
	}
	// 1. No status for the pod yet.
	if !v.PodStatusKnown {
		return d
	}
	// 2. Terminal phase: exit.
	if v.Phase == v1.PodFailed || v.Phase == v1.PodSucceeded {
		d.Exit = true
		return d
	}
	// 3. Container not found (or no ID yet).
	if !v.Found || v.ContainerID == "" {
		return d
	}
	// 4. New container: forget the old result, publish the initial value, release the hold.
	if c.containerID != v.ContainerID {
		d.RemoveID = c.containerID
		c.containerID = v.ContainerID
		d.ContainerID = c.containerID
		d.Set = append(d.Set, c.initial)
		c.onHold = false
	}
	// 5. Held after a liveness failure or the startup threshold.
	if c.onHold {
		return d
	}
	// 6. Not running: Failure; exit only when it terminated and will never restart.
	if !v.Running {
		d.Set = append(d.Set, messages.Failure)
		d.Exit = v.Terminated && c.cfg.RestartNever && !c.cfg.Sidecar
		return d
	}
	// 7. Graceful deletion (liveness and startup only): Success, then exit.
	if c.cfg.Deleting && c.cfg.Type != messages.Readiness {
		d.Set = append(d.Set, messages.Success)
		d.Exit = true
		return d
	}
	// 8. Initial delay, in whole seconds since the container started.
	if int32(now.Sub(v.StartedAt).Seconds()) < c.cfg.Spec.InitialDelaySeconds {
		return d
	}
	// 9. Startup gating.
	if v.Started {
		if c.cfg.Type == messages.Startup {
			return d
		}
	} else if c.cfg.Type != messages.Startup {
		return d
	}
	c.inFlight = true
	c.attempt = c.containerID
	d.Probe = true
	return d
}

// Complete is doProbe steps 10–15 for the attempt Begin started. errored means the prober wrapper
// returned an error: the result is discarded (step 10). An attempt whose container was replaced
// while it ran (the pushed view now names another container ID) is discarded too.
func (c *Core) Complete(result messages.Result, errored bool) Decision {
	d := Decision{ContainerID: c.containerID}
	if !c.inFlight {
		return d
	}
	c.inFlight = false
	if errored || c.attempt != c.containerID || c.view.ContainerID != c.attempt || c.onHold {
		return d
	}
	// 12. Run counting.
	if c.lastResult == result {
		c.resultRun++
	} else {
		c.lastResult = result
		c.resultRun = 1
	}
	// 13. Thresholds.
	if (result == messages.Failure && c.resultRun < c.cfg.Spec.FailureThreshold) ||
		(result == messages.Success && c.resultRun < c.cfg.Spec.SuccessThreshold) {
		return d
	}
	// 14. Publish.
	d.Set = append(d.Set, result)
	// 15. Hold after a liveness failure and after the startup threshold in either direction.
	if (c.cfg.Type == messages.Liveness && result == messages.Failure) || c.cfg.Type == messages.Startup {
		c.onHold = true
		c.resultRun = 0
	}
	return d
}
