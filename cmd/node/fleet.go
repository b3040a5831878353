package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/probeactor/probeactor/actors"
	"github.com/probeactor/probeactor/fleet/uplink"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/remotesec"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// `node run --fleet ADDR --node-name NAME`: the node reports its pods (the merged status /pods
// serves, spec.nodeName set) and its probe results to a fleet aggregator (`node fleet`) through
// fleet/uplink, over a protoactor remote guarded by remotesec.
//
// The pieces, all in the node's actor system:
//   - fleetFeed subscribes to the probe tree's results (subscribeResults, the one adapter over the
//     tree's subscription API), puts every change into an uplink.Coalescer and acknowledges the
//     tree at once: the Coalescer is where changes coalesce per key while the aggregator is slow or
//     down (memory bounded by keys, never by time). A result change, a runtime status or a pod
//     started or stopped marks the pod dirty; ~100 ms later the feed re-reads the dirty pods'
//     merged statuses and gives the changed ones to the Coalescer, removed pods as removals. Every
//     fleetFullSync it re-reads every pod (a safety net: nothing is missed for longer).
//   - the uplink actor mirrors the Coalescer to the aggregator with credit end to end: a snapshot
//     per session, reconnects with capped exponential back-off and jitter (fleetBackoff).
//   - the remote (--fleet-listen, default loopback on an ephemeral port) exists because protoactor
//     answers requests over the requester's own server; it accepts only the aggregator's answers
//     (fleetv1.ToNode) to the uplink and its futures. In cluster mode (--cluster) the cluster's
//     remote is the process's one remote, and the uplink uses it.

const (
	// fleetRefreshDelay batches the dirty pods' status reads: a probe result reaches the statusManager
	// and the feed independently, so the feed reads a little later (and coalesces bursts).
	fleetRefreshDelay = 100 * time.Millisecond
	// fleetFullSync is how often every pod's status is read again, whatever was marked dirty.
	fleetFullSync = 10 * time.Second
	// defaultStatusUpdateFrequency is kubelet's --node-status-update-frequency default: the idle
	// time after which the uplink sends a heartbeat (keep it well under the aggregator's
	// --node-monitor-grace-period).
	defaultStatusUpdateFrequency = 10 * time.Second
	// defaultFleetListen is --fleet-listen's default: loopback, an ephemeral port.
	defaultFleetListen = "127.0.0.1:0"
)

// fleetBackoff is the uplink's reconnection back-off: 200 ms doubling to 2 s (equal jitter), so an
// aggregator back after a long outage is found within ~2 s (the bound is 5 s).
var fleetBackoff = uplink.Backoff{Initial: 200 * time.Millisecond, Max: 2 * time.Second}

// fleetConfig is the fleet flags of `node run`, and the mTLS flags the cluster shares.
type fleetConfig struct {
	nodeName    string
	aggregator  string        // --fleet
	listen      string        // --fleet-listen
	statusEvery time.Duration // --node-status-update-frequency
	certFile    string
	keyFile     string
	caFile      string
	tls         *remotesec.TLS // loaded by validate
}

func addFleetFlags(fs *flag.FlagSet, c *fleetConfig) {
	fs.StringVar(&c.nodeName, "node-name", "", "this node's name in the fleet and the cluster (a DNS subdomain); required with --fleet or --cluster")
	fs.StringVar(&c.aggregator, "fleet", "", "host:port of a fleet aggregator's remote (`node fleet --remote-listen`) to report this node's pods and probe results to")
	fs.StringVar(&c.listen, "fleet-listen", defaultFleetListen, "host:port of this node's remote endpoint for the aggregator's answers (port 0: ephemeral); a non-loopback address needs mutual TLS")
	fs.DurationVar(&c.statusEvery, "node-status-update-frequency", defaultStatusUpdateFrequency, "idle time after which the node tells the aggregator it is alive (keep it well under the aggregator's --node-monitor-grace-period)")
	fs.StringVar(&c.certFile, "tls-cert-file", "", "PEM certificate of this node (Common Name system:node:<node name>, serverAuth and clientAuth); enables mutual TLS on --fleet-listen and --cluster-listen")
	fs.StringVar(&c.keyFile, "tls-private-key-file", "", "PEM private key of --tls-cert-file")
	fs.StringVar(&c.caFile, "client-ca-file", "", "PEM CA bundle that signed the aggregator's and every peer's certificate")
}

