package worker

import (
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/restartpolicy"
	"github.com/probeactor/probeactor/messages"
)

// Config describes one probe worker (kubelet's newWorker arguments).
type Config struct {
	Type messages.ProbeType
	// Spec is the container's probe of Type; Init copies its InitialDelaySeconds and thresholds
	// (Step never reads the spec: see Machine's delay). Must not be nil.
	Spec *v1.Probe
	// Period is the probe period (> 0).
	Period time.Duration
	// Container is the probed container's spec (read-only): its restartPolicy and
	// restartPolicyRules decide, with RestartPolicy, whether the worker keeps going once the
	// container terminated (kubelet 1.37, restartpolicy.ShouldRestart). nil: a container with
	// neither.
	Container *v1.Container
	// Deleting is true when the pod object the worker was created from had a DeletionTimestamp.
	Deleting bool
	// Sidecar is true for a restartable init container (the shell names it so in events; the
	// Machine's decisions read Container's restartPolicy instead).
	Sidecar bool
	// The fields a probe does not read last (Machine's layout).

	// TreeStart is when the tree started (kubelet's prober manager start), in Unix nanoseconds (a
	// time.Time would be 16 bytes more in every worker): a running container that started more
	// than RestartGrace before it ran before the tree and is taken over with its result kept (see
	// Machine, step 4). Zero: no container is taken over.
	TreeStart int64
	// RestartPolicy is the pod's restartPolicy.
	RestartPolicy v1.RestartPolicy
}

// RestartGrace is kubelet's kubeletRestartGracePeriod: a container that started more than this
// before the prober manager did ran before kubelet's restart.
const RestartGrace = 10 * time.Second

// noContainer stands for Config.Container when it is nil.
var noContainer v1.Container

// InitialValue is the result a worker publishes for a new container ID: readiness Failure,
// liveness Success, startup Unknown (but see Adopted).
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

// Adopted reports whether a worker of type t takes a new container's own report as its first
// result instead of InitialValue: a running container the runtime reports ready (a readiness
// worker) or started or ready (a startup worker: only a started container is ever ready, and a
// ready one left unstarted would be neither probed for readiness nor shown ready). That result is
// Success, and the worker's streaks start afresh. This is kubelet 1.35+ after its own restart (KEP-4781, ChangeContainerStatusOnKubeletRestart
// off, its default there): a container that was ready and started stays so, with no probe run,
// until a probe result changes it; kubelet ≤1.34 reports it not ready (and, with a startup probe,
// not started) until probes pass again. A runtime reports Ready or Started only for a container it
// did not just start (node's process runtime reports Ready and Started false for every
// container it starts), so a fresh container gets InitialValue as before.
func Adopted(t messages.ProbeType, running, reportedReady, reportedStarted bool) bool {
	switch t {
	case messages.Readiness:
		return running && reportedReady
	case messages.Startup:
		return running && (reportedStarted || reportedReady)
	default:
		return false
	}
}

// TakenOver reports whether a running container started more than RestartGrace before the tree
// did (kubelet's isRestart: containerStartTime.Before(kubeletRestartGracePeriod(start))): it ran
// before the tree (the tree, or the process embedding it, restarted), so its worker publishes no
// initial value and the container keeps what it had until a probe result reaches a threshold —
// kubelet 1.37's worker with ChangeContainerStatusOnKubeletRestart off (KEP-4781, deprecated and
// off since 1.35). A zero startedAt or treeStart takes nothing over.
func TakenOver(running bool, startedAt, treeStart time.Time) bool {
	return running && !startedAt.IsZero() && !treeStart.IsZero() && startedAt.Before(treeStart.Add(-RestartGrace))
}

// EventKind says what happened to a worker.
type EventKind uint8

