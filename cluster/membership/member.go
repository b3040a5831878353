package membership

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cluster/ownership"
	"github.com/probeactor/probeactor/internal/lifecycle"
)

// ActorName is the membership actor's name: the one actor of this package peers address.
const ActorName = "membership"

// View is one member's view of the cluster.
type View struct {
	// Self is this member's address.
	Self string
	// Members are the live members' addresses in order, Self included.
	Members []string
	// Reported holds, for each live peer, the view it last reported (in its heartbeats): whether
	// it has seen this member yet.
	Reported map[string][]string
	// Version increases with every view published.
	Version uint64
	// Published is when the view was published.
	Published time.Time

	// All lists every configured member (Config.Peers, sorted), Self included.
	All []string
	// LeaseUntil is until when this member holds its quorum lease (zero: none): until then a
	// quorum of All (this member included) is bound not to drop it. See the package doc.
	LeaseUntil time.Time
	// Current holds, for each live peer whose grant holds, until when: its report was sent after
	// it heard a heartbeat this member made within the failure timeout.
	Current map[string]time.Time
	// Stopping holds, for each live peer that reported some, the pods it still stops.
	Stopping map[string][]string
	// Gone holds, for each configured member out of the view, since when a quorum has left it out
	// (a member out of the view and not in Gone may still hold a lease).
	Gone map[string]time.Time
	// Left holds the peers whose last incarnation announced its leave: they stopped their pods
	// before they did.
	Left map[string]bool

	// Taken and Waiting are this member's claims under the shared restart budget
	// (Config.RestartBudget; nil without one): the kills it took that are still in the window
	// (key → when: the kill may happen), and the ones that wait (key → why). See Want.
	Taken   map[string]time.Time
	Waiting map[string]string
}

// OwnershipInput is what ownership.Reconcile looks at in this view as of now: its members,
// reports, lease and bounds, the pods every member reads (desired: UID → grace period), those
// this member runs, and margin (sharder.Margin) of the longest grace period desired. ready: the
// member acts on its views (false before its first, or once it released its pods). The sharder
// and the cluster simulation both build their input here.
func (v View) OwnershipInput(now time.Time, ready bool, desired, running map[types.UID]time.Duration, margin func(time.Duration) time.Duration) ownership.Input {
	in := ownership.Input{Self: v.Self, Ready: ready, Now: now, All: v.All, Members: v.Members, Reported: v.Reported,
		Current: v.Current, LeaseUntil: v.LeaseUntil, Gone: v.Gone, Left: v.Left, Desired: desired, Running: running}
	if len(v.Stopping) > 0 {
		in.Stopping = make(map[string][]types.UID, len(v.Stopping))
		for p, uids := range v.Stopping {
			for _, u := range uids {
				in.Stopping[p] = append(in.Stopping[p], types.UID(u))
			}
		}
	}
	var longest time.Duration
	for _, g := range desired {
		longest = max(longest, g)
	}
	in.Margin = margin(longest)
	return in
}

// LapsedBefore reports whether the lease this view granted ran out before next was published,
// and when: a member that has not acted on that yet (the recheck at the lease's end had not come)
// acts as at that instant first — its shims have fenced its containers, so it stops every pod —
// before next's view starts any again under the rules. No runtime restart of a fenced container
// is left to chance.
func (v View) LapsedBefore(next View) (time.Time, bool) {
	if v.LeaseUntil.IsZero() || !v.LeaseUntil.Before(next.Published) {
		return time.Time{}, false
	}
	return v.LeaseUntil, true
}

// Clone returns a deep copy.
func (v View) Clone() View {
	c := v
	c.Members = slices.Clone(v.Members)
	c.Reported = make(map[string][]string, len(v.Reported))
	for k, r := range v.Reported {
		c.Reported[k] = slices.Clone(r)
	}
	c.All = slices.Clone(v.All)
	c.Current = maps.Clone(v.Current)
	c.Gone = maps.Clone(v.Gone)
	c.Left = maps.Clone(v.Left)
	c.Taken = maps.Clone(v.Taken)
	c.Waiting = maps.Clone(v.Waiting)
	if v.Stopping != nil {
		c.Stopping = make(map[string][]string, len(v.Stopping))
		for k, r := range v.Stopping {
			c.Stopping[k] = slices.Clone(r)
		}
	}
	return c
}

