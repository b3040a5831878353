package sharder

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cluster/membership"
	"github.com/probeactor/probeactor/cluster/ownership"
	"github.com/probeactor/probeactor/internal/podapi"
)

// ActorName is the sharder's default name (it is local: peers never address it).
const ActorName = "sharder"

// DefaultGracePeriod is a pod's termination grace period when its spec sets none (Kubernetes'
// default, 30 s).
const DefaultGracePeriod = 30 * time.Second

// PodRunner runs pods on this member: node implements it over its pod set. The sharder calls it
// from its actor, so neither call may block: hand the work to the pod machinery and return. A pod
// is identified by its UID (a changed manifest carries a new UID, as kubelet's static pods do);
// Start may be called again for a UID that was stopped (its share came back), possibly while it is
// still terminating: the runner then starts it once the old one is gone.
type PodRunner interface {
	// Start runs pod here. An error leaves it not running; it is retried on the next change.
	Start(pod *v1.Pod) error
	// Stop stops the pod with the given termination grace period.
	Stop(uid types.UID, grace time.Duration) error
}

// Membership is where the sharder gets its views (membership.Member implements it; start it
// with Config.AwaitApplied).
type Membership interface {
	// Subscribe calls fn with the current view, if any, and every later one, until cancel.
	Subscribe(fn func(membership.View)) (cancel func())
	// Applied acknowledges a view once its starts and stops were issued: peers are told a view
	// only then, so a joiner (which waits until every peer has reported seeing it) starts a pod
	// only after its previous owner has issued the pod's Stop.
	Applied(version uint64)
	// SetStopping tells the peers which pods this member still stops (the PodRunner's shell
	// calls it, before the sharder acknowledges the view that caused the stop): a gainer starts a
	// pod only once it is gone from here.
	SetStopping(uids []string)
}

// Config configures a sharder.
type Config struct {
	Membership Membership
	Runner     PodRunner
	Logger     hclog.Logger
	// Registerer, when set, gets probeactor_cluster_pods_* metrics.
	Registerer prometheus.Registerer
	// Margin is added to the bound a lost member's pods wait for (ownership.Input.Margin), given
	// the longest grace period waited for: required, Margin of the cluster's failure timeout
	// (a function that returns 0 waits for no clock drift or stop delay at all).
	Margin func(grace time.Duration) time.Duration
	// Now reads the clock (default time.Now); the views' times are on the same clock.
	Now func() time.Time
	// Quorum, when set, is called (on the sharder's goroutine: it must not block) whenever this
	// member starts or stops running pods for its quorum lease, with the reason it runs none ("").
	Quorum func(reason string)
}

// Margin is Config.Margin for a cluster whose failure timeout is timeout: ownership.Margin of it
// and the longest grace period waited for. See cluster/membership's doc.
func Margin(timeout time.Duration) func(grace time.Duration) time.Duration {
	return func(grace time.Duration) time.Duration { return ownership.Margin(timeout, grace) }
}

// SetPods replaces the pod set every member reads (caller → sharder, Request: answered with
// SetPodsResult). Every pod needs a UID, unique in the set; a set that breaks this is refused
// whole and the previous one stays.
type SetPods struct{ Pods []*v1.Pod }

// SetPodsResult answers SetPods.
type SetPodsResult struct{ Err error }

// Release stops every pod running here and every later start: the first step of leaving the
// cluster (caller → sharder, Request: answered with Released once every Stop was issued). The
// caller then stops the membership (membership.Member.Stop), whose leave makes the peers take
// the pods over at once.
type Release struct{}

// Released answers Release.
type Released struct{ Stopped int }

// GetState asks for the sharder's state (answered with State).
type GetState struct{}

// State is what the sharder knows and runs.
type State struct {
	// View is the last membership view; HaveView is false before the first.
	View     membership.View
	HaveView bool
	// Running are the pods started here and not stopped since, in UID order.
	Running []types.UID
	// Owned counts the pods of the set this member owns in its view.
	Owned int
	// Waiting are owned pods held back until a peer has seen this member (UID → that peer).
	Waiting map[types.UID]string
	// Released is true after Release.
	Released bool
	// Quorate says whether this member held its quorum lease at its last reconciliation; Reason
	// says why not (it then runs nothing).
	Quorate bool
	Reason  string
}

