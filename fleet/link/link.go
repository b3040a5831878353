package link

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors"
	"github.com/probeactor/probeactor/fleet/uplink"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

const (
	// fleetFlushTimeout bounds Stop's flush: an aggregator that is down is not waited for.
	fleetFlushTimeout = 2 * time.Second
	// flushPoll is how often the flush looks whether the Coalescer is idle (the aggregator
	// acknowledged everything, or the uplink has no session).
	flushPoll = 10 * time.Millisecond
)

// fleetBackoff is the uplink's reconnection back-off: 200 ms doubling to 2 s (equal jitter), so an
// aggregator back after a long outage is found within ~2 s (the bound is 5 s).
var fleetBackoff = uplink.Backoff{Initial: 200 * time.Millisecond, Max: 2 * time.Second}

// Results is the probe tree's subscription API (actors.Tree implements it): Subscribe makes the
// subscriber actor receive *messages.ResultChanges batches, each answered with
// *messages.AckResults; Unsubscribe ends that.
type Results interface {
	Subscribe(subscriber *actor.PID, opts ...actors.SubscribeOption)
	Unsubscribe(subscriber *actor.PID)
}

// Config configures a Link. Every field but MTLS and Logger is required.
type Config struct {
	// System is the node's actor system. Its remote already runs (node starts the remote part
	// first): the aggregator answers the uplink over it.
	System *actor.ActorSystem
	// Results is the probe tree whose results the link reports.
	Results Results
	// Pods returns the pods node runs (proc.Runtime.Pods); it is called from the feed actor.
	Pods func() []*v1.Pod
	// View returns the merged statuses of the given pods as /pods serves them (spec.nodeName set);
	// it is called from the feed actor with a bounded context.
	View func(context.Context, []*v1.Pod) ([]v1.Pod, error)
	// Aggregator is the fleet aggregator's remote address, host:port (--fleet).
	Aggregator string
	// Node is this node's name in the fleet (--node-name).
	Node string
	// Heartbeat is the idle time after which the uplink tells the aggregator the node is alive
	// (--node-status-update-frequency).
	Heartbeat time.Duration
	// MTLS says the remote uses mutual TLS; it is only logged.
	MTLS bool
	// Logger is the link's logger (node passes its own, named "fleet"); the uplink logs on
	// Logger.Named("uplink"). Default: discard.
	Logger hclog.Logger
}

// validate rejects a Config that cannot work, naming the field.
func (c *Config) validate() error {
	switch {
	case c.System == nil:
		return errors.New("link: Config.System: required")
	case c.Results == nil:
		return errors.New("link: Config.Results: required")
	case c.Pods == nil:
		return errors.New("link: Config.Pods: required")
	case c.View == nil:
		return errors.New("link: Config.View: required")
	case c.Aggregator == "":
		return errors.New("link: Config.Aggregator: required")
	case c.Node == "":
		return errors.New("link: Config.Node: required")
	case c.Heartbeat <= 0:
		return fmt.Errorf("link: Config.Heartbeat %v: must be positive", c.Heartbeat)
	}
	if host, _, err := net.SplitHostPort(c.Aggregator); err != nil || host == "" {
		return fmt.Errorf("link: Config.Aggregator %q: want host:port", c.Aggregator)
	}
	return nil
}

// Link is node's fleet link, one lifecycle component (internal/lifecycle's contract): the feed
// actor, the uplink actor and the Coalescer between them. See the package doc.
type Link struct {
	cfg          Config
	src          *uplink.Coalescer
	feedProps    *actor.Props
	uplinkProps  *actor.Props
	flushTimeout time.Duration // fleetFlushTimeout; tests shorten it

	mu      sync.Mutex
	started bool       // Start began (a Link starts once)
	feed    *actor.PID // nil before Start and from Stop on: PodChanged is a no-op then
	uplink  *actor.PID // nil unless running
}

// New validates cfg and prepares a Link; it spawns nothing.
func New(cfg Config) (*Link, error) {
	return newLink(cfg, clock.Real())
}

// newLink is New with the feed's clock injected (tests pass a *clock.Fake).
func newLink(cfg Config, clk clock.Clock) (*Link, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	src := uplink.NewCoalescer()
	up, err := uplink.Props(uplink.Config{Aggregator: cfg.Aggregator, Node: cfg.Node, Incarnation: uint64(time.Now().UnixNano()),
		Source: src, Heartbeat: cfg.Heartbeat, Backoff: fleetBackoff, Logger: cfg.Logger.Named("uplink")})
	if err != nil {
		return nil, fmt.Errorf("link: %w", err)
	}
	deps := feedDeps{src: src, pods: cfg.Pods, view: cfg.View, clock: clk, log: cfg.Logger}
	return &Link{
		cfg:          cfg,
		src:          src,
		feedProps:    actor.PropsFromProducer(func() actor.Actor { return newFeed(deps) }),
		uplinkProps:  up,
		flushTimeout: fleetFlushTimeout,
	}, nil
}

