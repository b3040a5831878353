package actors

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/internal/restartbudget"
	"github.com/probeactor/probeactor/messages"
)

// budgetDue is the restart budget's timer going off (the gate may have room): clock → syncLoop.
type budgetDue struct{}

var budgetDueMsg = &budgetDue{}

// budgetLoop is the syncLoop's part of the restart budget (WithRestartBudget): the pure gate
// (internal/restartbudget) and what the syncLoop does with its decisions. A deferred kill is
// announced once (a RestartBudgetExhausted event), marks its container not ready
// (statusManager) and releases its worker's hold so that the worker keeps probing it (probeManager
// → worker, Defer); a recovery ends it with a RestartCancelled event; a new container (any result
// for another container ID of it: its workers publish an initial value first, and the results
// cache drops an old ID's pending change when the worker removes it, so no change of the old
// container can follow) or the pod's end drops it silently. Its methods do nothing on a nil
// budgetLoop (no budget: kubelet's immediate kills). It lives on the syncLoop's goroutine.
type budgetLoop struct {
	env   *env
	sync  *syncActor // its pods, its kills
	gate  *restartbudget.Gate
	timer clock.Timer // armed for the gate's next room while a kill waits

	// With WithSharedRestartBudget: the shared budget, the claims last asked of it, and the
	// cancel of its watch (which pokes the syncLoop whenever a claim may have been taken).
	shared  SharedBudget
	wanted  []string
	told    bool // Want was called once (the first call always goes out: a restarted tree withdraws what it forgot)
	unwatch func()
}

func newBudgetLoop(e *env, a *syncActor, b restartbudget.Budget) *budgetLoop {
	return &budgetLoop{env: e, sync: a, gate: restartbudget.New(b), shared: e.cfg.shared}
}

func (b *budgetLoop) ask(c messages.ResultChanged) { b.gate.Ask(c, b.env.now()) }

// settle ends the waiting kill a result change recovers or replaces.
func (b *budgetLoop) settle(ctx actor.Context, c messages.ResultChanged) {
	if b == nil {
		return
	}
	w, recovered, ok := b.gate.Settle(c)
	if !ok || !w.Announced {
		return
	}
	b.unmark(ctx, w)
	if recovered {
		b.env.budgetMetrics.cancel(w.Change.Type)
		b.event(w, v1.EventTypeNormal, messages.ReasonRestartCancelled, fmt.Sprintf(
			"Container %s passed its %s probe again; the deferred %s is cancelled", w.Change.Container,
			strings.ToLower(w.Change.Type.String()), b.action(w)))
	}
}

// due takes the kills the gate has room for, announces the new deferrals and re-arms the timer.
func (b *budgetLoop) due(ctx actor.Context) {
	if b == nil {
		return
	}
	now := b.env.now()
	var d restartbudget.Decision
	if b.shared != nil {
		b.watch()
		d = b.gate.DueShared(b.shared.Taken)
		if claims := b.gate.Claims(); !b.told || !slices.Equal(claims, b.wanted) {
			b.wanted, b.told = claims, true
			b.shared.Want(claims)
		}
	} else {
		d = b.gate.Due(now)
	}
	for _, w := range d.Kill {
		if w.Announced {
			b.unmark(ctx, w)
		}
		b.sync.kill(w.Change)
	}
	for _, w := range d.Defer {
		b.deferKill(ctx, w, d.Next.Sub(now))
	}
	b.arm(d.Next)
	b.env.budgetMetrics.waitingNow(b.gate.Len())
}

// release ends the waiting kills of a pod that is removed or terminating.
func (b *budgetLoop) release(ctx actor.Context, uid types.UID) {
	if b == nil {
		return
	}
	for _, w := range b.gate.Forget(uid) {
		if w.Announced {
			b.unmark(ctx, w)
		}
	}
	b.due(ctx)
}

func (b *budgetLoop) deferKill(ctx actor.Context, w restartbudget.Waiting, wait time.Duration) {
	c := w.Change
	e := b.env
	e.budgetMetrics.deferKill(c.Type)
	e.tell(ctx, e.status, &protocol.KillDeferred{PodUID: c.PodUID, ContainerID: c.ContainerID, Deferred: true})
	e.tell(ctx, e.manager, &protocol.DeferKill{Key: messages.ProbeKey{PodUID: c.PodUID, Container: c.Container, Type: c.Type},
		ContainerID: c.ContainerID})
	budget := b.gate.Budget()
	verb := "restarted"
	if b.action(w) == "kill" {
		verb = "killed"
	}
	room := fmt.Sprintf("the restart budget (%d per %s) is spent, next room in %s", budget.N, budget.Window, wait.Round(time.Second))
	if b.shared != nil {
		room = fmt.Sprintf("the cluster's shared restart budget (%d per %s) has not given it room yet", budget.N, budget.Window)
	}
	b.event(w, v1.EventTypeWarning, messages.ReasonRestartBudgetExhausted, fmt.Sprintf(
		"Container %s failed %s probe; %s deferred: %s; "+
			"the container keeps running, reported not ready, and is %s then if its probe still fails",
		c.Container, strings.ToLower(c.Type.String()), b.action(w), room, verb))
	if b.shared != nil {
		e.log.Named(nameSync).Warn("kill deferred: the cluster's shared restart budget has not given it room yet", "pod_uid", c.PodUID,
			"container", c.Container, "container_id", c.ContainerID, "probe", c.Type, "budget", budget.String())
		return
	}
	e.log.Named(nameSync).Warn("kill deferred: the restart budget is spent", "pod_uid", c.PodUID, "container", c.Container,
		"container_id", c.ContainerID, "probe", c.Type, "budget", budget.String(), "next_room_in", wait)
}