// Member is this process's membership in a cluster: the membership actor (core, its decisions,
// behind memberActor, its shell) on the actor system's guarded remote, and the views it
// published, for View and the subscribers. It implements internal/lifecycle's Start/Stop.
type Member struct {
	cfg     Config
	sys     *actor.ActorSystem
	metrics *metrics

	mu      sync.Mutex
	pid     *actor.PID // the membership actor, from Start on
	subs    map[int]func(View)
	nextSub int
	view    View // the last view published (a copy of core's, for readers on other goroutines)
	ready   bool
	wanted  []string // the claims last asked for (Want); nil: none asked yet

	stopOnce sync.Once
	abandon  atomic.Bool    // Abandon: Stop announces no leave
	probes   sync.WaitGroup // the membership actor's TCP probes (see memberActor.probe)
}

var _ lifecycle.Component = (*Member)(nil)

// New prepares this process's membership on sys: it validates cfg (errors name the flag) and
// registers the metrics. Nothing runs until Start, so a subscriber (the sharder) can subscribe
// first and see the very first view.
func New(sys *actor.ActorSystem, cfg Config) (*Member, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Member{cfg: cfg, sys: sys, subs: map[int]func(View){}}
	var err error
	if m.metrics, err = newMetrics(cfg.Registerer); err != nil {
		return nil, err
	}
	return m, nil
}

// Start joins the cluster: it spawns the membership actor, which starts probing and heartbeating
// the peers, and returns once it runs. The actor system's remote must already run at Config.Self,
// configured with RemoteConfig (remotesec.Start); it must keep running until Stop has returned.
// Views flow from the first round on (every peer heard, or the failure timeout passed).
func (m *Member) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if addr := m.sys.Address(); addr != m.cfg.Self {
		return fmt.Errorf("membership: the actor system's remote runs at %q, not at this member's address %s: start it first, with membership.RemoteConfig", addr, m.cfg.Self)
	}
	// Not under m.mu: the actor's first view is published under it. A second Start fails here
	// (the name exists).
	props := actor.PropsFromProducer(func() actor.Actor { return newMemberActor(m) })
	pid, err := m.sys.Root.SpawnNamed(props, ActorName)
	if err != nil {
		return fmt.Errorf("spawn the membership actor: %w", err)
	}
	m.mu.Lock()
	m.pid = pid
	if m.wanted != nil { // asked for before Start (the probe tree starts first)
		m.sys.Root.Send(pid, claimsChanged{keys: m.wanted})
	}
	m.mu.Unlock()
	m.cfg.Logger.Info("joined the cluster", "cluster", m.cfg.Cluster, "self", m.cfg.Self, "peers", m.cfg.Peers,
		"failure_timeout", m.cfg.FailureTimeout, "heartbeat_interval", m.cfg.HeartbeatInterval)
	return nil
}

// actor is the membership actor once Start has spawned it.
func (m *Member) actor() *actor.PID {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pid
}

// Self returns this member's address.
func (m *Member) Self() string { return m.cfg.Self }

// View returns the current view; false before the first one.
func (m *Member) View() (View, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view.Clone(), m.ready
}

// Subscribe calls fn with the current view (if any) and then with every new one, in order, until
// the returned cancel is called. fn runs on the membership actor's goroutine (or the caller's,
// for the current view) under a lock: it must not block or call back into the Member (an actor's
// fn sends itself a message).
func (m *Member) Subscribe(fn func(View)) (cancel func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.nextSub
	m.nextSub++
	m.subs[id] = fn
	if m.ready {
		fn(m.view.Clone())
	}
	return func() {
		m.mu.Lock()
		delete(m.subs, id)
		m.mu.Unlock()
	}
}

// Applied tells the membership that the subscriber has acted on the view of this version (the
// sharder: it has started and stopped its pods accordingly). With Config.AwaitApplied, peers are
// only told a view once it has been applied, so a peer that waits until this member has seen it
// (ownership's agreed views) also waits until this member has issued the stops that view implies.
// It never blocks.
func (m *Member) Applied(version uint64) {
	if pid := m.actor(); pid != nil {
		m.sys.Root.Send(pid, applied{version: version})
	}
}

// SetStopping tells the membership the pods this member still stops (their UIDs): every
// heartbeat carries them, so a peer that gains one of them starts it only once it is gone from
// here. The sharder's runner calls it whenever the set changes, before it acknowledges the view
// that caused a stop (Applied), so that no peer hears the view without the stop. It never blocks.
func (m *Member) SetStopping(uids []string) {
	if pid := m.actor(); pid != nil {
		m.sys.Root.Send(pid, stoppingChanged{uids: slices.Clone(uids)})
	}
}