// Start spawns the feed, subscribes it to the probe tree's results (a snapshot first; node starts
// the link before it adds any pod), and spawns the uplink (named uplink.ActorName, which the
// remote's guard lets the aggregator's answers reach). On an error it undoes what it began. A Link
// starts once.
func (l *Link) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		return errors.New("start the fleet link: started already")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start the fleet link: %w", err)
	}
	l.started = true
	root := l.cfg.System.Root
	feed, err := root.SpawnNamed(l.feedProps, feedName)
	if err != nil {
		return fmt.Errorf("start the fleet feed: %w", err)
	}
	l.cfg.Results.Subscribe(feed, actors.WithSnapshot())
	up, err := root.SpawnNamed(l.uplinkProps, uplink.ActorName)
	if err != nil {
		err = fmt.Errorf("start the fleet uplink: %w", err)
		l.cfg.Results.Unsubscribe(feed)
		if perr := root.PoisonFuture(feed).Wait(); perr != nil {
			err = errors.Join(err, fmt.Errorf("stop the fleet feed: %w", perr))
		}
		return err
	}
	l.feed, l.uplink = feed, up
	l.cfg.Logger.Info("reporting to the fleet aggregator", "aggregator", l.cfg.Aggregator, "node_name", l.cfg.Node, "mtls", l.cfg.MTLS)
	return nil
}

// PodChanged tells the link a pod started, stopped or changed status (node subscribes it to the
// runtime's pod events): the feed reads the pod's merged status after fleetRefreshDelay. It is safe
// from any goroutine, and a no-op before Start and from Stop on.
func (l *Link) PodChanged(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.feed != nil {
		l.cfg.System.Root.Send(l.feed, podDirty{uid: uid})
	}
}

// SetCondition reports one of the node's own conditions to the aggregator (by type; an unchanged
// one is not sent again): a cluster member's ClusterQuorum. Safe from any goroutine, before Start
// too (the first snapshot carries it).
func (l *Link) SetCondition(c uplink.Condition) { l.src.SetCondition(c) }

// SetNode reports the node's own Node object (its /nodes, less conditions: the aggregator makes its
// own Ready) to the aggregator; an unchanged one is not sent again. Safe from any goroutine, before
// Start too (the first snapshot carries it). Do not modify n afterwards.
func (l *Link) SetNode(n *v1.Node) { l.src.SetNode(n) }

// SetUsage reports what the node and its containers used over its latest sampling window to the
// aggregator: each one is sent (the latest, while the aggregator has not acknowledged the last
// batches; a new session's snapshot carries the latest). Safe from any goroutine, before Start
// too. Do not modify u afterwards. Its error is the wire's refusal of u ((*fleetv1.Usage).Validate):
// such a usage is not sent.
func (l *Link) SetUsage(u *fleetv1.Usage) error { return l.src.SetUsage(u) }

// Stop sends the node's last state, then stops the uplink and the feed: the feed re-reads every
// pod (so the pods a stopping node stopped are reported), then Stop waits until the aggregator has
// acknowledged everything or the uplink has no session, at most fleetFlushTimeout and never past
// ctx (a flush cut short is logged, not returned: an aggregator that is down is expected); then it
// stops the uplink, unsubscribes the feed and stops it. When Stop returns, none of the link's
// actors or timers runs. Stop before Start, or a second Stop, does nothing.
func (l *Link) Stop(ctx context.Context) error {
	l.mu.Lock()
	feed, up := l.feed, l.uplink
	l.mu.Unlock()
	if feed == nil {
		return nil
	}
	l.flush(ctx, feed)
	root := l.cfg.System.Root
	var errs []error
	if err := root.PoisonFuture(up).Wait(); err != nil {
		errs = append(errs, fmt.Errorf("stop the fleet uplink: %w", err))
	}
	l.mu.Lock()
	l.feed, l.uplink = nil, nil
	l.mu.Unlock()
	l.cfg.Results.Unsubscribe(feed)
	if err := root.PoisonFuture(feed).Wait(); err != nil {
		errs = append(errs, fmt.Errorf("stop the fleet feed: %w", err))
	}
	return errors.Join(errs...)
}

// flush has the feed read every pod now and waits until the Coalescer is idle (everything
// delivered was acknowledged and nothing is pending, or there is no session), bounded by
// l.flushTimeout and ctx.
func (l *Link) flush(ctx context.Context, feed *actor.PID) {
	ctx, cancel := context.WithTimeout(ctx, l.flushTimeout)
	defer cancel()
	done := make(chan struct{})
	l.cfg.System.Root.Send(feed, flushRequest{done: done})
	select {
	case <-done:
	case <-ctx.Done():
		l.cfg.Logger.Warn("the fleet feed did not read the pods' last state in time", "timeout", l.flushTimeout, "error", context.Cause(ctx))
		return
	}
	tick := time.NewTicker(flushPoll) // stopped on return
	defer tick.Stop()
	for !l.src.Idle() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			l.cfg.Logger.Warn("the fleet aggregator did not acknowledge the node's last changes in time", "timeout", l.flushTimeout, "error", context.Cause(ctx))
			return
		}
	}
}