// The events a worker's shell feeds its Machine.
const (
	// Started: the actor started. Jitter delays the first run of a new worker (kubelet's restart
	// jitter); a Started after Restarting is a supervision restart and runs at once.
	Started EventKind = iota + 1
	// Tick: the worker's timer went off at Now. A tick before the armed deadline is stale (the
	// timer was re-armed after it fired) and ignored.
	Tick
	// Trigger: a manual readiness trigger (kubelet's manualTriggerCh) at Now.
	Trigger
	// View: statusManager pushed the container's view (kubelet's worker reads it at the next doProbe).
	View
	// Done: the attempt numbered Attempt finished at Now with Verdict after Duration, measured from
	// its AttemptStart.At (so the shell reads the clock once per attempt, when it ends). A verdict of
	// any other attempt, or one that arrives while exiting, is stale and ignored.
	Done
	// Panicked: the attempt numbered Attempt panicked; Ready.Crash says whether to fail the actor.
	Panicked
	// Restarting: the actor is being restarted after a panic. The attempt in flight is abandoned
	// (cancelled; its verdict will be stale) and the timer stopped; a Started follows.
	Restarting
	// Stopping: the actor is stopping for good: cancel the attempt, stop the timer, remove the
	// cached result (kubelet's deferred cleanup in worker.run).
	Stopping
	// Defer: the syncLoop deferred the kill this worker's Failure asked for (the restart budget is
	// spent) for ContainerID. A liveness or startup worker holding after that Failure resumes
	// probing, and does not hold on a Failure again until it published something else or the
	// container is replaced, so that a recovery (a Success) can cancel the kill. Not in kubelet:
	// it has no restart budget.
	Defer
)

// Event is one input of a Machine. Only the fields of its Kind are read, and nothing it points to
// is retained.
type Event struct {
	Kind     EventKind
	Now      time.Time
	Jitter   time.Duration           // Started
	View     *protocol.ContainerView // View
	Attempt  uint32                  // Done, Panicked
	Verdict  *Verdict                // Done
	Duration time.Duration           // Done: Now minus the attempt's AttemptStart.At
	// ContainerID is the container whose kill was deferred (Defer).
	ContainerID messages.ContainerID
}

// TimerOp is what a Ready asks of the worker's single timer.
type TimerOp uint8

const (
	// TimerKeep leaves the timer as it is.
	TimerKeep TimerOp = iota
	// TimerArm (re-)arms the timer for Ready.WakeAt, replacing any armed deadline.
	TimerArm
	// TimerStop cancels the armed deadline.
	TimerStop
)

// CacheOp is one write to the results cache: remove ContainerID's result, or set it to Result.
// Only writes that change what the cache holds are emitted.
type CacheOp struct {
	ContainerID messages.ContainerID
	Result      messages.Result
	Remove      bool
}

// Observation is one prober_probe_total increment (Label: successful, failed, unknown) and, when
// Timed, one prober_probe_duration_seconds observation of Duration.
type Observation struct {
	Label    string
	Timed    bool
	Duration time.Duration
}

// Metric result labels (kubelet's probeResultSuccessful/Failed/Unknown).
const (
	LabelSuccessful = "successful"
	LabelFailed     = "failed"
	LabelUnknown    = "unknown"
)

// AttemptStart describes the attempt a Ready asks the shell to start: its number (reported back in
// Done or Panicked), the container it targets, and when the doProbe run that starts it began (At:
// kubelet's startTime, from which prober_probe_duration_seconds is measured).
type AttemptStart struct {
	Attempt     uint32
	ContainerID messages.ContainerID
	PodIP       string
	At          time.Time
}

// maxCacheOps bounds the cache writes of one Step: a completion (one Set) followed by at most one
// further doProbe run (one Remove and two Sets).
const maxCacheOps = 4

