package actors

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/actors/internal/exec"
	"github.com/probeactor/probeactor/actors/internal/podrecord"
	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/actors/internal/worker"
	"github.com/probeactor/probeactor/actors/internal/workerset"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/messages"
)

// defaultPeriod replaces a non-positive periodSeconds (the API defaults it to 10 s; validation is
// the embedder's job, but a zero period must not make a worker spin).
const defaultPeriod = 10 * time.Second

// tick is the scheduler's wake-up for a worker. One value serves every worker.
type tick struct{}

var tickMsg = &tick{}

// workerActor is the shell around one worker.Machine: a switch that turns messages into the
// Machine's events and performs the effects it returns. At rest it holds no goroutine, no attempt
// slot and exactly one scheduler entry. Its mailbox is part of it and it is its own scheduler
// callback, so a worker is one allocation plus protoactor's own per-actor objects. The instance
// lives as long as the actor: a supervision restart resumes it (see newWorkerProps), so run
// counters, the tracked container and the cached result survive (kubelet's HandleCrash: the worker
// continues, result unchanged).
//
// Layout: at scale workers are probed in an order unrelated to where they are in memory, so each
// cache line a probe reads is a miss. A probe reads the mailbox's first two lines, the fields up to
// the end of the Machine's run state and its Config's first fields; the ones a probe does not read
// (pod, self, series, ms, and the Machine's TreeStart and RestartPolicy) share the last line. (With
// a metrics registry a probe reads series too, and the series it points to: metrics cost misses.)
type workerActor struct {
	mb    exec.Mailbox
	shard *exec.Shard // its timer, mailbox and attempts run there
	env   *env
	att   *attemptSlot // while an attempt is in flight
	timer clock.Handle
	m     worker.Machine

	pod    *podrecord.Record // the AddPod copy (never updated, as kubelet's worker.pod)
	self   *actor.PID
	series *workerSeries // the worker's metric series, looked up at its first observation

	// ms is probeManager's bookkeeping of this worker (touched only on its goroutine).
	ms workerset.Membership
}

func (w *workerActor) Membership() *workerset.Membership { return &w.ms }
func (w *workerActor) ProbeKey() messages.ProbeKey       { return w.key() }

// key is the worker's ProbeKey (derived, not kept: a worker is 448 bytes and this is 40 of them;
// its type, container and sidecar flag are the Machine's, not copies of them).
func (w *workerActor) key() messages.ProbeKey {
	return messages.ProbeKey{PodUID: w.pod.UID, Container: w.m.Container().Name, Type: w.m.Type()}
}

// newWorkerActor builds k's worker, not spawned yet: Tree.AddPod builds a pod's workers on its
// caller's goroutine, and probeManager gives each its container's view (see) and spawns it, or drops
// it if the key has a worker already. Until it is spawned nothing but its builder and then
// probeManager touches it (the addPod messages hand it over).
func newWorkerActor(e *env, k messages.ProbeKey, pod *podrecord.Record, c *v1.Container, spec *v1.Probe,
	sidecar bool) *workerActor {
	period := time.Duration(spec.PeriodSeconds) * time.Second
	if period <= 0 {
		period = defaultPeriod
	}
	w := &workerActor{env: e, pod: pod, shard: e.cfg.exec.Next()}
	w.mb.Owner, w.mb.Depth = w, &e.queued[kindWorker]
	w.m.Init(worker.Config{
		Type:          k.Type,
		Spec:          spec,
		Period:        period,
		Container:     c,
		RestartPolicy: pod.RestartPolicy,
		TreeStart:     e.start.UnixNano(),
		Deleting:      pod.DeletionTimestamp != nil,
		Sidecar:       sidecar,
	})
	return w
}