// validate checks the fleet flags (cluster: --cluster was given) and loads the TLS files; errors
// name the flag.
func (c *fleetConfig) validate(cluster bool) error {
	tlsGiven := c.certFile != "" || c.keyFile != "" || c.caFile != ""
	if c.aggregator == "" && !cluster {
		if tlsGiven {
			return errors.New("--tls-cert-file, --tls-private-key-file and --client-ca-file need --fleet or --cluster")
		}
		return nil
	}
	if c.nodeName == "" {
		return errors.New("--node-name: required with --fleet and --cluster")
	}
	if errs := validation.IsDNS1123Subdomain(c.nodeName); len(errs) > 0 {
		return fmt.Errorf("--node-name %q: %s", c.nodeName, errs[0])
	}
	if c.aggregator != "" {
		if err := checkHostPort(c.aggregator, false); err != nil {
			return fmt.Errorf("--fleet %q: %w", c.aggregator, err)
		}
		if cluster && c.listen != defaultFleetListen {
			return fmt.Errorf("--fleet-listen %s: not used with --cluster (the uplink uses the cluster's remote, --cluster-listen)", c.listen)
		}
		if err := checkHostPort(c.listen, true); err != nil {
			return fmt.Errorf("--fleet-listen %q: %w", c.listen, err)
		}
		if c.statusEvery <= 0 {
			return fmt.Errorf("--node-status-update-frequency %v: must be a positive duration (e.g. 10s)", c.statusEvery)
		}
	}
	tlsCfg, err := remotesec.LoadTLS(c.certFile, c.keyFile, c.caFile)
	if err != nil {
		return err
	}
	c.tls = tlsCfg
	if c.aggregator != "" && !cluster && c.tls == nil {
		host, _, _ := net.SplitHostPort(c.listen)
		if !loopbackHost(host) {
			return fmt.Errorf("--fleet-listen %s is not a loopback address: configure mutual TLS (--tls-cert-file, --tls-private-key-file, --client-ca-file) to listen on it", c.listen)
		}
	}
	return nil
}

// checkHostPort accepts host:port with a numeric port (0 only when zeroOK) and a non-empty host.
func checkHostPort(addr string, zeroOK bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want host:port")
	}
	if host == "" {
		return errors.New("the host is missing")
	}
	p, err := netip.ParseAddrPort("127.0.0.1:" + port)
	if err != nil || (p.Port() == 0 && !zeroOK) {
		return fmt.Errorf("port %q: want 1-65535", port)
	}
	return nil
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// fleetLink is what node runs for the fleet; shutdown stops it (stopFleet).
type fleetLink struct {
	cfg    fleetConfig
	remote *remote.Remote // nil when the cluster owns the process's remote
	src    *uplink.Coalescer
	feed   *actor.PID
	uplink *actor.PID
	unsub  func()

	stopOnce sync.Once
}

// buildFleet starts the feed with --fleet (buildNode) and, without --cluster, the node's own
// remote and the uplink; in cluster mode the uplink starts once the cluster's remote runs
// (joinCluster).
func (n *node) buildFleet(cfg runConfig) error {
	if cfg.fleet.aggregator == "" {
		return nil
	}
	n.fleet = &fleetLink{cfg: cfg.fleet}
	if err := n.startFeed(); err != nil {
		return err
	}
	if cfg.cluster.enabled() {
		return nil
	}
	r, err := remotesec.Start(n.sys, remotesec.Config{Listen: cfg.fleet.listen, TLS: cfg.fleet.tls, Accept: fleetv1.ToNode(),
		Targets: []string{uplink.ActorName}, Futures: true, Logger: n.log.Named("remote")})
	if err != nil {
		return fmt.Errorf("--fleet-listen %s: %w", cfg.fleet.listen, err)
	}
	n.fleet.remote = r
	return n.startUplink(cfg.fleet)
}

// startFeed starts the feed and subscribes it to the tree, before any pod is added.
func (n *node) startFeed() error {
	f := n.fleet
	f.src = uplink.NewCoalescer()
	feed := &fleetFeed{src: f.src, specs: n.rt.Pods, view: n.podsWithStatus, log: n.log.Named("fleet"), sync: newPodSync()}
	var err error
	if f.feed, err = n.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return feed }), "fleet-feed"); err != nil {
		return fmt.Errorf("start the fleet feed: %w", err)
	}
	f.unsub = subscribeResults(n.tree, f.feed)
	return nil
}

