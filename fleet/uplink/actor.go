package uplink

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"

	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// ActorName is the uplink actor's default name (the node's remote guard must let the aggregator's
// Terminated reach it: remotesec.Config.Targets).
const ActorName = "uplink"

// Config configures an uplink.
type Config struct {
	// Aggregator is the aggregator's remote address (host:port).
	Aggregator string
	// Node is this node's name; Incarnation identifies this process (its start time in Unix
	// nanoseconds: a restarted node is newer).
	Node        string
	Incarnation uint64
	// Source is the local state to mirror.
	Source Source
	// RequestTimeout bounds each request (default 5 s); a timeout drops the session.
	RequestTimeout time.Duration
	// Heartbeat is the idle time after which a heartbeat is sent (default 10 s, kubelet's
	// node-status update frequency; keep it well under the aggregator's grace period).
	Heartbeat time.Duration
	// Window is the number of batches in flight at a time (default DefaultWindow): a change goes
	// out at once instead of waiting for the round trip of the batch ahead; the source coalesces
	// while the window is full.
	Window int
	// Backoff between reconnection attempts (default 200 ms doubling to 5 s, equal jitter).
	Backoff Backoff
	// Clock gives the time and the timers (default: the wall clock, clock.Real).
	Clock  clock.Clock
	Logger hclog.Logger
}

func (c *Config) defaults() error {
	if c.Aggregator == "" || c.Node == "" || c.Incarnation == 0 || c.Source == nil {
		return errors.New("uplink: Aggregator, Node, Incarnation and Source are required")
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 5 * time.Second
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 10 * time.Second
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Backoff.Initial <= 0 {
		c.Backoff.Initial = 200 * time.Millisecond
	}
	if c.Backoff.Max < c.Backoff.Initial {
		c.Backoff.Max = max(5*time.Second, c.Backoff.Initial)
	}
	if c.Backoff.Rand == nil {
		c.Backoff.Rand = rand.Float64
	}
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return nil
}

// Props returns the uplink actor's props. Spawn it (named ActorName, or any name the node's
// remote guard lists) in an actor system whose remote is started (remotesec.Start with Futures:
// true, Accept: fleetv1.ToNode()).
func Props(cfg Config) (*actor.Props, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &uplinkActor{cfg: cfg, core: NewCore(cfg.Backoff, cfg.Window), agg: actor.NewPID(cfg.Aggregator, "fleet")}
	}), nil
}

// Messages the uplink sends itself.
type (
	sourceBatch struct {
		epoch uint64
		b     Batch
		ack   func()
	}
	retryTimer     struct{ token uint64 }
	heartbeatTimer struct{}
)

// uplinkActor is the thin shell around Core: it performs the effects (requests with
// RequestFuture + ReenterAfter, the source subscription, timers) and feeds answers back.
type uplinkActor struct {
	cfg       Config
	core      *Core
	agg       *actor.PID
	cancelSub func()
	retry     clock.Timer // the pending reconnection, nil when none
	beat      clock.Timer // the pending heartbeat check, nil when none
	stopped   bool
}

func (u *uplinkActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		u.armHeartbeat(ctx)
		u.perform(ctx, u.core.Start())
	case *actor.Stopping:
		u.stopped = true
		u.unsubscribe()
		for _, t := range []clock.Timer{u.retry, u.beat} {
			if t != nil {
				t.Stop()
			}
		}
	case sourceBatch:
		u.perform(ctx, u.core.SourceBatch(m.epoch, m.b, m.ack, u.cfg.Clock.Now()))
	case retryTimer:
		u.perform(ctx, u.core.Retry(m.token))
	case heartbeatTimer:
		u.armHeartbeat(ctx)
		u.perform(ctx, u.core.HeartbeatDue(u.cfg.Clock.Now(), u.cfg.Heartbeat))
	case *actor.Terminated:
		if m.GetWho().GetAddress() == u.agg.GetAddress() && m.GetWho().GetId() == u.agg.GetId() {
			u.perform(ctx, u.core.Lost())
		}
	case *actor.Stopped, *actor.Restarting:
	default:
		u.cfg.Logger.Warn("uplink: unexpected message", "type", fmt.Sprintf("%T", m))
	}
}