// Props returns the sharder's props.
func Props(cfg Config) (*actor.Props, error) {
	if cfg.Membership == nil || cfg.Runner == nil {
		return nil, errors.New("sharder: Membership and Runner are required")
	}
	if cfg.Margin == nil {
		return nil, errors.New("sharder: Margin is required (sharder.Margin of the failure timeout)")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &sharderActor{cfg: cfg, metrics: m, pods: map[types.UID]*v1.Pod{}, running: map[types.UID]time.Duration{}}
	}), nil
}

type viewChanged struct{ v membership.View }

// recheck: the sharder's timer → the sharder: the plan's Next time came (a lease ran out, a lost
// member's bound passed).
type recheck struct{}

// sharderActor is the thin shell over ownership.Reconcile: it keeps the inputs (the view, the pod
// set, what it started) and performs the plan's effects on the PodRunner.
type sharderActor struct {
	cfg      Config
	metrics  *metrics
	cancel   func()
	view     membership.View
	haveView bool
	pods     map[types.UID]*v1.Pod
	running  map[types.UID]time.Duration
	plan     ownership.Plan
	released bool
	timer    *time.Timer // fires recheck at plan.Next
	self     *actor.PID
	root     *actor.RootContext
	stopped  bool
	quorate  bool // as last logged
}

func (s *sharderActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		self, root := ctx.Self(), ctx.ActorSystem().Root
		s.self, s.root = self, root
		s.cancel = s.cfg.Membership.Subscribe(func(v membership.View) { root.Send(self, viewChanged{v}) })
	case recheck:
		if s.haveView {
			s.reconcile()
		}
	case viewChanged:
		if at, lapsed := s.view.LapsedBefore(msg.v); s.haveView && lapsed {
			s.reconcileAt(at)
		}
		s.view, s.haveView = msg.v, true
		s.reconcile()
		s.cfg.Membership.Applied(msg.v.Version)
	case *SetPods:
		err := s.setPods(msg.Pods)
		if err == nil {
			s.reconcile()
		}
		ctx.Respond(&SetPodsResult{Err: err})
	case *Release:
		s.released = true
		n := len(s.running)
		s.reconcile()
		s.cfg.Logger.Info("released every pod before leaving the cluster", "stopped", n)
		ctx.Respond(&Released{Stopped: n})
	case *GetState:
		ctx.Respond(s.state())
	case *actor.Stopping:
		s.stopped = true
		if s.timer != nil {
			s.timer.Stop()
		}
		if s.cancel != nil {
			s.cancel()
		}
	case *actor.Stopped, *actor.Restarting:
	default:
		s.cfg.Logger.Warn("sharder: unexpected message", "type", fmt.Sprintf("%T", msg))
	}
}

func (s *sharderActor) setPods(pods []*v1.Pod) error {
	next := make(map[types.UID]*v1.Pod, len(pods))
	for i, p := range pods {
		switch {
		case p == nil:
			return fmt.Errorf("pods[%d]: nil", i)
		case p.UID == "":
			return fmt.Errorf("pods[%d] (%s/%s): metadata.uid: required (the cluster places pods by UID)", i, p.Namespace, p.Name)
		case next[p.UID] != nil:
			return fmt.Errorf("pods[%d] (%s/%s): metadata.uid: Duplicate value: %q is also the UID of %s/%s", i, p.Namespace, p.Name, p.UID, next[p.UID].Namespace, next[p.UID].Name)
		default:
			next[p.UID] = p
		}
	}
	s.pods = next
	return nil
}

// reconcile runs the core on the current inputs and performs its effects.
func (s *sharderActor) reconcile() { s.reconcileAt(s.cfg.Now()) }