// startUplink starts the uplink; the process's remote runs already.
func (n *node) startUplink(cfg fleetConfig) error {
	props, err := uplink.Props(uplink.Config{Aggregator: cfg.aggregator, Node: cfg.nodeName, Incarnation: uint64(time.Now().UnixNano()),
		Source: n.fleet.src, Heartbeat: cfg.statusEvery, Backoff: fleetBackoff, Logger: n.log.Named("fleet.uplink")})
	if err != nil {
		return fmt.Errorf("--fleet: %w", err)
	}
	if n.fleet.uplink, err = n.sys.Root.SpawnNamed(props, uplink.ActorName); err != nil {
		return fmt.Errorf("start the fleet uplink: %w", err)
	}
	n.log.Info("reporting to the fleet aggregator", "aggregator", cfg.aggregator, "node_name", cfg.nodeName, "mtls", cfg.tls != nil)
	return nil
}

// subscribeResults is the feed's subscription to every probe result of the tree (the actor form:
// the feed is an actor, ResultChanges answered with AckResults), with a snapshot first so the
// Coalescer holds every key's current value whenever it is made; it is made before any pod is
// added, so the snapshot is empty then. The Coalescer's state is the snapshot each uplink session
// starts with.
func subscribeResults(t *actors.Tree, feed *actor.PID) (cancel func()) {
	t.Subscribe(feed, actors.WithSnapshot())
	return func() { t.Unsubscribe(feed) }
}

// fleetPodChanged tells the feed a pod started, stopped or changed status (no-op without --fleet).
func (n *node) fleetPodChanged(uid types.UID) {
	if f := n.fleet; f != nil && f.feed != nil {
		n.sys.Root.Send(f.feed, podDirty{uid: uid})
	}
}

// stopFleet sends the node's last state (flushFleet), then stops the uplink, the feed and the
// fleet's own remote, in that order. Only the first call does anything.
func (n *node) stopFleet() {
	f := n.fleet
	if f == nil {
		return
	}
	f.stopOnce.Do(func() { n.stopFleetOnce(f) })
}

func (n *node) stopFleetOnce(f *fleetLink) {
	n.flushFleet(f)
	if f.uplink != nil {
		if err := n.sys.Root.PoisonFuture(f.uplink).Wait(); err != nil {
			n.log.Warn("fleet uplink did not stop cleanly", "error", err)
		}
	}
	if f.feed != nil && f.unsub != nil {
		f.unsub()
		if err := n.sys.Root.PoisonFuture(f.feed).Wait(); err != nil {
			n.log.Warn("fleet feed did not stop cleanly", "error", err)
		}
	}
	if f.remote != nil {
		remotesec.Stop(f.remote)
	}
}

// fleetFlushTimeout bounds flushFleet's wait (an aggregator that is down is not waited for).
const fleetFlushTimeout = 2 * time.Second

// flushFleet has the feed read every pod now and waits, at most fleetFlushTimeout, until the
// aggregator acknowledged everything (or the uplink has no session): the pods a stopping node
// stopped reach the aggregator before the uplink goes.
func (n *node) flushFleet(f *fleetLink) {
	if f.feed == nil || f.uplink == nil {
		return
	}
	if _, err := n.sys.Root.RequestFuture(f.feed, fleetFlush{}, fleetFlushTimeout).Result(); err != nil {
		n.log.Warn("fleet feed did not flush", "error", err)
		return
	}
	tick := time.NewTicker(10 * time.Millisecond) // polls the Coalescer; stopped on return
	defer tick.Stop()
	deadline := time.After(fleetFlushTimeout)
	for !f.src.Idle() {
		select {
		case <-tick.C:
		case <-deadline:
			n.log.Warn("the fleet aggregator did not acknowledge the node's last changes in time", "timeout", fleetFlushTimeout)
			return
		}
	}
}

// Messages the feed receives besides the tree's ResultChanges.
type (
	fleetFlush  struct{} // read every pod now, then answer (stopFleet)
	podDirty    struct{ uid types.UID }
	refreshDue  struct{}
	fullSyncDue struct{}
)

// fleetFeed turns the tree's results and the node's pods into the Coalescer's state (see the top
// of this file). Its decisions are podSync's.
type fleetFeed struct {
	src   *uplink.Coalescer
	specs func() []*v1.Pod
	view  func(context.Context, []*v1.Pod) ([]v1.Pod, error)
	log   hclog.Logger
	sync  *podSync

	refreshArmed bool
	stopRefresh  func() // pending refreshDue timer; ends when it fires or at Stopping
	stopFull     func() // pending fullSyncDue timer; ends when it fires or at Stopping
	stopped      bool
}

