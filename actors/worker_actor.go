package actors

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/clock"
	"github.com/probeactor/probeactor/actors/worker"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// defaultPeriod replaces a non-positive periodSeconds (the API defaults it to 10 s; validation is
// the embedder's job, but a zero period must not make a worker spin).
const defaultPeriod = 10 * time.Second

// tick is the scheduler's wake-up for a worker. One value serves every worker.
type tick struct{}

var tickMsg = &tick{}

// attemptDone carries an attempt's verdict from its goroutine back to the worker.
type attemptDone struct {
	gen     uint32
	verdict worker.Verdict
	start   time.Time
}

// attemptPanicked carries a prober panic back to the worker, which re-raises it in Receive so the
// probeManager's supervision strategy handles it.
type attemptPanicked struct {
	gen    uint32
	reason any
	stack  []byte
}

// workerActor is the thin shell around one worker.Core and worker.Ticker. At rest it holds no
// goroutine and exactly one scheduler entry. The same instance is reused when the actor restarts
// after a panic, so run counters and the tracked container survive and the cached result is left
// alone (kubelet's HandleCrash: the worker continues, result unchanged).
type workerActor struct {
	env       *env
	key       messages.ProbeKey
	pod       *v1.Pod // the AddPod object (never updated, as kubelet's worker.pod)
	container *v1.Container
	spec      *v1.Probe
	sidecar   bool
	core      *worker.Core
	ticker    *worker.Ticker
	published worker.Published // what the cache holds for this key: only changes are sent

	self    *actor.PID
	fire    func() // scheduler callback, allocated once
	timer   clock.Handle
	wake    time.Time
	gen     uint32
	cancel  context.CancelFunc // in-flight attempt
	done    chan struct{}      // closed when the attempt goroutine has ended
	started bool
	exiting bool
	lg      hclog.Logger // bound lazily: most workers never log
}

func newWorkerActor(e *env, k messages.ProbeKey, pod *v1.Pod, c *v1.Container, spec *v1.Probe, sidecar bool,
	view messages.ContainerView) *workerActor {
	period := time.Duration(spec.PeriodSeconds) * time.Second
	if period <= 0 {
		period = defaultPeriod
	}
	w := &workerActor{
		env: e, key: k, pod: pod, container: c, spec: spec, sidecar: sidecar,
		core: worker.New(worker.Config{
			Type:         k.Type,
			Spec:         spec,
			RestartNever: pod.Spec.RestartPolicy == v1.RestartPolicyNever,
			Sidecar:      sidecar,
			Deleting:     pod.DeletionTimestamp != nil,
		}),
		ticker: worker.NewTicker(period),
	}
	w.core.SetView(view)
	return w
}

func (w *workerActor) logger() hclog.Logger {
	if w.lg == nil {
		w.lg = w.env.log.Named("worker").With("pod", w.pod.Namespace+"/"+w.pod.Name, "container", w.key.Container,
			"probe", w.key.Type.String())
	}
	return w.lg
}

func (w *workerActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		w.onStarted(ctx)
	case *tick:
		w.onTick(ctx)
	case *messages.ContainerView:
		w.core.SetView(*m)
	case *messages.TriggerReadiness:
		if !w.exiting {
			if w.env.log.IsTrace() {
				w.logger().Trace("triggered probe by manual run")
			}
			w.handle(ctx, w.ticker.Trigger(w.env.now()))
		}
	case *attemptDone:
		if m.gen == w.gen && !w.exiting {
			w.onDone(ctx, m)
		}
	case *inspectWorker:
		ctx.Respond(&workerInfo{Exists: true, Busy: w.ticker.Busy(), ContainerID: w.core.ContainerID(),
			ResultRun: w.core.ResultRun(), OnHold: w.core.OnHold()})
	case *attemptPanicked:
		if m.gen == w.gen {
			w.logger().Error("prober panicked", "panic", fmt.Sprint(m.reason), "stack", string(m.stack))
			panic(fmt.Sprintf("prober panicked: %v", m.reason))
		}
	case *actor.Restarting:
		w.abort()
		w.disarm()
	case *actor.Stopping:
		w.abort()
		w.disarm()
		if id := w.core.ContainerID(); id != "" && !w.env.stopping.Load() {
			ctx.Send(w.env.cache, &messages.RemoveResult{ContainerID: id, Type: w.key.Type})
		}
		w.deleteMetrics()
	default:
	}
}

func (w *workerActor) onStarted(ctx actor.Context) {
	now := w.env.now()
	if w.self == nil {
		self, e := ctx.Self(), w.env
		w.self = self
		w.fire = func() { e.send(self, tickMsg) }
	}
	if w.started {
		// Restarted after a panic: forget the lost attempt and continue with a fresh run loop.
		w.core.Abandon()
		w.ticker = worker.NewTicker(w.ticker.Period())
		w.handle(ctx, w.ticker.Fire(now))
		return
	}
	w.started = true
	j := worker.Jitter(now, w.env.start, w.ticker.Period(), w.env.cfg.rand)
	if j <= 0 {
		w.handle(ctx, w.ticker.Fire(now))
		return
	}
	w.handle(ctx, w.ticker.Start(now, j))
}