// Ready is what one Step asks the shell to do, in this order: Cancel the attempt in flight (and
// wait for it), perform Cache() in order, record Events and (when Observed) Observation, apply
// Timer, start Attempt (when StartAttempt), and send Exit (ask the supervisor to stop the worker;
// the shell then expects Stopping). Crash asks the shell to fail (panic) so that supervision
// restarts the worker. A Ready is a plain value the caller owns (usually on its stack): Step
// allocates nothing.
type Ready struct {
	Cancel       bool
	cache        [maxCacheOps]CacheOp
	nCache       int
	Events       []EventText // the verdict's events (Done only)
	Observed     bool
	Observation  Observation
	Timer        TimerOp
	WakeAt       time.Time
	StartAttempt bool
	Attempt      AttemptStart
	Exit         bool
	Crash        bool
}

// Cache returns the cache writes in order.
func (r *Ready) Cache() []CacheOp { return r.cache[:r.nCache] }

// Machine is one probe worker as a pure state machine (etcd raft's Step/Ready shape): the shell
// turns messages into Events, calls Step, and performs the returned Ready. It holds kubelet's
// per-key worker state (spec §2.1), doProbe (§2.4) split at the attempt, the run loop's timing
// (§2.2: start-up jitter, period, manual trigger) and the shell's bookkeeping: which attempt is in
// flight (there is at most one, and only this field says so), the armed deadline (stale ticks), the
// exiting flag, whether the actor started before (restart), and what the cache holds for the key
// (only changes are written).
//
// Rules of the run loop: the first run happens at start+jitter and starts the period; a tick or a
// trigger that arrives while an attempt is in flight is remembered once (never a burst); a trigger
// runs now and restarts the period (PR #119089) and also absorbs a remembered tick.
//
// A Machine never reads a clock: every Event carries its time. Not safe for concurrent use.
//
// Layout: a worker's state is read in a random order across workers at scale, so each cache line
// of it costs a miss per probe. The fields a probe reads come first and Config, whose last fields
// (TreeStart, RestartPolicy) are read only when a container is new or has terminated, comes last:
// the shell puts its own cold fields after the Machine (package actors,
// TestAProbeReadsSixOfAWorkersSevenLines).
type Machine struct {
	// kubelet's worker state
	view        view
	containerID messages.ContainerID
	// lastAt: when the last attempt ended, in Unix nanoseconds (what node describe shows)
	lastAt int64

	// run loop
	next time.Time // next periodic deadline
	wake time.Time // armed deadline; zero when the timer is stopped

	// The small fields together, so that a worker pays no padding for them.
	//
	// delay and the thresholds are the spec's InitialDelaySeconds, SuccessThreshold and
	// FailureThreshold, copied at Init: they are read on every run, and reading them through
	// cfg.Spec cost a cache miss per probe (the spec is another allocation, elsewhere in memory;
	// 10 % of the actor core's CPU at 1,000,000 workers probed in random order).
	delay, successThreshold, failureThreshold int32
	resultRun                                 int32
	// the attempt in flight (it runs against containerID: that changes only in doProbe, which does
	// not run while an attempt is in flight): the number of the latest attempt; other numbers are
	// stale
	attempt    uint32
	lastResult int8 // a messages.Result; zero value is Success, as in kubelet
	published  int8 // the messages.Result the cache holds for containerID, or none
	// last: the last attempt's verdict (a messages.Result; Unknown when it errored; none before the
	// first)
	last   int8
	onHold bool
	// deferred: the kill a Failure of containerID asked for waits for the restart budget (Defer):
	// no hold on Failure until something else is published.
	deferred bool
	started  bool // the actor has started (a later Started is a restart)
	looping  bool // the first run has happened: the period runs from it
	tick     bool // a tick arrived while an attempt was in flight
	trigger  bool // a trigger arrived while busy or before the first run
	exiting  bool
	inFlight bool // an attempt is running (the run loop is busy)

	cfg Config
}

// HotBytes is how much of the start of a Machine a probe reads: all but Config's TreeStart and
// RestartPolicy (Machine's layout).
const HotBytes = unsafe.Offsetof(Machine{}.cfg) + unsafe.Offsetof(Config{}.TreeStart)

