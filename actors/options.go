package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/probeactor/probeactor/actors/internal/exec"
	"github.com/probeactor/probeactor/actors/internal/supervision"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/restartbudget"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// Runtime is what the core needs from a container runtime. Embedders and node supply one;
// actors/fakeruntime is the deterministic one for tests.
//
// Wiring is one-way and in one order: build the runtime, then Start the tree WithRuntime(rt); Start
// hands the runtime the tree's SetPodStatus through ReportStatus before it returns, and Tree.Stop
// takes it back (ReportStatus(nil)).
type Runtime interface {
	// KillContainer kills a container whose liveness/startup probe failed and restarts it when
	// req.Restart. Called off every mailbox (the syncLoop runs it in the background); must be safe
	// for concurrent use; honours ctx cancellation; should ignore a req.ContainerID that is no longer
	// the container's current one. req.Pod is the tree's copy of the pod: its identity (name,
	// namespace, UID, deletion) and the spec fields probing reads (containers, init containers,
	// readiness gates, restart policy, grace period), not its labels, annotations or status. The
	// runtime reports the new container state (new ContainerID, etc.) afterwards through the
	// function ReportStatus gave it.
	KillContainer(ctx context.Context, req messages.KillContainer) error
	// ReportStatus gives the runtime the function it reports every change of a pod's status with
	// (the tree's SetPodStatus; nil: stop reporting). Start calls it once before it returns, Stop
	// once with nil. It must be safe to call while the runtime runs.
	ReportStatus(push func(pod *v1.Pod, status v1.PodStatus))
	probes.CommandRunner // exec probes run "in" the container
}

// PodValidator is implemented by a Runtime that cannot run every pod the API accepts (node's
// process runtime needs a command, for example): AddPod refuses a pod for which ValidatePod returns
// errors, after the API's own rules, with the same field paths.
type PodValidator interface {
	ValidatePod(pod *v1.Pod) field.ErrorList
}

// EventSink receives Kubernetes-style events. Event must not block.
type EventSink interface{ Event(messages.Event) }

// Clock is the tree's source of time (WithClock): Now, and AfterFunc returning a Timer to cancel it.
// The default is the wall clock; under testing/synctest the wall clock is the bubble's fake time.
type Clock = clock.Clock

// Timer is a pending Clock.AfterFunc call: Stop reports whether the call was still pending.
type Timer = clock.Timer

// SupervisionPolicy is the restart back-off and give-up policy for probe workers (WithSupervision):
// the n-th consecutive restart waits min(Initial × Multiplierⁿ, Max) less up to Jitter of it; a
// worker that ran ResetAfter without failing starts again from Initial; MaxFailures failures within
// Window give the worker up (its key then reports Unknown). Validate names every invalid field.
type SupervisionPolicy = supervision.Policy

// DefaultSupervisionPolicy is 0.5 s, 1 s, 2 s, … capped at 30 s, 20 % jitter, reset after one stable
// minute, give up after 10 failures in 5 minutes.
func DefaultSupervisionPolicy() SupervisionPolicy { return supervision.DefaultPolicy() }

// Prober runs one attempt of a probe (package probes implements it; WithProber wraps or replaces
// it). Probe must be safe for concurrent use and return soon after ctx is cancelled: a stopping
// worker cancels its in-flight attempt and waits for it, so a Probe that ignores ctx holds up
// RemovePod and Tree.Stop.
type Prober interface {
	Probe(ctx context.Context, spec *v1.Probe, t probes.Target) (probes.Outcome, error)
}

// Option configures Start.
type Option func(*config)

type config struct {
	runtime Runtime
	log     hclog.Logger
	clock   clock.Clock
	reg     prometheus.Registerer
	sink    EventSink
	prober  Prober
	rand    func() float64
	jitter  time.Duration // WithStartupJitterWindow; 0: one period (kubelet)
	policy  supervision.Policy
	budget  *restartbudget.Budget // WithRestartBudget; nil: kill at once, as kubelet
	shared  SharedBudget          // WithSharedRestartBudget; nil: the budget is this tree's own

	// middleware is added to every actor of the tree after the panic logger (tests inject faults).
	middleware []actor.ReceiverMiddleware

	// exec runs worker mailboxes and probe attempts; built by Start (not an option), stopped with
	// the root.
	exec *exec.Executor
	// shards overrides exec.DefaultShards (tests: trees of several shards on any machine).
	shards int
}

// WithRuntime sets the container runtime (required).
func WithRuntime(r Runtime) Option { return func(c *config) { c.runtime = r } }

// WithLogger sets the logger (default: hclog.NewNullLogger()).
func WithLogger(l hclog.Logger) Option { return func(c *config) { c.log = l } }

// WithShards runs the tree's workers on n shards (default, and for n <= 0: one per two procs,
// GOMAXPROCS/2, at least one). A shard is a timer heap, a mailbox pool and an attempt pool with
// locks of their own; a worker stays on the shard it was dealt. More shards spread the locks of the
// probe path over more cores; each shard costs a timer wake-up per millisecond while its workers are
// due. The benchmarks use it to compare shard counts (ARCHITECTURE.md, "Scaling across cores").
func WithShards(n int) Option { return func(c *config) { c.shards = n } }

// WithClock sets the clock (default: the wall clock).
func WithClock(cl Clock) Option { return func(c *config) { c.clock = cl } }