func (b *budgetLoop) unmark(ctx actor.Context, w restartbudget.Waiting) {
	b.env.tell(ctx, b.env.status, &protocol.KillDeferred{PodUID: w.Change.PodUID, ContainerID: w.Change.ContainerID})
}

// action is what the kill does: "restart", or "kill" for a container that is not restarted.
func (b *budgetLoop) action(w restartbudget.Waiting) string {
	if pod := b.pod(w.Change.PodUID); pod != nil {
		if req, _ := killRequest(pod, w.Change); !req.Restart {
			return "kill"
		}
	}
	return "restart"
}

func (b *budgetLoop) pod(uid types.UID) *v1.Pod {
	if rec, ok := b.sync.kills.Pod(uid); ok {
		return rec.Pod()
	}
	return nil
}

func (b *budgetLoop) event(w restartbudget.Waiting, typ, reason, msg string) {
	c := w.Change
	ev := messages.Event{Time: b.env.now(), Type: typ, Reason: reason, Message: msg, PodUID: c.PodUID}
	if pod := b.pod(c.PodUID); pod != nil {
		_, sidecar := podapi.Container(pod, c.Container)
		ev.Pod = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		ev.FieldPath = podapi.FieldPath(c.Container, sidecar)
	}
	b.env.cfg.sink.Event(ev)
}

// arm sets the timer for next (none when zero). Its callback reaches the syncLoop from outside
// the tree, only while the tree is not stopping. It is armed for next itself (clock.AfterFuncAt),
// not for a delay from due's reading of the clock: that fired late by the time due took (with a
// test's fake clock, by however far the test advanced it meanwhile: a kill left waiting past its
// room).
func (b *budgetLoop) arm(next time.Time) {
	b.stopTimer()
	if next.IsZero() {
		return
	}
	e := b.env
	b.timer = clock.AfterFuncAt(e.cfg.clock, next, func() {
		e.fromOutside(func() { e.send(e.sync, budgetDueMsg) })
	})
}

func (b *budgetLoop) stopTimer() {
	if b != nil && b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
}

// stop ends the timer and the shared budget's watch: the syncLoop stops or restarts.
func (b *budgetLoop) stop() {
	if b == nil {
		return
	}
	b.stopTimer()
	if b.unwatch != nil {
		b.unwatch()
		b.unwatch = nil
	}
}

// watch subscribes to the shared budget once (until stop): each change pokes the syncLoop
// from outside the tree, only while the tree is not stopping.
func (b *budgetLoop) watch() {
	if b.unwatch != nil {
		return
	}
	e := b.env
	b.unwatch = b.shared.Watch(func() {
		e.fromOutside(func() { e.send(e.sync, budgetDueMsg) })
	})
}

// budgetMetrics are the restart budget's series (with WithRestartBudget and WithRegistry). Its
// methods do nothing on nil.
type budgetMetrics struct {
	deferred  *prometheus.CounterVec
	cancelled *prometheus.CounterVec
	waiting   prometheus.Gauge
}

func newBudgetMetrics(reg prometheus.Registerer) (*budgetMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &budgetMetrics{
		deferred: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "probeactor", Subsystem: "restart_budget", Name: "deferred_kills_total",
			Help: "Kills asked for by liveness or startup failures that the restart budget deferred, by probe type.",
		}, []string{"probe_type"}),
		cancelled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "probeactor", Subsystem: "restart_budget", Name: "cancelled_kills_total",
			Help: "Deferred kills dropped because the probe passed again before the budget allowed them, by probe type.",
		}, []string{"probe_type"}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "probeactor", Subsystem: "restart_budget", Name: "waiting_kills",
			Help: "Kills waiting for the restart budget now (their containers run on, reported not ready).",
		}),
	}
	if err := registerAll(reg, "restart budget", m.deferred, m.cancelled, m.waiting); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *budgetMetrics) deferKill(t messages.ProbeType) {
	if m != nil {
		m.deferred.WithLabelValues(t.String()).Inc()
	}
}

func (m *budgetMetrics) cancel(t messages.ProbeType) {
	if m != nil {
		m.cancelled.WithLabelValues(t.String()).Inc()
	}
}

func (m *budgetMetrics) waitingNow(n int) {
	if m != nil {
		m.waiting.Set(float64(n))
	}
}

func (m *budgetMetrics) unregister(reg prometheus.Registerer) {
	if m == nil || reg == nil {
		return
	}
	reg.Unregister(m.deferred)
	reg.Unregister(m.cancelled)
	reg.Unregister(m.waiting)
}