// none is the published value when the cache holds nothing for the tracked container.
const none = int8(-128)

// view is the part of a protocol.ContainerView a worker reads (doProbe steps 1–9).
type view struct {
	known      bool // PodStatusKnown
	terminal   bool // phase Failed or Succeeded
	found      bool
	running    bool
	terminated bool
	exitCode   int32
	restarting bool // the pod restarts all its containers in place
	started    bool
	// the runtime's own report (before statusManager's overlay), read when the container is new
	reportedReady   bool
	reportedStarted bool
	id              messages.ContainerID
	podIP           string
	startedAt       time.Time
}

func compact(v *protocol.ContainerView) view {
	if v == nil {
		return view{}
	}
	return view{known: v.PodStatusKnown, terminal: v.Phase == v1.PodFailed || v.Phase == v1.PodSucceeded,
		found: v.Found, running: v.Running, terminated: v.Terminated, exitCode: v.ExitCode, restarting: v.AllRestarting, started: v.Started,
		reportedReady: v.ReportedReady, reportedStarted: v.ReportedStarted,
		id: v.ContainerID, podIP: v.PodIP, startedAt: v.StartedAt}
}

// New returns a Machine for cfg. cfg.Spec must not be nil and cfg.Period must be positive.
func New(cfg Config) *Machine {
	m := &Machine{}
	m.Init(cfg)
	return m
}

// Init sets up a zero Machine for cfg (for shells that embed a Machine instead of allocating one).
func (m *Machine) Init(cfg Config) {
	*m = Machine{cfg: cfg, published: none, last: none, delay: cfg.Spec.InitialDelaySeconds,
		successThreshold: cfg.Spec.SuccessThreshold, failureThreshold: cfg.Spec.FailureThreshold}
}

// Period returns the probe period.
func (m *Machine) Period() time.Duration { return m.cfg.Period }

// Type is the probe type.
func (m *Machine) Type() messages.ProbeType { return m.cfg.Type }

// Container is the probed container's spec (Config.Container).
func (m *Machine) Container() *v1.Container { return m.cfg.Container }

// Sidecar reports Config.Sidecar.
func (m *Machine) Sidecar() bool { return m.cfg.Sidecar }

// Spec returns the probe the Machine runs (Config.Spec).
func (m *Machine) Spec() *v1.Probe { return m.cfg.Spec }

// ViewedContainer returns the container ID of the latest pushed view and whether it names one.
func (m *Machine) ViewedContainer() (messages.ContainerID, bool) { return m.view.id, m.view.found }

// ContainerID is the container the worker currently tracks ("" before the first one is seen).
func (m *Machine) ContainerID() messages.ContainerID { return m.containerID }

// OnHold reports whether probing is suspended until a new container ID appears.
func (m *Machine) OnHold() bool { return m.onHold }

// ResultRun is the length of the current run of identical attempt results.
func (m *Machine) ResultRun() int { return int(m.resultRun) }

// Busy reports whether an attempt is in flight.
func (m *Machine) Busy() bool { return m.inFlight }

// Exiting reports whether the worker asked to be stopped.
func (m *Machine) Exiting() bool { return m.exiting }

// State is the worker's state as node describe shows it (messages.ProbeState without the key).
func (m *Machine) State() messages.ProbeState {
	st := messages.ProbeState{
		ContainerID:        m.containerID,
		Streak:             int(m.resultRun),
		StreakResult:       messages.Result(m.lastResult),
		OnHold:             m.onHold,
		KillDeferred:       m.deferred,
		Busy:               m.inFlight,
		NextRun:            m.wake,
		Running:            m.view.running,
		Started:            m.view.started,
		ContainerStartedAt: m.view.startedAt,
	}
	if m.published != none {
		st.Published, st.HasPublished = messages.Result(m.published), true
	}
	if m.last != none {
		st.LastResult, st.LastAt = messages.Result(m.last), time.Unix(0, m.lastAt).UTC()
	}
	return st
}