// WithRegistry registers kubelet's prober_probe_total and prober_probe_duration_seconds on r, and
// probeactor's own: probeactor_unhandled_messages_total{actor,type}, probeactor_scheduler_entries
// (the tree's timers: one per worker at rest) and probeactor_mailbox_messages{actor} (user messages
// waiting, per actor of the tree; summed over workers; a worker given up on after repeated panics
// leaves whatever waited in its mailbox counted), probeactor_container_time_to_started_seconds and
// probeactor_container_time_to_ready_seconds{namespace,container} (from a container's start to its
// first Started and first Ready; no pod label, so the series stay bounded by the workloads). Without
// it (or with nil) no metrics are kept.
func WithRegistry(r prometheus.Registerer) Option { return func(c *config) { c.reg = r } }

// WithEventSink sets where events go (default: discarded).
func WithEventSink(s EventSink) Option { return func(c *config) { c.sink = s } }

// WithProber replaces the prober (default: probes.New(runtime)).
func WithProber(p Prober) Option { return func(c *config) { c.prober = p } }

// WithRand sets the jitter source, returning numbers in [0, 1) (default: math/rand/v2).
func WithRand(r func() float64) Option { return func(c *config) { c.rand = r } }

// WithStartupJitterWindow widens kubelet's restart jitter: a worker created less than
// max(window, its period) after the tree started waits rand × period before its first probe
// (default window 0: one period, kubelet's rule). When a restart hands the tree more pods than it
// sets up in one period, kubelet's rule lets the workers created after that period probe at once,
// in bursts and in creation order; a window that covers the whole set-up spreads them all. An
// extension of kubelet, off by default (ARCHITECTURE.md, "Set-up since the 16-core run"). Start
// fails for a negative window.
func WithStartupJitterWindow(window time.Duration) Option {
	return func(c *config) { c.jitter = window }
}

// WithSupervision sets the restart back-off and give-up policy for probe workers
// (default: DefaultSupervisionPolicy()).
func WithSupervision(p SupervisionPolicy) Option { return func(c *config) { c.policy = p } }

// WithRestartBudget caps the kills that liveness and startup failures cause to n per window (a
// sliding window over the whole tree): a deliberate deviation from kubelet, which kills at once
// however many fail together (kubernetes#123204). A kill beyond the budget is deferred: the
// container keeps running and is reported not ready, a Warning event RestartBudgetExhausted says
// why, its worker keeps probing it, and the kill happens when the budget allows if the probe still
// fails (a Success cancels it, with a Normal RestartCancelled event). Deferred kills are taken
// oldest first. Containers that exit on their own are restarted by the runtime, never deferred.
// With WithRegistry: probeactor_restart_budget_deferred_kills_total{probe_type},
// probeactor_restart_budget_cancelled_kills_total{probe_type} and
// probeactor_restart_budget_waiting_kills. Start fails for n < 1 or window <= 0.
func WithRestartBudget(n int, window time.Duration) Option {
	return func(c *config) { c.budget = &restartbudget.Budget{N: n, Window: window} }
}

// SharedBudget is a restart budget shared with other processes, which decides which kills this
// tree may make (cluster/membership's Member, for node run --restart-budget with --cluster). The
// tree asks for its waiting kills by claim (pod UID/container/container ID) and kills a container
// once its claim is taken. Its methods must not block; Watch's fn may be called on any goroutine.
type SharedBudget interface {
	// Want replaces the claims this tree waits to have taken, oldest first.
	Want(claims []string)
	// Taken reports whether claim was taken: the kill may happen now.
	Taken(claim string) bool
	// Watch calls fn whenever Taken may have changed, until cancel is called.
	Watch(fn func()) (cancel func())
}

// WithSharedRestartBudget is WithRestartBudget with the room decided by s, a budget of n kills per
// window shared with other processes (node's --restart-budget with --cluster: across the
// cluster's members): a kill waits, as a deferred one does, until s has taken its claim, and
// happens then if the probe still fails. n and window are the shared budget's, for the events.
func WithSharedRestartBudget(n int, window time.Duration, s SharedBudget) Option {
	return func(c *config) { c.budget, c.shared = &restartbudget.Budget{N: n, Window: window}, s }
}

type discardSink struct{}

func (discardSink) Event(messages.Event) {}

func newConfig(opts []Option) (*config, error) {
	c := &config{
		log:    hclog.NewNullLogger(),
		clock:  clock.Real(),
		sink:   discardSink{},
		rand:   clock.DefaultRand(),
		policy: supervision.DefaultPolicy(),
	}
	for _, o := range opts {
		o(c)
	}
	if c.runtime == nil {
		return nil, fmt.Errorf("actors.Start: WithRuntime is required")
	}
	if c.log == nil {
		c.log = hclog.NewNullLogger()
	}
	if c.sink == nil {
		c.sink = discardSink{}
	}
	if c.clock == nil {
		c.clock = clock.Real()
	}
	if c.prober == nil {
		c.prober = probes.New(c.runtime)
	}
	if err := c.policy.Validate(); err != nil {
		return nil, fmt.Errorf("actors.Start: WithSupervision: %w", err)
	}
	if c.jitter < 0 {
		return nil, fmt.Errorf("actors.Start: WithStartupJitterWindow: the window must not be negative, got %v", c.jitter)
	}
	if c.budget != nil {
		if err := c.budget.Validate(); err != nil {
			return nil, fmt.Errorf("actors.Start: WithRestartBudget: %w", err)
		}
	}
	return c, nil
}