// reconcileAt runs the core as of now and performs its effects.
func (s *sharderActor) reconcileAt(now time.Time) {
	desired := make(map[types.UID]time.Duration, len(s.pods))
	if !s.released {
		for uid, p := range s.pods {
			desired[uid] = gracePeriod(p)
		}
	}
	s.plan = ownership.Reconcile(s.view.OwnershipInput(now, s.haveView && !s.released, desired, s.running, s.cfg.Margin))
	s.armRecheck()
	s.logQuorum()
	var started, stopped int
	for _, e := range s.plan.Effects {
		switch e.Action {
		case ownership.Stop:
			delete(s.running, e.UID)
			stopped++
			if err := s.cfg.Runner.Stop(e.UID, e.Grace); err != nil {
				s.cfg.Logger.Error("could not stop a pod", "uid", e.UID, "reason", e.Reason, "error", err)
			}
		case ownership.Start:
			if err := s.cfg.Runner.Start(s.pods[e.UID]); err != nil {
				s.cfg.Logger.Error("could not start a pod; retried on the next change", "uid", e.UID, "error", err)
				continue
			}
			s.running[e.UID] = gracePeriod(s.pods[e.UID])
			started++
		default:
			s.cfg.Logger.Error("sharder: unknown effect", "action", e.Action)
		}
	}
	if started+stopped > 0 || len(s.plan.Waiting) > 0 {
		s.cfg.Logger.Debug("reconciled", "view", s.view.Version, "members", s.view.Members, "started", started, "stopped", stopped,
			"running", len(s.running), "owned", s.plan.Owned, "waiting", len(s.plan.Waiting))
	}
	if m := s.metrics; m != nil {
		m.owned.Set(float64(s.plan.Owned))
		m.waiting.Set(float64(len(s.plan.Waiting)))
		m.running.Set(float64(len(s.running)))
		m.changes.WithLabelValues("start").Add(float64(started))
		m.changes.WithLabelValues("stop").Add(float64(stopped))
	}
}

// armRecheck has the timer send recheck at the plan's Next time (a lease's end, a bound).
func (s *sharderActor) armRecheck() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if s.plan.Next.IsZero() || s.stopped || s.root == nil {
		return
	}
	self, root := s.self, s.root
	s.timer = time.AfterFunc(max(s.plan.Next.Sub(s.cfg.Now()), 0)+time.Millisecond, func() { root.Send(self, recheck{}) })
}

// logQuorum logs when this member starts or stops running pods for its quorum.
func (s *sharderActor) logQuorum() {
	if s.plan.Quorate == s.quorate || s.released {
		return
	}
	s.quorate = s.plan.Quorate
	if s.quorate {
		s.cfg.Logger.Info("this member holds a quorum lease: it runs its share of the pods")
	} else if s.view.Version > 0 {
		s.cfg.Logger.Warn("this member runs no pods", "reason", s.plan.Reason, "running_stopped", len(s.running))
	}
	if s.cfg.Quorum != nil {
		s.cfg.Quorum(s.plan.Reason)
	}
	if m := s.metrics; m != nil {
		v := 0.0
		if s.quorate {
			v = 1
		}
		m.quorate.Set(v)
	}
}

func (s *sharderActor) state() *State {
	st := &State{View: s.view.Clone(), HaveView: s.haveView, Owned: s.plan.Owned, Waiting: map[types.UID]string{}, Released: s.released,
		Quorate: s.plan.Quorate, Reason: s.plan.Reason}
	for uid := range s.running {
		st.Running = append(st.Running, uid)
	}
	slices.Sort(st.Running)
	for uid, p := range s.plan.Waiting {
		st.Waiting[uid] = p
	}
	return st
}

// gracePeriod is the time a stop of the pod may take: its spec.terminationGracePeriodSeconds (or
// DefaultGracePeriod), never below kubelet's minimum (podapi.MinimumGracePeriod), which node's
// stops and its shims' fencing apply. The bound a lost member's pods wait for uses it.
func gracePeriod(p *v1.Pod) time.Duration {
	if p == nil {
		return max(DefaultGracePeriod, podapi.MinimumGracePeriod)
	}
	return max(podapi.GracePeriod(p), podapi.MinimumGracePeriod)
}

type metrics struct {
	owned, waiting, running, quorate prometheus.Gauge
	changes                          *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		owned:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "probeactor_cluster_pods_owned", Help: "Pods of the set this member owns in its view."}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{Name: "probeactor_cluster_pods_waiting", Help: "Owned pods held back until every live peer has seen this member."}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: "probeactor_cluster_pods_running", Help: "Pods this member started and has not stopped."}),
		quorate: prometheus.NewGauge(prometheus.GaugeOpts{Name: "probeactor_cluster_quorum", Help: "1 while this member holds its quorum lease (it runs its share), 0 while it runs no pod for want of one."}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "probeactor_cluster_pod_changes_total", Help: "Pods started and stopped here because of the pod set or the membership."}, []string{"action"}),
	}
	m.changes.WithLabelValues("start")
	m.changes.WithLabelValues("stop")
	for _, c := range []prometheus.Collector{m.owned, m.waiting, m.running, m.quorate, m.changes} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register sharder metrics: %w", err)
		}
	}
	return m, nil
}
