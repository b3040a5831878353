package aggregator

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/probeactor/probeactor/wire/fleetv1"
)

// ActorName is the fleet actor's name, the one actor a node may address.
const ActorName = "fleet"

// Queries the HTTP server asks the fleet actor; each is answered with the matching *…Answer.
type (
	queryPods    struct{}
	queryNodes   struct{}
	queryEvents  struct{}
	queryResults struct{}
	// queryMetrics asks for metrics.k8s.io's node and pod metrics as of now.
	queryMetrics struct{}
	podsAnswer   struct {
		pods []v1.Pod
		err  error
	}
	nodesAnswer   struct{ nodes []v1.Node }
	eventsAnswer  struct{ events []v1.Event }
	resultsAnswer struct{ results []Result }
	metricsAnswer struct {
		nodes []metricsv1beta1.NodeMetrics
		pods  []metricsv1beta1.PodMetrics
	}
	tick struct{}
)

// gauges mirror the book's sizes and counters for /metrics without asking the actor; the actor
// stores them after every message.
type gauges struct {
	ready, unknown, keys, pods atomic.Int64
	changesApplied             atomic.Uint64
	batches                    [6]atomic.Uint64 // by fleetv1.AckStatus
}

// fleetActor is the thin shell around a Book: it answers the wire messages, ticks the node
// monitor and answers the HTTP server's queries.
type fleetActor struct {
	book      *Book
	now       func() time.Time
	tickEvery time.Duration
	log       hclog.Logger
	g         *gauges
	stopTick  chan struct{}
}

func (a *fleetActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.startTicker(ctx)
	case *actor.Stopping:
		if a.stopTick != nil {
			close(a.stopTick)
			a.stopTick = nil
		}
	case *fleetv1.Hello:
		w := a.book.Hello(m, a.now())
		a.log.Debug("hello", "node", m.GetNode(), "incarnation", m.GetIncarnation(), "address", m.GetAddress())
		respond(ctx, w)
	case *fleetv1.Changes:
		ack := a.book.Apply(m, a.now())
		if ack.GetStatus() == fleetv1.AckStatus_ACK_STATUS_INVALID {
			a.log.Warn("dropped a batch that breaks the protocol", "node", m.GetNode(), "seq", m.GetSeq(), "error", m.Validate())
		}
		respond(ctx, ack)
	case *fleetv1.Heartbeat:
		respond(ctx, a.book.Heartbeat(m, a.now()))
	case tick:
		a.book.Tick(a.now())
		ready, unknown := a.book.ReadyNodes()
		a.g.ready.Store(int64(ready))
		a.g.unknown.Store(int64(unknown))
	case queryPods:
		a.book.Tick(a.now())
		pods, err := a.book.Pods()
		ctx.Respond(&podsAnswer{pods: pods, err: err})
	case queryNodes:
		a.book.Tick(a.now())
		ctx.Respond(&nodesAnswer{nodes: a.book.Nodes()})
	case queryEvents:
		ctx.Respond(&eventsAnswer{events: a.book.Events()})
	case queryResults:
		ctx.Respond(&resultsAnswer{results: a.book.Results()})
	case queryMetrics:
		now := a.now()
		a.book.Tick(now)
		ctx.Respond(&metricsAnswer{nodes: a.book.NodeMetrics(now), pods: a.book.PodMetrics(now)})
	case *actor.Stopped, *actor.Restarting:
	default:
		a.log.Warn("fleet actor: unexpected message", "type", fmt.Sprintf("%T", m))
	}
	a.publish()
}

// respond answers a request; a message without a sender (nobody waits) gets no answer rather than
// a dead letter.
func respond(ctx actor.Context, msg any) {
	if ctx.Sender() != nil {
		ctx.Respond(msg)
	}
}

// startTicker sends tick every tickEvery until the actor stops. The goroutine ends when stopTick
// is closed (on Stopping).
func (a *fleetActor) startTicker(ctx actor.Context) {
	a.stopTick = make(chan struct{})
	stop, self, root := a.stopTick, ctx.Self(), ctx.ActorSystem().Root
	go func() {
		t := time.NewTicker(a.tickEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				root.Send(self, tick{})
			}
		}
	}()
}

// publish stores the book's sizes and counters (O(1); the ready/unknown node counts follow on
// every tick).
func (a *fleetActor) publish() {
	s := &a.book.stats
	a.g.keys.Store(int64(s.Keys))
	a.g.pods.Store(int64(s.Pods))
	a.g.changesApplied.Store(s.ChangesApplied)
	for st, n := range s.Batches {
		if int(st) < len(a.g.batches) {
			a.g.batches[st].Store(n)
		}
	}
}
