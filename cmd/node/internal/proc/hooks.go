package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/probes"
)

// The hooks, as kubelet names them in logs.
const (
	hookPostStart = "PostStart"
	hookPreStop   = "PreStop"
)

// kubelet 1.37's events for failed hooks (pkg/kubelet/events), whose messages carry no detail so
// that no secret leaks into an event; the detail is logged.
const (
	reasonFailedPostStartHook   = "FailedPostStartHook"
	reasonFailedPreStopHook     = "FailedPreStopHook"
	reasonLifecycleHTTPFallback = "LifecycleHTTPFallback"
)

// errSleepCut is kubelet's error for a sleep hook whose container ended first.
var errSleepCut = errors.New("container terminated before sleep hook finished")

// preStopRun is a kill waiting for its container's preStop hook: SIGTERM follows when the hook
// ends or the grace period has passed, with what is left of the grace period.
type preStopRun struct {
	grace time.Duration
	start time.Time
	timer clock.Timer // the grace period's end
}

func lifecycleOf(c *v1.Container) *v1.Lifecycle {
	if c.Lifecycle == nil {
		return &v1.Lifecycle{}
	}
	return c.Lifecycle
}

// startHook runs hook h of r's container on a goroutine of its own, which posts hookDone when it
// ends; r.hook cancels it (the instance exited, a kill began, Detach).
func (pr *podRunner) startHook(r *running, hook string, h *v1.LifecycleHandler) {
	ctx, cancel := context.WithCancel(context.Background())
	r.hook = cancel
	spec := pr.state.byName[r.name].spec // a copy: the goroutine reads no pod state
	ref := pr.state.podRef()
	go func() { // ends with the hook: its command, request or sleep ends, or ctx is cancelled
		fellBack, msg, err := pr.runHook(ctx, &spec, r.id, ref, h)
		pr.post(hookDone{name: r.name, id: r.id, hook: hook, err: err, msg: msg, fellBack: fellBack})
	}()
}

// runHook is kubelet's handler runner (pkg/kubelet/lifecycle/handlers.go) for one handler of
// container c, instance id: exec runs in the container as an exec probe does (its env and working
// directory, its own process group, the guard) with no timeout but ctx; httpGet is
// probes.HTTPHook against the pod's IP; sleep waits on the runtime's clock. msg is kubelet's text
// for a failure.
func (pr *podRunner) runHook(ctx context.Context, c *v1.Container, id, podRef string, h *v1.LifecycleHandler) (fellBack bool, msg string, err error) {
	switch {
	case h.Exec != nil:
		opts, err := pr.rt.resolve(id)
		if err != nil {
			return false, fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q", h.Exec.Command, c.Name, podRef, err, ""), err
		}
		var out bytes.Buffer
		if err := probes.RunLocal(ctx, h.Exec.Command, opts, &out); err != nil {
			return false, fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q", h.Exec.Command, c.Name, podRef, err, out.String()), err
		}
		return false, "", nil
	case h.HTTPGet != nil:
		fellBack, err := probes.HTTPHook(ctx, h.HTTPGet, c, PodIP)
		if err != nil {
			return false, fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, podRef, err), err
		}
		return fellBack, "", nil
	case h.Sleep != nil:
		done := make(chan struct{})
		t := pr.rt.opts.Clock.AfterFunc(time.Duration(h.Sleep.Seconds)*time.Second, func() { close(done) })
		select {
		case <-done:
			return false, "", nil
		case <-ctx.Done():
			t.Stop()
			return false, fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v", h.Sleep.Seconds, c.Name, podRef, errSleepCut), errSleepCut
		}
	default: // Validate refuses tcpSocket
		err := fmt.Errorf("invalid handler: %v", h)
		return false, fmt.Sprintf("Cannot run handler: %v", err), err
	}
}

// hookEnded handles hookDone: the postStart hook of a running instance lets the pod's next
// containers start, or, failed, kills the instance (kubelet: event FailedPostStartHook, then a kill
// with the message FailedPostStartHook, preStop included); a preStop hook ends the wait before
// SIGTERM. A hook of an instance that is gone, or whose kill began since, changes nothing.
func (pr *podRunner) hookEnded(m hookDone) {
	r, ok := pr.procs[m.name]
	if !ok || r.id != m.id {
		return
	}
	k := pr.state.byName[m.name].kind
	if m.fellBack {
		pr.event(k, m.name, v1.EventTypeWarning, reasonLifecycleHTTPFallback, "request to HTTPS lifecycle hook got HTTP response, retry with HTTP succeeded")
	}
	switch m.hook {
	case hookPostStart:
		if !r.postStart {
			return // a kill began meanwhile and cancelled it
		}
		r.hook() // releases its context
		r.postStart, r.hook = false, nil
		if m.err == nil {
			return
		}
		pr.log.Error("PostStart hook failed", "container", m.name, "container_id", m.id, "error", m.err, "message", m.msg)
		pr.event(k, m.name, v1.EventTypeWarning, reasonFailedPostStartHook, "PostStartHook failed")
		pr.event(k, m.name, v1.EventTypeNormal, "Killing", "FailedPostStartHook")
		pr.beginKill(r, podapi.GracePeriod(pr.pod))
	case hookPreStop:
		if m.err != nil {
			pr.log.Error("PreStop hook failed", "container", m.name, "container_id", m.id, "error", m.err, "message", m.msg)
			pr.event(k, m.name, v1.EventTypeWarning, reasonFailedPreStopHook, "PreStopHook failed")
		}
		pr.preStopOver(r)
	default:
	}
}

// preStopOver sends SIGTERM once r's preStop hook has ended or its grace period has passed (the
// first of the two), with the grace period less the whole seconds the hook took, at least kubelet's
// 2 s floor (kubelet's killContainer). A hook still running then goes on until the container ends.
func (pr *podRunner) preStopOver(r *running) {
	ps := r.preStop
	if ps == nil {
		return // over already
	}
	r.preStop = nil
	ps.timer.Stop()
	took := pr.rt.opts.Clock.Now().Sub(ps.start).Truncate(time.Second)
	pr.signalTerm(r, ps.grace-took)
}

// endHooks stops what r's hooks hold: the hook under way and the preStop wait.
func (r *running) endHooks() {
	if r.hook != nil {
		r.hook()
		r.hook = nil
	}
	if r.preStop != nil {
		r.preStop.timer.Stop()
		r.preStop = nil
	}
	r.postStart = false
}

// postStartRunning reports whether a postStart hook of the pod runs: no container starts meanwhile,
// as kubelet's SyncPod waits for it before starting the next.
func (pr *podRunner) postStartRunning() bool {
	for _, r := range pr.procs {
		if r.postStart {
			return true
		}
	}
	return false
}
