package proc

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/internal/podstatus"
	"github.com/probeactor/probeactor/internal/restartpolicy"
	"github.com/probeactor/probeactor/messages"
)

// kind says how a container takes part in the pod's lifecycle.
type kind int

const (
	kindInit    kind = iota // regular init container: runs to completion, in order
	kindSidecar             // restartable init container: started before the app, always restarted
	kindApp                 // spec.containers
)

// instance is one run of a container (one container ID).
type instance struct {
	id        string // "proc://<n>"
	startedAt time.Time
	exited    bool
	exit      exitStatus
}

// exitStatus is how an instance ended.
type exitStatus struct {
	Code       int32
	Reason     string // "Completed", "Error", "StartError"
	Message    string
	FinishedAt time.Time
}

// container is the pure record of one spec container across its restarts.
type container struct {
	spec         v1.Container
	kind         kind
	restarts     int32
	current      *instance // nil until first started
	previous     *instance // the instance before current (for lastState)
	started      bool      // sidecars: the startup probe passed (or there is none)
	forceRestart bool      // killed by a liveness/startup probe with Restart set
	backoff      backoff
	backoffUntil time.Time    // while in CrashLoopBackOff: when the restart may happen
	backoffShown time.Time    // exit time of the instance whose BackOff event was already emitted
	probed       probeOutcome // current's latest readiness and startup results (ProbeResult)
	adopted      probeOutcome // current was adopted from an earlier node, which had these: reported at once
	wasAdopted   bool         // current was adopted (adopted then follows its probe results)
	fenced       bool         // the last decision would have started it, but node's cluster lease had run out
	// resetForAll: a RestartAllContainers rule restarted the pod in place and this container's last
	// instance is gone (previous is kubelet's stand-in for it); it waits to start again, shown
	// Waiting, RestartingAllContainers.
	resetForAll bool
}

// probeOutcome is whether an instance was last seen ready and started by its probes.
type probeOutcome struct{ Ready, Started bool }

func (c *container) running() bool { return c.current != nil && !c.current.exited }

// event is something the pod core wants recorded (reason/message as kubelet words them).
type event struct {
	Type, Reason, Message string
	Container             string
	Kind                  kind
}

// plan is what decide asks the shell to do now.
type plan struct {
	Start  []string  // containers to start, in order
	Stop   []string  // containers to stop (sidecars once the app has finished, or after a failed init)
	Kill   []string  // containers to kill now (grace 0, kubelet's 2 s floor): a RestartAllContainers restart
	WakeAt time.Time // call decide again at this time (a back-off expiry); zero = no timer needed
	Events []event
}

// podState is the pure decision core for one pod: which container to start or restart next, with
// kubelet's init ordering, restart policy and CrashLoopBackOff, and the v1.PodStatus it implies.
// It does no I/O and reads no clock: every method takes the current time.
type podState struct {
	pod         *v1.Pod
	containers  []*container // init containers in spec order, then app containers
	byName      map[string]*container
	startTime   time.Time
	terminating bool
	initFailed  bool
	fenced      bool // decide's input: node's cluster lease has run out, nothing may start
	hold        bool // decide's: a postStart hook runs (or one was just planned), nothing more starts
	// restartingAll: a container exited with an exit code its RestartAllContainers rule matches
	// (KEP-5532): every container is killed, then the pod starts again from its first init
	// container (kubelet's AllContainersRestarting condition, True until then).
	restartingAll bool
	// deadlineExceeded: the pod ran for its activeDeadlineSeconds (kubelet's activeDeadlineHandler):
	// Failed, DeadlineExceeded, every container stopped, none started again.
	deadlineExceeded bool
	// initialized: initialization completed once. kubelet 1.37 keeps the Initialized condition
	// True from then on (an in-place restart runs the init containers again; a pod that was
	// initialized is not uninitialized).
	initialized bool
}

