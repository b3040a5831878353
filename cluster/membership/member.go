package membership

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/probeactor/probeactor/remotesec"
	"github.com/probeactor/probeactor/wire/clusterv1"
)

// ActorName is the membership actor's name: the one actor of this package peers address.
const ActorName = "membership"

// gossipOff is the gossip interval protoactor's cluster gets: its gossip loop never ticks (see the
// package doc for why gossip is off), and Member.Stop ends the loop.
const gossipOff = 365 * 24 * time.Hour

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
}

// Clone returns a deep copy.
func (v View) Clone() View {
	c := v
	c.Members = slices.Clone(v.Members)
	c.Reported = make(map[string][]string, len(v.Reported))
	for k, r := range v.Reported {
		c.Reported[k] = slices.Clone(r)
	}
	return c
}

// Member is this process's membership in a cluster: protoactor's cluster (its member list and
// topology events, with the static-peers provider of this package) on a guarded remote.
type Member struct {
	cfg     Config
	self    string
	sys     *actor.ActorSystem
	cluster *cluster.Cluster
	prov    *provider
	pid     *actor.PID
	metrics *metrics

	mu      sync.Mutex
	subs    map[int]func(View)
	nextSub int
	view    View
	ready   bool

	stopOnce sync.Once
	probes   sync.WaitGroup // the membership actor's TCP probes (see memberActor.probe)
}

// New prepares this process's membership on sys (which must not have a remote or a cluster yet):
// it validates cfg and configures protoactor's cluster with a guarded remote (remotesec) and this
// package's static-peers provider. Nothing listens or runs until Start, so a subscriber (the
// sharder) can subscribe first and see the very first view.
func New(sys *actor.ActorSystem, cfg Config) (*Member, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Member{cfg: cfg, self: cfg.self(), sys: sys, subs: map[int]func(View){}}
	var err error
	if m.metrics, err = newMetrics(cfg.Registerer); err != nil {
		return nil, err
	}
	rcfg := cfg.Remote
	rcfg.Accept = append(slices.Clone(rcfg.Accept), clusterv1.Names()...)
	rcfg.Targets = append(slices.Clone(rcfg.Targets), ActorName)
	rcfg.Futures = true // peers acknowledge a leave (Stop) by answering its request
	rcfg.Inspect = inspect(cfg.Remote.Inspect)
	if rcfg.Logger == nil {
		rcfg.Logger = cfg.Logger
	}
	if rcfg.Registerer == nil {
		rcfg.Registerer = cfg.Registerer
	}
	rc, err := remotesec.Configure(sys, rcfg)
	if err != nil {
		return nil, err
	}
	m.prov = &provider{m: m}
	ccfg := cluster.Configure(cfg.Cluster, m.prov, noGrains{}, rc)
	ccfg.GossipInterval = gossipOff
	m.cluster = cluster.New(sys, ccfg)
	return m, nil
}

// Start joins the cluster: protoactor's StartMember starts the remote, then this package's
// provider, whose membership actor starts heartbeating. It returns once StartMember has returned
// (it sleeps 1 s by design); views flow from the first round on (every peer heard, or the failure
// timeout passed). Stop it with Stop before shutting sys down.
func (m *Member) Start() error {
	if err := startMember(m.cluster, m.prov); err != nil {
		return err
	}
	m.cfg.Logger.Info("joined the cluster", "cluster", m.cfg.Cluster, "self", m.self, "peers", m.cfg.Peers,
		"failure_timeout", m.cfg.FailureTimeout, "heartbeat_interval", m.cfg.HeartbeatInterval)
	return nil
}

// startMember runs protoactor's StartMember, turning its panics into errors. Before the provider
// starts, the only panic is remote.Start's on a busy address (nothing else was started); after
// it, the remote runs and is shut down again.
func startMember(c *cluster.Cluster, prov *provider) (err error) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if prov.started {
			prov.m.shutdownCluster()
			err = fmt.Errorf("start the cluster member: %v", p)
			return
		}
		err = fmt.Errorf("remote listen %s: %v", prov.m.cfg.Remote.Listen, p)
	}()
	c.StartMember()
	return nil
}

// inspect binds a heartbeat's address to the stream it arrived on (the guard verified that the
// peer owns that address: its IP without TLS, its certificate with mTLS), then defers to the
// caller's own check for its messages.
func inspect(next func(string, []byte, remotesec.Peer) error) func(string, []byte, remotesec.Peer) error {
	name := clusterv1.Names()[0]
	return func(typeName string, data []byte, peer remotesec.Peer) error {
		if typeName != name {
			if next != nil {
				return next(typeName, data, peer)
			}
			return nil
		}
		var hb clusterv1.Heartbeat
		if err := proto.Unmarshal(data, &hb); err != nil {
			return fmt.Errorf("heartbeat: %w", err)
		}
		if hb.GetAddress() != peer.Address {
			return fmt.Errorf("a heartbeat from %s speaks for %q", peer.Address, hb.GetAddress())
		}
		return nil
	}
}