func (w *workerActor) onTick(ctx actor.Context) {
	now := w.env.now()
	if w.exiting || now.Before(w.wake) {
		return // stale: the entry was re-armed after this tick was sent
	}
	w.handle(ctx, w.ticker.Fire(now))
}

// handle carries out a ticker step: re-arm the one scheduler entry, and run doProbe if asked (again
// for as long as the ticker asks and no attempt is in flight).
func (w *workerActor) handle(ctx actor.Context, s worker.Step) {
	for {
		if !s.Wake.IsZero() {
			w.arm(s.Wake)
		}
		if !s.Run || w.exiting {
			return
		}
		d := w.core.Begin(w.env.now())
		w.apply(ctx, d)
		if d.Exit {
			w.exiting = true
			w.disarm()
			ctx.Send(ctx.Parent(), &exitWorker{pid: ctx.Self()})
			return
		}
		if d.Probe {
			w.startAttempt(d.ContainerID)
			return
		}
		s = w.ticker.Done(w.env.now())
	}
}

func (w *workerActor) apply(ctx actor.Context, d worker.Decision) {
	if w.env.stopping.Load() {
		return // the cache may be gone already
	}
	if d.RemoveID != "" {
		w.published.Forget(d.RemoveID)
		ctx.Send(w.env.cache, &messages.RemoveResult{ContainerID: d.RemoveID, Type: w.key.Type})
	}
	for _, r := range d.Set {
		if w.published.Changed(d.ContainerID, r) {
			ctx.Send(w.env.cache, &messages.SetResult{PodUID: w.key.PodUID, Container: w.key.Container,
				ContainerID: d.ContainerID, Type: w.key.Type, Result: r})
		}
	}
}

func (w *workerActor) arm(at time.Time) {
	w.env.sched.Cancel(w.timer)
	w.wake = at
	w.timer = w.env.sched.At(at, w.fire)
}

func (w *workerActor) disarm() {
	w.env.sched.Cancel(w.timer)
	w.timer = clock.Handle{}
}

// startAttempt runs the prober off the mailbox, on the attempt pool; its verdict (or panic) comes back as a message.
func (w *workerActor) startAttempt(id messages.ContainerID) {
	w.gen++
	gen := w.gen
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w.cancel, w.done = cancel, done
	e, pt, spec := w.env, w.key.Type, w.spec
	self := w.self
	target := probes.Target{Container: w.container, ContainerID: string(id), PodIP: w.core.View().PodIP}
	e.cfg.exec.attempts.Go(func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil && ctx.Err() == nil {
				e.send(self, &attemptPanicked{gen: gen, reason: r, stack: debug.Stack()})
			}
		}()
		start := e.now()
		v := worker.RunProbe(ctx, e.cfg.prober, pt, spec, target)
		if ctx.Err() == nil { // else the worker aborted the attempt and may be gone
			e.send(self, &attemptDone{gen: gen, verdict: v, start: start})
		}
	})
}

// abort cancels the in-flight attempt and waits for its goroutine (probes honour ctx).
func (w *workerActor) abort() {
	if w.cancel == nil {
		return
	}
	w.cancel()
	<-w.done
	w.cancel, w.done = nil, nil
	w.gen++ // a verdict already queued is now stale
}

func (w *workerActor) onDone(ctx actor.Context, m *attemptDone) {
	w.cancel()
	w.cancel, w.done = nil, nil
	now := w.env.now()
	v := m.verdict
	for _, ev := range v.Events {
		w.env.cfg.sink.Event(messages.Event{
			Time: now, Type: v1.EventTypeWarning, Reason: ev.Reason, Message: ev.Message,
			Pod:    types.NamespacedName{Namespace: w.pod.Namespace, Name: w.pod.Name},
			PodUID: w.pod.UID, FieldPath: fieldPath(w.key.Container, w.sidecar),
		})
	}
	if v.Err != nil {
		w.logger().Debug("probe errored", "error", v.Err, "tries", v.Tries)
	} else {
		w.observe(v.Result, now.Sub(m.start))
	}
	w.apply(ctx, w.core.Complete(v.Result, v.Err != nil))
	w.handle(ctx, w.ticker.Done(now))
}

func (w *workerActor) observe(r messages.Result, d time.Duration) {
	m := w.env.metrics
	if m == nil {
		return
	}
	pt := w.key.Type.String()
	label, timed := metricResult(r)
	m.total.WithLabelValues(pt, label, w.key.Container, w.pod.Name, w.pod.Namespace, string(w.pod.UID)).Inc()
	if timed {
		m.duration.WithLabelValues(pt, w.key.Container, w.pod.Name, w.pod.Namespace).Observe(d.Seconds())
	}
}

func (w *workerActor) deleteMetrics() {
	m := w.env.metrics
	if m == nil {
		return
	}
	pt := w.key.Type.String()
	for _, r := range []string{resultSuccessful, resultFailed, resultUnknown} {
		m.total.DeleteLabelValues(pt, r, w.key.Container, w.pod.Name, w.pod.Namespace, string(w.pod.UID))
	}
	m.duration.DeleteLabelValues(pt, w.key.Container, w.pod.Name, w.pod.Namespace)
}