func newPodState(pod *v1.Pod, now time.Time, initialBackoff, maxBackoff time.Duration) *podState {
	p := &podState{pod: pod, byName: map[string]*container{}, startTime: now}
	add := func(c v1.Container, k kind) {
		rec := &container{spec: c, kind: k, backoff: backoff{initial: initialBackoff, max: maxBackoff}}
		p.containers = append(p.containers, rec)
		p.byName[c.Name] = rec
	}
	for _, c := range pod.Spec.InitContainers {
		if podstatus.IsRestartable(&c) {
			add(c, kindSidecar)
		} else {
			add(c, kindInit)
		}
	}
	for _, c := range pod.Spec.Containers {
		add(c, kindApp)
	}
	return p
}

// nextRun is the restart count of name's next run, which names its log file (<n>.log): one more
// than the current instance's, or the count itself when there is none: the first run, and a
// container a RestartAllContainers restart removed, whose restart it counted already.
func (p *podState) nextRun(name string) int {
	c := p.byName[name]
	if c.current != nil {
		return int(c.restarts) + 1
	}
	return int(c.restarts)
}

// started records that the shell started name as instance id at now.
func (p *podState) started(name, id string, now time.Time) {
	c := p.byName[name]
	if c.current != nil {
		c.previous = c.current
		c.restarts++
	}
	c.current = &instance{id: id, startedAt: now}
	c.started = c.kind != kindSidecar || c.spec.StartupProbe == nil
	c.forceRestart = false
	c.resetForAll = false
	c.backoffUntil = time.Time{}
	c.probed, c.adopted, c.wasAdopted = probeOutcome{}, probeOutcome{}, false
}

// fence records that the shell did not start name after all: node's cluster lease ran out
// between the decision and the start. It waits, Fenced, as if decide had found the lease run out
// (but a restart's back-off step is spent already).
func (p *podState) fence(name string) {
	p.byName[name].fenced = true
}

// startFailed records an instance that could not be started (kubelet/containerd: StartError, 128).
func (p *podState) startFailed(name, id string, err error, now time.Time) {
	p.started(name, id, now)
	p.byName[name].current.exited = true
	p.byName[name].current.exit = exitStatus{Code: 128, Reason: "StartError", Message: err.Error(), FinishedAt: now}
	p.noteExit(p.byName[name])
}

// noteExit applies KEP-5532 to c's exit: an exit code its RestartAllContainers rule matches marks
// the pod for an in-place restart of every container (not while the pod is terminating).
func (p *podState) noteExit(c *container) {
	if !p.terminating && restartpolicy.RestartsAll(&c.spec, c.current.exit.Code) {
		p.restartingAll = true
	}
}

// exited records the end of instance id. Stale ids (an older instance) are ignored.
func (p *podState) exited(name, id string, st exitStatus) {
	c, ok := p.byName[name]
	if !ok || c.current == nil || c.current.id != id || c.current.exited {
		return
	}
	if st.Reason == "" {
		st.Reason = "Completed"
		if st.Code != 0 {
			st.Reason = "Error"
		}
	}
	c.current.exited = true
	c.current.exit = st
	p.noteExit(c)
}

// killedForRestart marks that the current instance of name (if it is id) is being killed by a probe
// and must be restarted whatever the restart policy says.
func (p *podState) killedForRestart(name, id string) {
	if c, ok := p.byName[name]; ok && c.current != nil && c.current.id == id {
		c.forceRestart = true
	}
}

// probeResult records the latest readiness or startup result of instance id of name.
func (p *podState) probeResult(name, id string, probe messages.ProbeType, success bool) {
	c, ok := p.byName[name]
	if !ok || c.current == nil || c.current.id != id {
		return
	}
	// An adopted instance is reported as its probes last saw it, not as it was adopted: should the
	// tree's workers for it be made anew (the pod removed and given again while it runs), they
	// adopt today's outcome, not a stale one.
	adopted := c.wasAdopted
	switch probe {
	case messages.Readiness:
		c.probed.Ready = success
		if adopted {
			c.adopted.Ready = success
		}
	case messages.Startup:
		c.probed.Started = success
		if adopted {
			c.adopted.Started = success
		}
	default:
	}
}

