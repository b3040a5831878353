package actors

import (
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/actors/internal/results"
	"github.com/probeactor/probeactor/messages"
)

// cacheActor is the resultsCache: a thin shell around results.Cache. Subscribers are identified by
// their PID's string form and watched, so one that stops is unsubscribed.
type cacheActor struct {
	env   *env
	log   hclog.Logger
	cache *results.Cache[string]
	pids  map[string]*actor.PID
}

func newCacheActor(e *env) *cacheActor {
	return &cacheActor{env: e, log: e.log.Named(nameCache), cache: results.New[string](), pids: map[string]*actor.PID{}}
}

func (a *cacheActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *protocol.SetResult:
		if _, sends := a.cache.Set(*m); len(sends) > 0 {
			a.deliver(ctx, sends...)
		}
	case *protocol.RemoveResult:
		a.cache.Remove(m.ContainerID, m.Type)
	case *protocol.ProbeWorkers:
		a.env.tell(ctx, a.env.status, m) // behind the results of the workers it removes (see managerActor.flush)
	case *protocol.GetResult:
		r, ok := a.cache.Get(m.ContainerID, m.Type)
		ctx.Respond(&protocol.ResultResponse{Result: r, Found: ok})
	case *protocol.SubscribeResults:
		if s := ctx.Sender(); s != nil {
			_, again := a.pids[s.String()]
			a.pids[s.String()] = s
			if !again && !a.internal(s) {
				ctx.Watch(s)
			}
			if !m.Snapshot {
				a.cache.Subscribe(s.String(), m.Types...)
			} else if b, ok := a.cache.SubscribeSnapshot(s.String(), m.Types...); ok {
				a.deliver(ctx, b)
			}
		}
	case *protocol.UnsubscribeResults:
		if s := ctx.Sender(); s != nil {
			a.unsubscribe(ctx, s, true)
		}
	case *messages.AckResults:
		a.ack(ctx, m.Seq)
	case messages.AckResults:
		a.ack(ctx, m.Seq)
	case *cacheStats:
		st := &cacheStatsResponse{Entries: a.cache.Len(), Successes: a.cache.Count(messages.Success), Pending: map[string]int{}}
		for k := range a.pids {
			st.Pending[k] = a.cache.Pending(k)
		}
		ctx.Respond(st)
	case *actor.Terminated:
		a.unsubscribe(ctx, m.Who, false) // it is gone: an Unwatch would be a dead letter
	case *actor.Stopping:
		for _, pid := range a.pids { // so a subscriber that outlives the tree does not notify a dead cache
			if !a.internal(pid) {
				ctx.Unwatch(pid)
			}
		}
	default:
		a.env.unhandled(nameCache, m)
	}
}

func (a *cacheActor) ack(ctx actor.Context, seq uint64) {
	if s, ok := a.cache.Ack(seq); ok {
		a.deliver(ctx, s)
	}
}

func (a *cacheActor) unsubscribe(ctx actor.Context, pid *actor.PID, alive bool) {
	key := pid.String()
	if _, ok := a.pids[key]; !ok {
		return
	}
	delete(a.pids, key)
	a.cache.Unsubscribe(key)
	if alive && !a.internal(pid) {
		ctx.Unwatch(pid)
	}
}

func (a *cacheActor) deliver(ctx actor.Context, sends ...results.Send[string]) {
	for i := range sends {
		if pid := a.pids[sends[i].To]; pid != nil {
			b := sends[i].Batch
			a.env.ask(ctx, pid, &b)
		}
	}
}

// internal reports whether pid is one of the tree's own actors (statusManager, syncLoop): they stop
// with the tree, so they are not watched.
func (a *cacheActor) internal(pid *actor.PID) bool {
	return pid.Address == a.env.root.Address && strings.HasPrefix(pid.Id, a.env.root.Id+"/")
}

// cacheStats asks the cache for its size and each subscriber's queue length (tests, diagnostics).
type cacheStats struct{}

type cacheStatsResponse struct {
	Entries   int
	Successes int
	Pending   map[string]int // by subscriber PID string
}