// actor is the membership actor once Start has spawned it.
func (m *Member) actor() *actor.PID {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pid
}

// Self returns this member's address.
func (m *Member) Self() string { return m.self }

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
// (ownership's mutual visibility) also waits until this member has stopped what it handed over.
// It never blocks.
func (m *Member) Applied(version uint64) {
	if pid := m.actor(); pid != nil {
		m.sys.Root.Send(pid, applied{version: version})
	}
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

// leaveRequest asks the membership actor to stop heartbeating and return its leave message.
type leaveRequest struct{}

type leaveReply struct {
	hb    *clusterv1.Heartbeat
	peers []string
}

// Stop leaves the cluster: it tells the live peers (waiting at most LeaveTimeout for their
// acknowledgements, so they drop this member at once instead of after the failure timeout),
// stops the membership actor and shuts protoactor's cluster parts and the remote down. The
// caller stops what it runs first (the sharder stops its pods) so that a pod is not started on a
// peer while it still runs here.
func (m *Member) Stop() {
	m.stopOnce.Do(func() {
		pid := m.actor()
		if pid == nil {
			return // never started
		}
		if res, err := m.sys.Root.RequestFuture(pid, leaveRequest{}, 5*time.Second).Result(); err == nil {
			if lr, ok := res.(leaveReply); ok {
				m.announceLeave(lr)
			}
		} else {
			m.cfg.Logger.Warn("could not announce the leave; peers will drop this member after the failure timeout", "error", err)
		}
		if err := m.sys.Root.PoisonFuture(pid).Wait(); err != nil {
			m.cfg.Logger.Warn("membership actor stop", "error", err)
		}
		m.probes.Wait()
		m.shutdownCluster()
		m.cfg.Logger.Info("left the cluster", "cluster", m.cfg.Cluster, "self", m.self)
	})
}

// announceLeave sends the leave to every live peer until it acknowledges, for at most
// LeaveTimeout. It asks again every leaveRetry: the peer's acknowledgement of the first request
// can be lost, because protoactor's MemberList tears down the peer's connection to the leaver as
// it removes it (an EndpointTerminatedEvent that stops the endpoint writer before it has sent
// what is queued); a repeated leave finds the leaver already gone and is answered on a new
// connection.
func (m *Member) announceLeave(lr leaveReply) {
	deadline := m.cfg.Clock.Now().Add(m.cfg.LeaveTimeout)
	var wg sync.WaitGroup
	for _, p := range lr.peers {
		wg.Go(func() { // ends by the deadline
			var err error
			for left := m.cfg.LeaveTimeout; left > 0; left = deadline.Sub(m.cfg.Clock.Now()) {
				if _, err = m.sys.Root.RequestFuture(actor.NewPID(p, ActorName), lr.hb, min(left, leaveRetry)).Result(); err == nil {
					return
				}
			}
			m.cfg.Logger.Warn("a peer did not acknowledge the leave; it drops this member after the failure timeout", "peer", p, "error", err)
		})
	}
	wg.Wait()
}

// leaveRetry is how long one leave request waits for its acknowledgement before it is repeated.
const leaveRetry = 200 * time.Millisecond

// shutdownCluster stops what protoactor's cluster started, without Cluster.Shutdown's fixed 2 s
// sleep (it waits for grain handoffs; there are no grains): the gossip loop and actor, and the
// remote (telling connected peers it is going).
func (m *Member) shutdownCluster() {
	m.cluster.Gossip.Shutdown()
	remotesec.Stop(m.cluster.Remote)
}

// errNoClient: a member is always a full member; protoactor's "client" mode is not used.
var errNoClient = errors.New("membership: cluster clients are not supported")

// metrics are the probeactor_cluster_* metrics of one member (nil without a registerer).
type metrics struct {
	members *prometheus.GaugeVec
	views   prometheus.Counter
	ignored *prometheus.CounterVec
	repairs prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "probeactor_cluster_members", Help: "Live members in this member's view, itself included."}, nil),
		views:   prometheus.NewCounter(prometheus.CounterOpts{Name: "probeactor_cluster_view_changes_total", Help: "Views this member published (members joined or left, or a peer reported a new view)."}),
		ignored: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "probeactor_cluster_heartbeats_ignored_total", Help: "Heartbeats not taken into account, by reason."}, []string{"reason"}),
		repairs: prometheus.NewCounter(prometheus.CounterOpts{Name: "probeactor_cluster_connection_repairs_total", Help: "Connections to a peer reset because the peer, heard here, kept reporting views without this member."}),
	}
	for _, r := range []string{ignoredInvalid, ignoredCluster, ignoredUnknownPeer, ignoredSelf, ignoredStale, ignoredLeft} {
		m.ignored.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.members, m.views, m.ignored, m.repairs} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register cluster metrics: %w", err)
		}
	}
	return m, nil
}