// see gives a worker not spawned yet its container's view when it is spawned. nil (no status yet)
// leaves the zero view its Machine starts with: stepping it would change nothing, and it was 5 % of
// probeManager's set-up CPU at 1,000,000 workers on 16 cores, where probeManager's goroutine is one
// of the stages that bound set-up.
func (w *workerActor) see(view *protocol.ContainerView) {
	if view != nil {
		w.step(nil, &worker.Event{Kind: worker.View, View: view})
	}
}

// newWorkerProps builds the one Props every worker of a tree is spawned with. protoactor calls a
// Props' producers while SpawnNamed runs, on the spawning goroutine: probeManager puts the worker it
// spawns in e.spawning first, and the producers hand out that worker and its embedded mailbox.
// Workers are supervised with the Resume directive (supervision.Resume): protoactor never calls the
// producer again for them, and the worker's mailbox turns the resume into a restart of the worker's
// run loop. Without middleware (the tree's panic logging is done by the mailbox) protoactor wraps
// no envelope per message and allocates no context extras per worker.
func newWorkerProps(e *env, strategy actor.SupervisorStrategy) *actor.Props {
	opts := []actor.PropsOption{
		actor.WithSupervisor(strategy),
		actor.WithMailbox(func() actor.Mailbox { return &e.spawning.mb }),
	}
	if len(e.cfg.middleware) > 0 {
		opts = append(opts, actor.WithReceiverMiddleware(e.cfg.middleware...))
	}
	return actor.PropsFromProducer(func() actor.Actor { return e.spawning }, opts...)
}

// spec is the worker's probe in its container's spec.
// It is the Machine's copy of the pointer: on the probe path, reading it through the container
// missed the cache once more per probe (5-8 % of the CPU at 100,000 workers).
func (w *workerActor) spec() *v1.Probe { return w.m.Spec() }

// logger is the worker's logger (built when needed: workers rarely log, and a bound logger would
// cost every worker its memory).
func (w *workerActor) logger() hclog.Logger {
	return w.env.log.Named("worker").With("pod", w.pod.Namespace+"/"+w.pod.Name, "container", w.m.Container().Name,
		"probe", w.m.Type().String())
}

// tickJob is a worker as its timer's callback (clock.Callback and exec.Job): the shard's scheduler
// queues it for the attempt pool, whose goroutine carries the tick into the worker's mailbox (Run)
// and then, usually, runs the probe it causes; a burst of due ticks wakes one goroutine, which wakes
// the next only while ticks are left and hands on to it after a few dozen (exec's doc). When the pool is stopped or its backlog full the
// tick goes to the mailbox pool instead (Fire). The worker is its own callback: a method value would
// be one more object, and one more cache miss, between the scheduler and it.
type tickJob workerActor

func (j *tickJob) Run() { (*workerActor)(j).mb.Carry(tickMsg) }

func (j *tickJob) Fire() { (*workerActor)(j).mb.Post(tickMsg) }

// signal handles the worker's own signals, which its mailbox delivers straight to it (no protoactor
// envelope, middleware or context: nothing in them needs one; the worker answers nobody and its
// sends go out from the system's root context).
func (w *workerActor) Signal(msg any) bool {
	switch msg.(type) {
	case *tick:
		w.step(nil, &worker.Event{Kind: worker.Tick, Now: w.env.now()})
	case *attemptFinished:
		w.onFinished(nil)
	default:
		return false
	}
	return true
}

// Schedule runs the worker's mailbox on its shard's mailbox pool.
func (w *workerActor) Schedule(m *exec.Mailbox) { w.shard.Schedule(m) }

// RestartsOnResume: workers are resumed after a failure and restart their run loop.
func (w *workerActor) RestartsOnResume() bool { return true }