func (f *fleetFeed) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		f.armFull(ctx)
	case *messages.ResultChanges:
		for _, c := range m.Changes {
			f.src.SetResult(c)
			f.sync.Mark(c.PodUID)
		}
		ctx.Respond(&messages.AckResults{Seq: m.Seq})
		f.armRefresh(ctx)
	case podDirty:
		f.sync.Mark(m.uid)
		f.armRefresh(ctx)
	case refreshDue:
		f.refreshArmed = false
		f.refresh()
	case fleetFlush:
		f.sync.MarkAll()
		f.refresh()
		ctx.Respond(true)
	case fullSyncDue:
		f.sync.MarkAll()
		f.refresh()
		f.armFull(ctx)
	case *actor.Stopping:
		f.stopped = true
		for _, stop := range []func(){f.stopRefresh, f.stopFull} {
			if stop != nil {
				stop()
			}
		}
	case *actor.Stopped, *actor.Restarting:
	default:
		f.log.Warn("fleet feed: unexpected message", "type", fmt.Sprintf("%T", m))
	}
}

func (f *fleetFeed) armRefresh(ctx actor.Context) {
	if f.refreshArmed || f.stopped {
		return
	}
	f.refreshArmed = true
	self, root := ctx.Self(), ctx.ActorSystem().Root
	t := time.AfterFunc(fleetRefreshDelay, func() { root.Send(self, refreshDue{}) })
	f.stopRefresh = func() { t.Stop() }
}

func (f *fleetFeed) armFull(ctx actor.Context) {
	if f.stopped {
		return
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	t := time.AfterFunc(fleetFullSync, func() { root.Send(self, fullSyncDue{}) })
	f.stopFull = func() { t.Stop() }
}

// refresh reads the pods podSync plans and hands the changed ones to the Coalescer.
func (f *fleetFeed) refresh() {
	specs := f.specs()
	byUID := make(map[types.UID]*v1.Pod, len(specs))
	uids := make([]types.UID, 0, len(specs))
	for _, p := range specs {
		byUID[p.UID] = p
		uids = append(uids, p.UID)
	}
	read, removed := f.sync.Plan(uids)
	for _, uid := range removed {
		f.src.RemovePod(uid)
	}
	if len(read) == 0 {
		return
	}
	want := make([]*v1.Pod, len(read))
	for i, uid := range read {
		want[i] = byUID[uid]
	}
	pods, err := f.view(context.Background(), want)
	if err != nil {
		f.log.Warn("cannot read the pods' statuses for the fleet; retried", "pods", len(read), "error", err)
		for _, uid := range read {
			f.sync.Mark(uid)
		}
		return
	}
	for i := range pods {
		if f.sync.Changed(&pods[i]) {
			f.src.SetPod(&pods[i])
		}
	}
}

// podSync decides which pods the feed reads and reports: pure, table-tested.
type podSync struct {
	dirty map[types.UID]struct{}
	all   bool
	sent  map[types.UID]*v1.Pod // the last pod handed over, per UID
}

func newPodSync() *podSync {
	return &podSync{dirty: map[types.UID]struct{}{}, sent: map[types.UID]*v1.Pod{}}
}

// Mark says a pod may have changed (or appeared, or gone).
func (s *podSync) Mark(uid types.UID) { s.dirty[uid] = struct{}{} }

// MarkAll says every pod may have changed.
func (s *podSync) MarkAll() { s.all = true }

// Plan returns, given the pods the runtime runs, the ones to read (dirty and running; all running
// ones after MarkAll) and the ones to report removed (dirty and not running; after MarkAll every
// pod reported and not running), both sorted, and clears the marks.
func (s *podSync) Plan(running []types.UID) (read, removed []types.UID) {
	run := make(map[types.UID]struct{}, len(running))
	for _, uid := range running {
		run[uid] = struct{}{}
	}
	gone := func(uid types.UID) {
		if _, ok := run[uid]; !ok {
			removed = append(removed, uid)
			delete(s.sent, uid)
		}
	}
	if s.all {
		read = append(read, running...)
		for uid := range s.sent {
			gone(uid)
		}
	} else {
		for uid := range s.dirty {
			if _, ok := run[uid]; ok {
				read = append(read, uid)
			}
		}
	}
	for uid := range s.dirty {
		gone(uid) // a never-reported pod too: a late result of it must be dropped
	}
	s.dirty, s.all = map[types.UID]struct{}{}, false
	slices.Sort(read)
	slices.Sort(removed)
	return slices.Compact(read), slices.Compact(removed)
}

// Changed records pod as reported and says whether it differs from the last one reported.
func (s *podSync) Changed(pod *v1.Pod) bool {
	prev, ok := s.sent[pod.UID]
	s.sent[pod.UID] = pod
	return !ok || !apiequality.Semantic.DeepEqual(prev.Status, pod.Status) || prev.Spec.NodeName != pod.Spec.NodeName
}