// Want replaces the kills this member waits to take under the cluster's shared restart budget
// (Config.RestartBudget), by key, in the order asked (the oldest first): a new key is claimed, a
// waiting key that is no longer listed is withdrawn. A claim the budget allows is taken in a
// later view (View.Taken, Taken); node kills the container then. What is asked before Start is
// claimed once the member runs. It never blocks; without a budget it does nothing.
func (m *Member) Want(keys []string) {
	if m.cfg.RestartBudget.N == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.wanted = slices.Clone(keys)
	if m.wanted == nil {
		m.wanted = []string{}
	}
	if m.pid != nil { // under m.mu: the actor gets the lists in the order they were asked
		m.sys.Root.Send(m.pid, claimsChanged{keys: m.wanted})
	}
}

// Taken reports whether this member took the claim for key (Want) and it is still in the window:
// the kill may happen now.
func (m *Member) Taken(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.view.Taken[key]
	return ok
}

// Watch calls fn (on the membership actor's goroutine, or the caller's once at once: it must not
// block) whenever the claims taken (View.Taken) changed, for a caller that polls Taken; cancel
// stops it. Views come with every heartbeat's news; the taken claims change far less often.
func (m *Member) Watch(fn func()) (cancel func()) {
	var last map[string]time.Time
	first := true
	return m.Subscribe(func(v View) {
		if first || !maps.EqualFunc(v.Taken, last, time.Time.Equal) {
			first, last = false, v.Taken
			fn()
		}
	})
}

// publish hands a new view to every subscriber (the membership actor calls it).
func (m *Member) publish(v View) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.view, m.ready = v, true
	for _, id := range slices.Sorted(maps.Keys(m.subs)) {
		m.subs[id](v.Clone())
	}
}

// Abandon makes Stop leave the cluster without a word, as a crash would: the peers drop this
// member after the failure timeout and take its pods over only after the fencing bound. node's
// planned restart in a cluster uses it: the containers run on within their lease, and the next
// node on the same --root-dir rejoins (a new incarnation) and adopts them if it comes back within
// it. A leave announced instead would have the peers start the pods at once, while they still run
// here.
func (m *Member) Abandon() { m.abandon.Store(true) }

// Stop leaves the cluster: it tells the live peers, so they drop this member at once instead of
// after the failure timeout (it waits for their acknowledgements at most LeaveTimeout, never past
// ctx's deadline, and a cancelled ctx ends the wait within one leave retry), stops the membership
// actor and waits for its TCP probes. The remote keeps running: its owner stops it afterwards.
// The caller stops what it runs first (the sharder stops its pods) so that a pod is not started
// on a peer while it still runs here; if some still stop (SetStopping has them), Stop tells no
// peer, and they wait for this member as after a crash. A Stop without a successful Start, or a
// second Stop, returns nil at once. A leave no peer acknowledged is logged, not returned: the
// peers still drop this member, after the failure timeout.
func (m *Member) Stop(ctx context.Context) error {
	var err error
	m.stopOnce.Do(func() {
		pid := m.actor()
		if pid == nil {
			return // never started
		}
		switch lr, lerr := m.requestLeave(ctx, pid); {
		case m.abandon.Load():
			m.cfg.Logger.Info("leaving the cluster without a word (a planned restart): peers drop this member after the failure timeout")
		case lerr == nil && lr.stopping > 0:
			m.cfg.Logger.Warn("pods still stop here: the leave is not announced, so peers wait for them as after a crash (the failure timeout, then each pod's grace period)",
				"stopping", lr.stopping)
		case lerr == nil:
			m.announceLeave(ctx, lr)
		default:
			m.cfg.Logger.Warn("could not announce the leave; peers will drop this member after the failure timeout", "error", lerr)
		}
		if perr := m.sys.Root.PoisonFuture(pid).Wait(); perr != nil {
			err = fmt.Errorf("stop the membership actor: %w", perr)
		}
		m.mu.Lock()
		m.pid = nil // Applied, SetStopping and Want send nothing more (the probe tree stops after this)
		m.mu.Unlock()
		m.probes.Wait()
		m.cfg.Logger.Info("left the cluster", "cluster", m.cfg.Cluster, "self", m.cfg.Self)
	})
	return err
}