func (w *workerActor) Receive(ctx actor.Context) {
	now := w.env.now()
	switch m := ctx.Message().(type) {
	case *protocol.ContainerView:
		w.step(ctx, &worker.Event{Kind: worker.View, View: m})
	case *protocol.TriggerReadiness:
		if w.env.log.IsTrace() {
			w.logger().Trace("triggered probe by manual run")
		}
		w.step(ctx, &worker.Event{Kind: worker.Trigger, Now: now})
	case *actor.Started:
		w.self = ctx.Self()
		w.step(ctx, &worker.Event{Kind: worker.Started, Now: now,
			Jitter: worker.Jitter(now, w.env.start, w.env.cfg.jitter, w.m.Period(), w.env.cfg.rand)})
	case *exec.Restarted:
		w.step(ctx, &worker.Event{Kind: worker.Started, Now: now})
	case *protocol.GetProbeState:
		st := w.m.State()
		st.Key = w.key()
		ctx.Respond(&protocol.ProbeStateResponse{State: st, Found: true})
	case *protocol.DeferKill:
		w.step(ctx, &worker.Event{Kind: worker.Defer, Now: now, ContainerID: m.ContainerID})
	case *inspectWorker:
		ctx.Respond(&workerInfo{Exists: true, Busy: w.m.Busy(), ContainerID: w.m.ContainerID(),
			ResultRun: w.m.ResultRun(), OnHold: w.m.OnHold()})
	case *actor.Stopping:
		w.step(ctx, &worker.Event{Kind: worker.Stopping, Now: now})
		w.deleteMetrics()
	default:
		w.env.unhandled("worker", m)
	}
}

// onFinished handles the attempt's report: a verdict, or a panic the worker re-raises here so that
// probeManager's supervision handles it. The report is read in place; the slot is released after.
// The Machine handles it as of the attempt's end (no clock read here).
func (w *workerActor) onFinished(ctx actor.Context) {
	s := w.att
	if s == nil || !s.finishedReport() {
		return // a stale notification (of an abandoned attempt), or the attempt is still running
	}
	rep := &s.report
	if rep.panicked {
		var r worker.Ready
		w.m.Step(&worker.Event{Kind: worker.Panicked, Now: rep.end, Attempt: rep.num}, &r)
		reason, stack := rep.reason, rep.stack
		w.releaseSlot()
		if r.Crash {
			w.logger().Error("prober panicked", "panic", fmt.Sprint(reason), "stack", string(stack))
			panic(fmt.Sprintf("prober panicked: %v", reason))
		}
		return
	}
	if rep.verdict.Err != nil && w.env.log.IsDebug() {
		w.logger().Debug("probe errored", "error", rep.verdict.Err, "tries", rep.verdict.Tries)
	}
	w.step(ctx, &worker.Event{Kind: worker.Done, Now: rep.end, Attempt: rep.num, Verdict: &rep.verdict, Duration: rep.duration})
	if w.att == s {
		w.releaseSlot()
	} else {
		w.env.slots.release(s) // a new attempt (a remembered trigger) already took another slot
	}
}

// Failed runs on the worker's goroutine when handling a message panicked, before the failure is
// escalated: the panic is logged with its stack, and the worker abandons its attempt and stops its
// timer until supervision resumes it.
func (w *workerActor) Failed(reason, msg any) {
	w.env.log.Error("actor panicked", "actor", w.key().String(), "message_type", fmt.Sprintf("%T", msg),
		"panic", fmt.Sprint(reason), "stack", string(debug.Stack()))
	w.step(nil, &worker.Event{Kind: worker.Restarting, Now: w.env.now()})
}

// step feeds ev to the Machine and performs what it returns. ctx is nil for the worker's own
// signals and when it fails: sends then go out from the system's root context.
func (w *workerActor) step(ctx actor.Context, ev *worker.Event) {
	var r worker.Ready
	w.m.Step(ev, &r)
	w.perform(ctx, &r)
}