// Step applies ev and writes what the shell must do into r (reset first). Neither is retained.
func (m *Machine) Step(ev *Event, r *Ready) {
	*r = Ready{}
	switch ev.Kind {
	case Started:
		m.onStarted(r, ev.Now, ev.Jitter)
	case Tick:
		if m.exiting || m.wake.IsZero() || ev.Now.Before(m.wake) {
			return // stale: the timer was re-armed (or stopped) after this tick fired
		}
		m.run(r, ev.Now, m.fire(ev.Now))
	case Trigger:
		if !m.exiting {
			m.run(r, ev.Now, m.manual(ev.Now))
		}
	case View:
		m.view = compact(ev.View)
	case Done:
		if !m.inFlight || ev.Attempt != m.attempt || m.exiting {
			return // stale: abandoned by a restart, or the worker is exiting
		}
		m.complete(r, ev)
		m.run(r, ev.Now, m.runDone(ev.Now))
	case Panicked:
		r.Crash = m.inFlight && ev.Attempt == m.attempt
	case Restarting:
		m.abandon(r)
		m.stopTimer(r)
	case Stopping:
		m.abandon(r)
		m.stopTimer(r)
		if m.containerID != "" {
			m.remove(r, m.containerID)
		}
	case Defer:
		if m.exiting || ev.ContainerID != m.containerID || m.cfg.Type == messages.Readiness {
			return // a container replaced meanwhile (its worker published its initial value): nothing to defer
		}
		m.deferred = true
		m.onHold = false // probing resumes at the next tick
	default:
	}
}

func (m *Machine) onStarted(r *Ready, now time.Time, jitter time.Duration) {
	if m.started {
		// Restarted after a panic: the lost attempt was abandoned by Restarting; continue with a
		// fresh run loop that probes at once (counters and the tracked container stay).
		m.abandon(r)
		m.looping, m.tick, m.trigger = false, false, false
		m.run(r, now, m.fire(now))
		return
	}
	m.started = true
	if jitter <= 0 {
		m.run(r, now, m.fire(now))
		return
	}
	m.arm(r, now.Add(jitter))
}

// abandon forgets the attempt in flight: the shell cancels it and waits for it, and its verdict,
// should one still arrive, is stale.
func (m *Machine) abandon(r *Ready) {
	if m.inFlight {
		r.Cancel = true
		m.inFlight = false
	}
	m.attempt++
}

func (m *Machine) arm(r *Ready, at time.Time) {
	m.wake = at
	r.Timer, r.WakeAt = TimerArm, at
}

func (m *Machine) stopTimer(r *Ready) {
	m.wake = time.Time{}
	r.Timer, r.WakeAt = TimerStop, time.Time{}
}

// loopStep is the run loop's answer: run doProbe now, and/or re-arm the timer for wake.
type loopStep struct {
	run  bool
	wake time.Time
}

// fire is the timer going off at now.
func (m *Machine) fire(now time.Time) loopStep {
	if !m.looping {
		m.looping = true
		m.next = now.Add(m.cfg.Period)
		return loopStep{run: true, wake: m.next}
	}
	for !m.next.After(now) {
		m.next = m.next.Add(m.cfg.Period)
	}
	if m.inFlight {
		m.tick = true
		return loopStep{wake: m.next}
	}
	return loopStep{run: true, wake: m.next}
}

// manual is a manual trigger at now.
func (m *Machine) manual(now time.Time) loopStep {
	if !m.looping || m.inFlight {
		m.trigger = true
		return loopStep{}
	}
	return m.runTriggered(now)
}

func (m *Machine) runTriggered(now time.Time) loopStep {
	m.trigger, m.tick = false, false
	m.next = now.Add(m.cfg.Period)
	return loopStep{run: true, wake: m.next}
}