// sidecarStarted records that a sidecar's startup probe passed.
func (p *podState) sidecarStarted(name, id string) {
	if c, ok := p.byName[name]; ok && c.current != nil && c.current.id == id {
		c.started = true
	}
}

// wantsRestart applies the container's restart rules and policy, else the pod's restart policy
// (kubelet 1.37, restartpolicy.ShouldRestart) to an exited app or init container; a probe kill for
// a restart and a sidecar always restart.
func (p *podState) wantsRestart(c *container) bool {
	if c.forceRestart || c.kind == kindSidecar {
		return true
	}
	return restartpolicy.ShouldRestart(&c.spec, p.pod.Spec.RestartPolicy, c.current.exit.Code)
}

func (p *podState) anyAppStarted() bool {
	for _, c := range p.containers {
		if c.kind == kindApp && c.current != nil {
			return true
		}
	}
	return false
}

// podRef is kubelet's format.Pod: "name_namespace(uid)".
func (p *podState) podRef() string {
	return fmt.Sprintf("%s_%s(%s)", p.pod.Name, p.pod.Namespace, p.pod.UID)
}

// status renders the runtime's view of the pod as kubelet would report it before the prober's
// overlay: container states, restart counts, IDs, phase and the Initialized condition. Ready and
// Started are left false; the statusManager sets them from probe results.
func (p *podState) status() v1.PodStatus {
	st := v1.PodStatus{
		HostIP:    PodIP,
		HostIPs:   []v1.HostIP{{IP: PodIP}},
		PodIP:     PodIP,
		PodIPs:    []v1.PodIP{{IP: PodIP}},
		StartTime: &metav1.Time{Time: p.startTime},
		QOSClass:  v1.PodQOSBestEffort,
	}
	initRunning := !p.initDone()
	for _, c := range p.containers {
		cs := p.containerStatus(c, initRunning)
		if c.kind == kindApp {
			st.ContainerStatuses = append(st.ContainerStatuses, cs)
		} else {
			st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
		}
	}
	truncateMessages(&st, len(p.containers))
	st.Phase = phase(p.pod, st.InitContainerStatuses, st.ContainerStatuses, p.sidecarStartedMap(), p.restartingAll)
	if p.deadlineExceeded && st.Phase != v1.PodSucceeded { // kubelet: no transition out of a terminal phase
		st.Phase, st.Reason, st.Message = v1.PodFailed, ReasonDeadlineExceeded, messageDeadlineExceeded
	}
	st.Conditions = conditions(p.pod, st, p.sidecarStartedMap(), p.startTime, p.restartingAll, p.initialized)
	st.ObservedGeneration = p.pod.Generation // kubelet 1.37 (PodObservedGenerationTracking, GA)
	return st
}

func (p *podState) sidecarStartedMap() map[string]bool {
	m := map[string]bool{}
	for _, c := range p.containers {
		if c.kind == kindSidecar && c.running() && c.started {
			m[c.spec.Name] = true
		}
	}
	return m
}

// initDone reports whether every regular init container has completed successfully.
func (p *podState) initDone() bool {
	for _, c := range p.containers {
		if c.kind == kindInit && (c.current == nil || !c.current.exited || c.current.exit.Code != 0) {
			return false
		}
	}
	return true
}

