package proc

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/restartpolicy"
)

// decide is one kubelet SyncPod for this pod: what to start, stop and when to look again. Three
// decisions, in kubelet's order: the init containers (sidecars among them) until initialization is
// complete, then the app containers, then the sidecars while (or once no longer) the app runs.
//
// fenced says node's cluster lease has run out (Runtime.SetLease): then nothing starts — every
// container that would start now (first start, or restart with its back-off over) waits instead,
// shown Waiting, Fenced, and no back-off step is spent on it — while stops and back-off go on as
// ever. A later decide with the lease held again starts them.
//
// postStart says a container's postStart hook runs: nothing starts either (no back-off step spent,
// nothing shown), as kubelet's SyncPod runs the hook before it starts the next container. For the
// same reason a container with a postStart hook is the last start of a plan: the ones after it
// wait for the hook.
func (p *podState) decide(now time.Time, fenced, postStart bool) plan {
	var pl plan
	p.fenced = fenced
	p.hold = postStart
	for _, c := range p.containers {
		c.fenced = false // as this decision finds it
	}
	if p.terminating {
		return pl
	}
	if p.decideDeadline(now, &pl) {
		return pl
	}
	if p.restartingAll && !p.decideRestartAll(now, &pl) {
		return pl
	}
	if !p.decideInit(now, &pl) {
		return pl
	}
	p.initialized = true
	appActive := p.decideApps(now, &pl)
	p.decideSidecars(now, appActive, &pl)
	return pl
}

// decideDeadline is kubelet's activeDeadlineHandler: once the pod has been running for
// activeDeadlineSeconds since its start time, it is Failed (DeadlineExceeded, with kubelet's
// event, once) and every running container is stopped with the pod's grace period; nothing starts
// again. A pod that has already Succeeded stays so. Before the deadline, decide wakes at it. It
// reports whether the deadline has passed (the decision is then only that).
func (p *podState) decideDeadline(now time.Time, pl *plan) (exceeded bool) {
	if d := p.pod.Spec.ActiveDeadlineSeconds; d != nil && !p.deadlineExceeded {
		deadline := p.startTime.Add(time.Duration(*d) * time.Second)
		if now.Before(deadline) {
			if pl.WakeAt.IsZero() || deadline.Before(pl.WakeAt) {
				pl.WakeAt = deadline
			}
			return false
		}
		if p.status().Phase == v1.PodSucceeded {
			return false
		}
		p.deadlineExceeded = true
		pl.Events = append(pl.Events, event{Type: v1.EventTypeNormal, Reason: ReasonDeadlineExceeded, Message: messageDeadlineExceeded})
	}
	if !p.deadlineExceeded {
		return false
	}
	for _, c := range p.containers {
		if c.running() {
			pl.Stop = append(pl.Stop, c.spec.Name)
		}
	}
	return true
}

// decideRestartAll is kubelet 1.37's RestartAllContainers restart in place (KEP-5532): kill every
// running container (grace 0, so kubelet's 2 s floor) and, once none runs, remove them all
// (resetForRestartAll) and report true: the pod then starts again from its first init container,
// with no back-off, in this same decision. kubelet kills one container after another (the others
// first, the one whose exit triggered it last); node kills them all at once.
func (p *podState) decideRestartAll(now time.Time, pl *plan) (reset bool) {
	for _, c := range p.containers {
		if c.running() {
			pl.Kill = append(pl.Kill, c.spec.Name)
		}
	}
	if len(pl.Kill) > 0 {
		return false
	}
	p.resetForRestartAll(now)
	return true
}

// decideInit walks the init containers in spec order and reports whether initialization is
// complete (the app containers may start). It stops at the first one that is not done: a regular
// init container must have exited 0 (decideInitContainer), a sidecar must run and have passed its
// startup probe (decideSidecarDuringInit). A regular init container that failed and is not
// restarted (kubelet 1.37: its own restart rules and policy, else the pod's restartPolicy, Never)
// fails the pod for good: every running container is stopped, nothing starts.
func (p *podState) decideInit(now time.Time, pl *plan) bool {
	complete := !p.initFailed
	if complete {
	walk:
		for _, c := range p.containers {
			var next bool
			switch c.kind {
			case kindApp:
				break walk
			case kindSidecar:
				next = p.decideSidecarDuringInit(c, now, pl)
			default:
				next = p.decideInitContainer(c, now, pl)
			}
			if !next {
				complete = false
				break walk
			}
		}
	}
	if p.initFailed {
		for _, c := range p.containers {
			if c.running() {
				pl.Stop = append(pl.Stop, c.spec.Name)
			}
		}
		return false
	}
	return complete
}