// runDone is the end of a run at now: a remembered trigger or tick runs again.
func (m *Machine) runDone(now time.Time) loopStep {
	switch {
	case m.trigger:
		return m.runTriggered(now)
	case m.tick:
		m.tick = false
		return loopStep{run: true}
	default:
		return loopStep{}
	}
}

// run carries out a loop step: re-arm the timer, and run doProbe for as long as the loop asks and
// no attempt is started.
func (m *Machine) run(r *Ready, now time.Time, s loopStep) {
	for {
		if !s.wake.IsZero() {
			m.arm(r, s.wake)
		}
		if !s.run || m.exiting {
			return
		}
		if m.begin(r, now) {
			return
		}
		s = m.runDone(now)
	}
}

// begin is doProbe steps 1–9 at now. It reports whether the run goes on elsewhere: an attempt was
// started (Ready.Start) or the worker exits (Ready.Exit).
func (m *Machine) begin(r *Ready, now time.Time) bool {
	v := &m.view
	// 1. No status for the pod yet.
	if !v.known {
		return false
	}
	// 2. Terminal phase: exit.
	if v.terminal {
		m.exit(r)
		return true
	}
	// 3. Container not found (or no ID yet).
	if !v.found || v.id == "" {
		return false
	}
	// 4. New container: forget the old result, publish the initial value, release the hold. An
	// adopted container (Adopted: the runtime reports it running and ready, or started) keeps that
	// as its result instead, and its streaks start afresh: the next attempt counts from zero. A
	// container that ran before the tree did (TakenOver) keeps whatever it had: nothing is
	// published until a probe reaches a threshold (kubelet 1.37's worker with
	// ChangeContainerStatusOnKubeletRestart off).
	if m.containerID != v.id {
		if m.containerID != "" {
			m.remove(r, m.containerID)
		}
		m.containerID = v.id
		m.deferred = false
		switch {
		case Adopted(m.cfg.Type, v.running, v.reportedReady, v.reportedStarted):
			m.lastResult, m.resultRun = int8(messages.Success), 0
			m.set(r, messages.Success)
		case m.cfg.TreeStart != 0 && TakenOver(v.running, v.startedAt, time.Unix(0, m.cfg.TreeStart)):
		default:
			m.set(r, InitialValue(m.cfg.Type))
		}
		m.onHold = false
	}
	// 5. Held after a liveness failure or the startup threshold.
	if m.onHold {
		return false
	}
	// 6. Not running: Failure; exit only when it terminated and will not restart: neither its
	// restart rules and policy, else the pod's, restart it, nor is the pod restarting all its
	// containers (kubelet 1.37, ContainerRestartRules and RestartAllContainersOnContainerExits).
	if !v.running {
		m.set(r, messages.Failure)
		if v.terminated && !v.restarting && !restartpolicy.ShouldRestart(m.rulesOf(), m.cfg.RestartPolicy, v.exitCode) {
			m.exit(r)
			return true
		}
		return false
	}
	// 7. Graceful deletion (liveness and startup only): Success, then exit.
	if m.cfg.Deleting && m.cfg.Type != messages.Readiness {
		m.set(r, messages.Success)
		m.exit(r)
		return true
	}
	// 8. Initial delay, in whole seconds since the container started.
	if int32(now.Sub(v.startedAt).Seconds()) < m.delay {
		return false
	}
	// 9. Startup gating.
	if v.started {
		if m.cfg.Type == messages.Startup {
			return false
		}
	} else if m.cfg.Type != messages.Startup {
		return false
	}
	m.attempt++
	m.inFlight = true
	r.StartAttempt = true
	r.Attempt = AttemptStart{Attempt: m.attempt, ContainerID: m.containerID, PodIP: v.podIP, At: now}
	return true
}

// rulesOf is Config.Container for its restart rules, or an empty container when none was given.
func (m *Machine) rulesOf() *v1.Container {
	if m.cfg.Container != nil {
		return m.cfg.Container
	}
	return &noContainer
}