func (u *uplinkActor) perform(ctx actor.Context, effects []Effect) {
	for _, e := range effects {
		switch e.Kind {
		case SendHello:
			token := e.Token
			f := ctx.RequestFuture(u.agg, &fleetv1.Hello{Node: u.cfg.Node, Incarnation: u.cfg.Incarnation, Address: ctx.ActorSystem().Address()}, u.cfg.RequestTimeout)
			ctx.ReenterAfter(f, func(res any, err error) {
				if err == nil {
					if _, ok := res.(*fleetv1.Welcome); !ok {
						err = fmt.Errorf("unexpected answer %T", res)
					}
				}
				if err == nil {
					u.cfg.Logger.Info("connected to the fleet aggregator", "aggregator", u.cfg.Aggregator)
				}
				u.perform(ctx, u.core.HelloDone(token, err))
			})
		case Watch:
			ctx.Watch(u.agg)
		case Subscribe:
			u.unsubscribe()
			if e.Why != "" {
				u.cfg.Logger.Info("resending a snapshot", "reason", e.Why)
			}
			epoch, self, root := e.Epoch, ctx.Self(), ctx.ActorSystem().Root
			u.cancelSub = u.cfg.Source.Subscribe(e.Window, func(b Batch, ack func()) {
				root.Send(self, sourceBatch{epoch: epoch, b: b, ack: ack})
			})
		case Unsubscribe:
			u.unsubscribe()
		case SendBatch:
			msg := u.changes(e.Seq, e.Batch)
			u.request(ctx, e.Token, msg)
		case SendHeartbeat:
			u.request(ctx, e.Token, &fleetv1.Heartbeat{Node: u.cfg.Node, Incarnation: u.cfg.Incarnation})
		case AckSource:
			if e.Ack != nil {
				e.Ack()
			}
		case RetryAfter:
			u.cfg.Logger.Warn("fleet aggregator unavailable; retrying", "aggregator", u.cfg.Aggregator, "in", e.Delay, "reason", e.Why)
			if u.retry != nil {
				u.retry.Stop()
			}
			token, self, root := e.Token, ctx.Self(), ctx.ActorSystem().Root
			u.retry = u.cfg.Clock.AfterFunc(e.Delay, func() { root.Send(self, retryTimer{token: token}) })
		default:
			u.cfg.Logger.Error("uplink: unknown effect", "kind", e.Kind)
		}
	}
}

// request sends a batch or heartbeat and feeds the Ack (or the failure) back to the core.
func (u *uplinkActor) request(ctx actor.Context, token uint64, msg any) {
	f := ctx.RequestFuture(u.agg, msg, u.cfg.RequestTimeout)
	ctx.ReenterAfter(f, func(res any, err error) {
		var ack *fleetv1.Ack
		if err == nil {
			var ok bool
			if ack, ok = res.(*fleetv1.Ack); !ok {
				err = fmt.Errorf("unexpected answer %T", res)
			}
		}
		if err == nil && ack.GetStatus() != fleetv1.AckStatus_ACK_STATUS_APPLIED && ack.GetStatus() != fleetv1.AckStatus_ACK_STATUS_DUPLICATE {
			u.cfg.Logger.Info("fleet aggregator answered", "status", ack.GetStatus().String(), "seq", ack.GetSeq())
		}
		u.perform(ctx, u.core.Acked(token, ack, err, u.cfg.Clock.Now()))
	})
}

// changes converts a source batch to its wire form; a pod that cannot be encoded is logged and
// left out (it never can be: FromPod fails only for a pod without UID).
func (u *uplinkActor) changes(seq uint64, b Batch) *fleetv1.Changes {
	c := &fleetv1.Changes{Node: u.cfg.Node, Incarnation: u.cfg.Incarnation, Seq: seq, Snapshot: b.Snapshot,
		Results: make([]*fleetv1.ResultChanged, 0, len(b.Results))}
	for _, r := range b.Results {
		c.Results = append(c.Results, fleetv1.FromResultChanged(r))
	}
	for _, p := range b.Pods {
		if p.Pod == nil {
			c.Pods = append(c.Pods, fleetv1.RemovedPod(p.UID))
			continue
		}
		w, err := fleetv1.FromPod(p.Pod)
		if err != nil {
			u.cfg.Logger.Error("a pod cannot be sent to the fleet aggregator", "uid", p.UID, "error", err)
			continue
		}
		c.Pods = append(c.Pods, w)
	}
	if b.Node != nil {
		obj, err := fleetv1.FromNodeObject(b.Node)
		if err != nil { // Marshal of a v1.Node does not fail
			u.cfg.Logger.Error("the node object cannot be sent to the fleet aggregator", "error", err)
		}
		c.NodeObject = obj
	}
	c.Usage = b.Usage
	for _, nc := range b.Conditions {
		wc := &fleetv1.NodeCondition{Type: nc.Type, Status: nc.Status, Reason: nc.Reason, Message: nc.Message}
		if !nc.Transition.IsZero() {
			wc.TransitionUnixNano = nc.Transition.UnixNano()
		}
		c.Conditions = append(c.Conditions, wc)
	}
	return c
}

func (u *uplinkActor) unsubscribe() {
	if u.cancelSub != nil {
		u.cancelSub()
		u.cancelSub = nil
	}
}

// armHeartbeat schedules the next heartbeat check (every half heartbeat interval) unless stopped.
func (u *uplinkActor) armHeartbeat(ctx actor.Context) {
	if u.stopped {
		return
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	u.beat = u.cfg.Clock.AfterFunc(u.cfg.Heartbeat/2, func() { root.Send(self, heartbeatTimer{}) })
}