func (p *podState) containerStatus(c *container, initRunning bool) v1.ContainerStatus {
	cs := v1.ContainerStatus{
		Name:         c.spec.Name,
		Image:        c.spec.Image,
		ImageID:      c.spec.Image,
		RestartCount: c.restarts,
		Ready:        false,
		Started:      new(bool),
	}
	if c.previous != nil {
		cs.LastTerminationState = v1.ContainerState{Terminated: terminatedState(c.previous)}
	}
	switch {
	case c.fenced && c.current == nil:
		// Its first start is due, held for node's cluster lease.
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ReasonFenced, Message: fencedWaiting}}
	case c.current == nil && c.resetForAll:
		// Removed by a RestartAllContainers restart, waiting to start again: as kubelet reports a
		// container it removed for it (its stand-in lastState, restart count already counted).
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ReasonRestartingAllContainers, Message: restartAllMessage}}
		if c.previous != nil {
			cs.LastTerminationState = v1.ContainerState{Terminated: terminatedState(c.previous)}
		}
	case c.current == nil:
		reason := "ContainerCreating"
		if c.kind == kindApp && initRunning || c.kind != kindApp {
			reason = "PodInitializing"
		}
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}
	case !c.current.exited:
		cs.ContainerID = c.current.id
		// An instance adopted from an earlier node is reported as that node last saw it (kubelet
		// 1.35+, KEP-4781); the tree's own results take over from there.
		if c.wasAdopted {
			// As the tree last saw it: a container without a startup probe counts as started
			// once running, one without a readiness probe as ready once started.
			started := c.adopted.Started || c.spec.StartupProbe == nil
			cs.Ready = c.adopted.Ready || c.spec.ReadinessProbe == nil && started
			*cs.Started = started
		}
		cs.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Time{Time: c.current.startedAt}}}
	case c.fenced:
		// Exited, its restart due, held for the lease: shown as in CrashLoopBackOff, the dead
		// instance as lastState.
		cs.ContainerID = c.current.id
		cs.LastTerminationState = v1.ContainerState{Terminated: terminatedState(c.current)}
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ReasonFenced, Message: fencedWaiting}}
	case !c.backoffUntil.IsZero():
		// Exited and waiting for its restart: kubelet shows Waiting/CrashLoopBackOff and the dead
		// instance as lastState.
		cs.ContainerID = c.current.id
		cs.LastTerminationState = v1.ContainerState{Terminated: terminatedState(c.current)}
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{
			Reason:  "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", c.backoff.current, c.spec.Name, p.podRef()),
		}}
	default:
		cs.ContainerID = c.current.id
		cs.State = v1.ContainerState{Terminated: terminatedState(c.current)}
	}
	return cs
}

// kubelet's activeDeadlineHandler: the pod's reason, message and event.
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// ReasonRestartingAllContainers is kubelet's reason for a container a RestartAllContainers rule
// restarts in place (its Waiting state and its lastState while it waits).
const ReasonRestartingAllContainers = "RestartingAllContainers"

// restartAllMessage is kubelet's message for a container removed by a RestartAllContainers restart.
const restartAllMessage = "The container is removed because RestartAllContainers in place"

// resetForRestartAll removes every container's last instance once all have stopped, as kubelet
// removes them for a RestartAllContainers restart: each that ran waits to start again with
// kubelet's stand-in lastState (exit 137, RestartingAllContainers) and its restart counted;
// initialization starts over. The AllContainersRestarting condition turns False.
func (p *podState) resetForRestartAll(now time.Time) {
	for _, c := range p.containers {
		if c.current == nil {
			continue
		}
		c.previous = &instance{id: c.current.id, startedAt: c.current.startedAt, exited: true,
			exit: exitStatus{Code: 137, Reason: ReasonRestartingAllContainers, Message: restartAllMessage, FinishedAt: now}}
		c.current = nil
		c.restarts++
		c.resetForAll = true
		c.forceRestart = false
		c.backoffUntil = time.Time{}
		c.started = false
		c.probed, c.adopted, c.wasAdopted = probeOutcome{}, probeOutcome{}, false
	}
	p.initFailed = false
	p.restartingAll = false
}

// fencedWaiting is the message of a container waiting for node's cluster lease.
const fencedWaiting = "the node's cluster lease ran out: no container of this pod starts here again; the cluster places the pod anew"

func terminatedState(in *instance) *v1.ContainerStateTerminated {
	return &v1.ContainerStateTerminated{
		ExitCode:    in.exit.Code,
		Reason:      in.exit.Reason,
		Message:     in.exit.Message,
		StartedAt:   metav1.Time{Time: in.startedAt},
		FinishedAt:  metav1.Time{Time: in.exit.FinishedAt},
		ContainerID: in.id,
	}
}