func (m *Machine) exit(r *Ready) {
	m.exiting = true
	m.stopTimer(r)
	r.Exit = true
}

// complete is doProbe steps 10–15 for the attempt in flight, plus what the attempt reports: its
// events and its metric observation. An errored attempt's result is discarded (step 10) and counted
// as "unknown" (a deliberate deviation: kubelet counts nothing); an attempt whose container was
// replaced while it ran is discarded too.
func (m *Machine) complete(r *Ready, ev *Event) {
	m.inFlight = false
	v := ev.Verdict
	r.Events = v.Events
	errored := v.Err != nil
	r.Observed = true
	m.lastAt = ev.Now.UnixNano()
	if errored {
		m.last = int8(messages.Unknown)
		r.Observation = Observation{Label: LabelUnknown}
	} else {
		m.last = int8(v.Result)
		label, timed := MetricResult(v.Result)
		r.Observation = Observation{Label: label, Timed: timed, Duration: ev.Duration}
	}
	if errored || m.view.id != m.containerID || m.onHold {
		return
	}
	result := v.Result
	// 12. Run counting.
	if messages.Result(m.lastResult) == result {
		m.resultRun++
	} else {
		m.lastResult = int8(result)
		m.resultRun = 1
	}
	// 13. Thresholds.
	if (result == messages.Failure && m.resultRun < m.failureThreshold) ||
		(result == messages.Success && m.resultRun < m.successThreshold) {
		return
	}
	// 14. Publish.
	m.set(r, result)
	// 15. Hold after a liveness failure and after the startup threshold in either direction; but
	// while its kill is deferred, a worker keeps probing a failing container (a Success cancels
	// the kill) until it publishes something else.
	if m.deferred {
		if result == messages.Failure {
			return
		}
		m.deferred = false
	}
	if (m.cfg.Type == messages.Liveness && result == messages.Failure) || m.cfg.Type == messages.Startup {
		m.onHold = true
		m.resultRun = 0
	}
}

// set publishes result for the tracked container if that changes what the cache holds (kubelet's
// cache drops repeated values; dropping them here also saves the message, one per probe in steady
// state). What the cache holds stays known as long as the worker is the only writer of its
// (container ID, probe type) entry: true for a live worker, including across a supervision restart.
func (m *Machine) set(r *Ready, result messages.Result) {
	if m.published != int8(result) {
		m.published = int8(result)
		r.add(CacheOp{ContainerID: m.containerID, Result: result})
	}
}

// remove removes id's result (the tracked container's, or the one it replaces).
func (m *Machine) remove(r *Ready, id messages.ContainerID) {
	m.published = none
	r.add(CacheOp{Remove: true, ContainerID: id})
}

func (r *Ready) add(op CacheOp) {
	if r.nCache == len(r.cache) {
		// Unreachable by construction (see maxCacheOps); losing a write would be a silent bug.
		panic("worker: too many cache writes in one step")
	}
	r.cache[r.nCache] = op
	r.nCache++
}

// MetricResult is kubelet's doProbe step 11: the prober_probe_total result label of a probe result,
// and whether prober_probe_duration_seconds observes it (Success and Unknown, not Failure).
func MetricResult(r messages.Result) (label string, timed bool) {
	switch r {
	case messages.Success:
		return LabelSuccessful, true
	case messages.Failure:
		return LabelFailed, false
	default:
		return LabelUnknown, true
	}
}

// Jitter is kubelet's restart jitter rule: a worker created less than one period after the tree
// started waits rand*period before its first probe; later workers do not wait. A window longer
// than the period widens the rule to workers created within the window (the tree's
// WithStartupJitterWindow; 0 is kubelet's rule). rand returns a number in [0, 1); nil means no
// jitter.
func Jitter(now, treeStart time.Time, window, period time.Duration, rand func() float64) time.Duration {
	if now.Sub(treeStart) >= max(window, period) {
		return 0
	}
	return clock.Jitter(period, rand)
}