// decideInitContainer is kubelet's decision for one regular init container; it reports whether
// the next init container may be looked at (this one completed).
func (p *podState) decideInitContainer(c *container, now time.Time, pl *plan) (next bool) {
	switch {
	case c.current == nil:
		p.planStart(c, pl)
		return false
	case !c.current.exited:
		return false
	case c.current.exit.Code == 0:
		return true
	case !c.forceRestart && !restartpolicy.ShouldRestart(&c.spec, p.pod.Spec.RestartPolicy, c.current.exit.Code):
		// kubelet 1.37: the init container's own restart rules and policy, else the pod's.
		p.initFailed = true
		return false
	default:
		p.restart(c, now, pl)
		return false
	}
}

// decideSidecarDuringInit is the decision for a sidecar met while walking the init containers; it
// reports whether the next init container may be looked at: the sidecar runs and has started (or
// the app has already started, as after a restart of the pod's app).
func (p *podState) decideSidecarDuringInit(c *container, now time.Time, pl *plan) (next bool) {
	switch {
	case c.current == nil:
		p.planStart(c, pl)
		return false
	case c.current.exited:
		if p.anyAppStarted() {
			return true // once the app runs, decideSidecars restarts it
		}
		p.restart(c, now, pl)
		return false
	case !c.started && !p.anyAppStarted():
		return false // wait for its startup probe
	default:
		return true
	}
}

// decideApps starts app containers not yet started and restarts exited ones the restart policy (or
// a probe kill) wants back. It reports whether some app container runs or will run again.
func (p *podState) decideApps(now time.Time, pl *plan) (appActive bool) {
	for _, c := range p.containers {
		if c.kind != kindApp {
			continue
		}
		switch {
		case c.current == nil:
			p.planStart(c, pl)
			appActive = true
		case !c.current.exited:
			appActive = true
		case p.wantsRestart(c):
			p.restart(c, now, pl)
			appActive = true
		}
	}
	return appActive
}

// decideSidecars is the decision for sidecars after initialization: while the app is active they are
// restarted whenever they exit (whatever the restart policy); once it is not, they are stopped.
func (p *podState) decideSidecars(now time.Time, appActive bool, pl *plan) {
	for _, c := range p.containers {
		if c.kind != kindSidecar {
			continue
		}
		switch {
		case !appActive && c.running():
			pl.Stop = append(pl.Stop, c.spec.Name) // the pod is done: sidecars go too
		case appActive && c.current != nil && c.current.exited:
			p.restart(c, now, pl)
		}
	}
}

// restart starts the exited container c now, or puts it in CrashLoopBackOff: then pl wakes the pod
// when the back-off ends, and carries one BackOff event per exit.
func (p *podState) restart(c *container, now time.Time, pl *plan) {
	exit := c.current.exit.FinishedAt
	if c.current.exit.Reason == ReasonFenced && !p.fenced {
		// The member's lease ended it while its node was away (a node that adopted the pod under
		// a lease again decides here): not the container's failure, so no back-off.
		if !p.hold {
			p.planned(c, pl)
		}
		return
	}
	if in, until := c.backoff.inBackoff(exit, now); in {
		c.backoffUntil = until
		if pl.WakeAt.IsZero() || until.Before(pl.WakeAt) {
			pl.WakeAt = until
		}
		if !c.backoffShown.Equal(exit) {
			c.backoffShown = exit
			pl.Events = append(pl.Events, event{Type: v1.EventTypeWarning, Reason: "BackOff", Container: c.spec.Name, Kind: c.kind,
				Message: fmt.Sprintf("Back-off restarting failed container %s in pod %s", c.spec.Name, p.podRef())})
		}
		return
	}
	if p.fenced {
		c.fenced = true // the back-off step is spent when it really starts
		return
	}
	if p.hold {
		return // the back-off step is spent when it really starts
	}
	c.backoff.next(exit, now)
	p.planned(c, pl)
}

// planStart plans c's first start, or keeps it waiting (Fenced) while node's cluster lease has run
// out.
func (p *podState) planStart(c *container, pl *plan) {
	if p.fenced {
		c.fenced = true
		return
	}
	if p.hold {
		return
	}
	p.planned(c, pl)
}

// planned adds c to the plan's starts; after a container with a postStart hook nothing more is
// planned (kubelet starts the next one once the hook has ended).
func (p *podState) planned(c *container, pl *plan) {
	pl.Start = append(pl.Start, c.spec.Name)
	if c.spec.Lifecycle != nil && c.spec.Lifecycle.PostStart != nil {
		p.hold = true
	}
}