// perform carries out a Ready in the Machine's order.
func (w *workerActor) perform(ctx actor.Context, r *worker.Ready) {
	e := w.env
	if r.Cancel {
		w.abandonAttempt()
	}
	for _, op := range r.Cache() {
		if op.Remove {
			e.tell(ctx, e.cache, &protocol.RemoveResult{ContainerID: op.ContainerID, Type: w.m.Type()})
		} else {
			e.tell(ctx, e.cache, &protocol.SetResult{PodUID: w.pod.UID, Container: w.m.Container().Name,
				ContainerID: op.ContainerID, Type: w.m.Type(), Result: op.Result})
		}
	}
	if len(r.Events) > 0 {
		w.events(r.Events)
	}
	if r.Observed {
		w.observe(r.Observation)
	}
	switch r.Timer {
	case worker.TimerArm:
		w.timer = w.shard.Sched.Reschedule(w.timer, r.WakeAt, (*tickJob)(w))
	case worker.TimerStop:
		w.shard.Sched.Cancel(w.timer)
		w.timer = clock.Handle{}
	default:
	}
	if r.StartAttempt {
		w.startAttempt(r.Attempt)
	}
	if r.Exit {
		e.tell(ctx, e.manager, &exitWorker{pid: w.self}) // probeManager is every worker's parent
	}
}

func (w *workerActor) events(evs []worker.EventText) {
	now := w.env.now()
	for _, ev := range evs {
		w.env.cfg.sink.Event(messages.Event{
			Time: now, Type: v1.EventTypeWarning, Reason: ev.Reason, Message: ev.Message,
			Pod:    w.pod.Ref(),
			PodUID: w.pod.UID, FieldPath: podapi.FieldPath(w.m.Container().Name, w.m.Sidecar()),
		})
	}
}

func (w *workerActor) observe(o worker.Observation) {
	m := w.env.metrics
	if m == nil {
		return
	}
	s := w.series
	if s == nil {
		s = &workerSeries{}
		w.series = s
	}
	if i := resultIndex(o.Label); i < 0 { // not a label the Machine emits: looked up, not kept
		m.total.WithLabelValues(w.m.Type().String(), o.Label, w.m.Container().Name, w.pod.Name, w.pod.Namespace, string(w.pod.UID)).Inc()
	} else {
		if s.total[i] == nil {
			s.total[i] = m.total.WithLabelValues(w.m.Type().String(), o.Label, w.m.Container().Name, w.pod.Name, w.pod.Namespace, string(w.pod.UID))
		}
		s.total[i].Inc()
	}
	if o.Timed {
		if s.duration == nil {
			s.duration = m.duration.WithLabelValues(w.m.Type().String(), w.m.Container().Name, w.pod.Name, w.pod.Namespace)
		}
		s.duration.Observe(o.Duration.Seconds())
	}
}

// workerSeries holds a worker's children of prober_probe_total (one per result label, each looked
// up when first used) and of prober_probe_duration_seconds. A worker's labels never change (its pod
// record is the AddPod copy), so the lookup — hashing six label values under the vector's lock —
// is done once per series instead of once per probe. Allocated at the first observation, only
// when the tree has a registry; the series are deleted from their vectors when the worker stops.
type workerSeries struct {
	total    [3]prometheus.Counter // by resultIndex
	duration prometheus.Observer
}

// resultLabels are prober_probe_total's result labels, in resultIndex order.
var resultLabels = [3]string{worker.LabelSuccessful, worker.LabelFailed, worker.LabelUnknown}

// resultIndex is label's index in resultLabels, -1 for any other label.
func resultIndex(label string) int {
	for i, l := range resultLabels {
		if l == label {
			return i
		}
	}
	return -1
}

func (w *workerActor) deleteMetrics() {
	m := w.env.metrics
	if m == nil {
		return
	}
	w.series = nil
	pt := w.m.Type().String()
	for _, r := range resultLabels {
		m.total.DeleteLabelValues(pt, r, w.m.Container().Name, w.pod.Name, w.pod.Namespace, string(w.pod.UID))
	}
	m.duration.DeleteLabelValues(pt, w.m.Container().Name, w.pod.Name, w.pod.Namespace)
}