// requestLeave asks the membership actor to stop heartbeating and return its leave.
func (m *Member) requestLeave(ctx context.Context, pid *actor.PID) (leaveReply, error) {
	timeout := leaveRequestTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	if timeout <= 0 {
		return leaveReply{}, context.DeadlineExceeded
	}
	res, err := m.sys.Root.RequestFuture(pid, leaveRequest{}, timeout).Result()
	if err != nil {
		return leaveReply{}, err
	}
	lr, ok := res.(leaveReply)
	if !ok {
		return leaveReply{}, fmt.Errorf("unexpected answer %T", res)
	}
	return lr, nil
}

// leaveRequestTimeout bounds the membership actor's answer to the leave request (it answers at
// once unless its mailbox is flooded).
const leaveRequestTimeout = 5 * time.Second

// announceLeave sends the leave to every live peer until it acknowledges, for at most
// LeaveTimeout and while ctx lasts. It asks again every leaveRetry: the peer's acknowledgement of
// the first request can be lost, because the peer resets its endpoint to the leaver as it drops
// it (an EndpointTerminatedEvent that stops the endpoint writer, see core.update); a repeated
// leave finds the leaver already gone and is answered on a new connection.
func (m *Member) announceLeave(ctx context.Context, lr leaveReply) {
	deadline := m.cfg.Clock.Now().Add(m.cfg.LeaveTimeout)
	var wg sync.WaitGroup
	for _, p := range lr.peers {
		wg.Go(func() { // ends by the deadline or ctx's
			err := context.DeadlineExceeded
			for left := m.cfg.LeaveTimeout; left > 0 && ctx.Err() == nil; left = deadline.Sub(m.cfg.Clock.Now()) {
				wait := min(left, leaveRetry)
				if d, ok := ctx.Deadline(); ok {
					wait = min(wait, time.Until(d))
				}
				if wait <= 0 {
					break
				}
				if !listens(p, wait) {
					// Gone (stopped as this member stops, as a whole cluster does): a request would
					// start a protoactor endpoint writer whose connect loop holds the remote's stop for
					// 10 s (see the package doc), and there is nobody to tell.
					m.cfg.Logger.Info("a peer no longer listens: the leave is not announced to it", "peer", p)
					return
				}
				if _, err = m.sys.Root.RequestFuture(actor.NewPID(p, ActorName), lr.hb, wait).Result(); err == nil {
					return
				}
			}
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			m.cfg.Logger.Warn("a peer did not acknowledge the leave; it drops this member after the failure timeout", "peer", p, "error", err)
		})
	}
	wg.Wait()
}

// listens reports whether a TCP connect to addr succeeds within timeout (the connection is closed
// at once).
func listens(addr string, timeout time.Duration) bool {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// leaveRetry is how long one leave request waits for its acknowledgement before it is repeated.
const leaveRetry = 200 * time.Millisecond

// metrics are the probeactor_cluster_* metrics of one member (nil without a registerer).
type metrics struct {
	members *prometheus.GaugeVec
	views   prometheus.Counter
	ignored *prometheus.CounterVec
	repairs prometheus.Counter
	claims  *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "probeactor_cluster_members", Help: "Live members in this member's view, itself included."}, nil),
		views:   prometheus.NewCounter(prometheus.CounterOpts{Name: "probeactor_cluster_view_changes_total", Help: "Views this member published (members joined or left, or a peer reported a new view)."}),
		ignored: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "probeactor_cluster_heartbeats_ignored_total", Help: "Heartbeats not taken into account, by reason."}, []string{"reason"}),
		repairs: prometheus.NewCounter(prometheus.CounterOpts{Name: "probeactor_cluster_connection_repairs_total", Help: "Connections to a peer reset because the peer, heard here, acknowledged none of this member's recent heartbeats (they were lost on the way)."}),
	}
	for _, r := range []string{ignoredInvalid, ignoredCluster, ignoredUnknownPeer, ignoredSelf, ignoredStale, ignoredLeft} {
		m.ignored.WithLabelValues(r)
	}
	m.claims = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "probeactor_cluster_restart_budget_claims",
		Help: "This member's kills under the cluster's shared restart budget (--restart-budget with --cluster): taken and still in the window, or waiting."},
		[]string{"state"})
	for _, c := range []prometheus.Collector{m.members, m.views, m.ignored, m.repairs, m.claims} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register cluster metrics: %w", err)
		}
	}
	return m, nil
}
