package actors

import (
	"context"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/messages"
)

// ErrStopped is returned by SubscribeFunc when the tree is stopping or stopped.
var ErrStopped = errors.New("probe tree stopped")

// SubscribeOption configures Subscribe and SubscribeFunc.
type SubscribeOption func(*subscription)

type subscription struct {
	types    []messages.ProbeType
	snapshot bool
}

// OfTypes limits a subscription to the given probe types (default: all).
func OfTypes(types ...messages.ProbeType) SubscribeOption {
	ts := append([]messages.ProbeType(nil), types...)
	return func(s *subscription) { s.types = append(s.types, ts...) }
}

// WithSnapshot makes the subscription start with the current value of every cached key of its
// types (ordered by pod UID, container and probe type), then deliver changes: the first batch is
// the state as it is when the subscription is registered. Without it, only changes made after the
// registration are delivered. An empty cache gives no snapshot batch.
func WithSnapshot() SubscribeOption { return func(s *subscription) { s.snapshot = true } }

func newSubscription(opts []SubscribeOption) *protocol.SubscribeResults {
	var s subscription
	for _, o := range opts {
		o(&s)
	}
	return &protocol.SubscribeResults{Types: s.types, Snapshot: s.snapshot}
}

// Subscribe makes subscriber (an actor) receive *messages.ResultChanges batches. The subscriber
// must acknowledge each batch by replying ctx.Respond(&messages.AckResults{Seq: batch.Seq}); until
// it does, later changes coalesce to the latest value per key. A subscriber that stops is
// unsubscribed automatically; subscribing again replaces the options. Callers that are not actors
// use SubscribeFunc, which does the acknowledging.
func (t *Tree) Subscribe(subscriber *actor.PID, opts ...SubscribeOption) {
	t.env.sys.Root.RequestWithCustomSender(t.env.root, newSubscription(opts), subscriber)
}

// Unsubscribe removes a subscription made with Subscribe.
func (t *Tree) Unsubscribe(subscriber *actor.PID) {
	t.env.sys.Root.RequestWithCustomSender(t.env.root, &protocol.UnsubscribeResults{}, subscriber)
}

// SubscribeFunc calls fn with every batch of result changes, in order, one call at a time, on a
// goroutine of its own: probeactor acknowledges a batch when fn returns, and while fn runs later
// changes coalesce to the latest value per key (a slow fn never slows the tree and always sees the
// final state). The subscription is registered before SubscribeFunc returns, so it sees every
// change the caller causes afterwards. It ends when ctx ends or the tree stops; Tree.Stop returns
// only after its goroutine has ended (so fn must not call Stop, and a running fn delays Stop until
// it returns). fn must not keep the batch's slice.
//
// It returns an error, and starts nothing, when fn is nil, ctx has ended or the tree is stopping.
func (t *Tree) SubscribeFunc(ctx context.Context, fn func(messages.ResultChanges), opts ...SubscribeOption) error {
	if fn == nil {
		return errors.New("actors.SubscribeFunc: fn is nil")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("actors.SubscribeFunc: %w", err)
	}
	e := t.env
	reg := e.sys.ProcessRegistry
	p := &funcSubscriber{batches: make(chan *messages.ResultChanges, 1), touched: make(chan struct{}, 1)}
	pid, ok := reg.Add(p, "probeactor-subscriber"+reg.NextId())
	if !ok {
		return fmt.Errorf("actors.SubscribeFunc: subscriber %s already registered", pid)
	}
	msg := newSubscription(opts)
	started := e.fromOutside(func() {
		e.subs.Add(1)
		e.sys.Root.RequestWithCustomSender(e.cache, msg, pid)
	})
	if !started {
		reg.Remove(pid)
		return fmt.Errorf("actors.SubscribeFunc: %w", ErrStopped)
	}
	// Ends with ctx (after the cache has dropped the subscription) or with the tree (after every
	// actor of it is gone), whichever comes first; Tree.Stop waits for it.
	go func() {
		defer e.subs.Done()
		defer reg.Remove(pid) // nothing sends to pid any more (see below)
		for {
			select {
			case b := <-p.batches:
				fn(*b)
				e.fromOutside(func() { e.sys.Root.Send(e.cache, &messages.AckResults{Seq: b.Seq}) })
			case <-ctx.Done():
				// The cache handles the unsubscription, then the Touch, in order: once Touched is
				// back it will never send to pid again. A tree that stops meanwhile drops both.
				e.fromOutside(func() {
					e.sys.Root.RequestWithCustomSender(e.cache, &protocol.UnsubscribeResults{}, pid)
					e.sys.Root.RequestWithCustomSender(e.cache, &actor.Touch{}, pid)
				})
				select {
				case <-p.touched:
				case <-e.done:
				}
				return
			case <-e.done:
				return
			}
		}
	}()
	return nil
}

// funcSubscriber is SubscribeFunc's subscriber: a process (not an actor) that hands batches to the
// subscription's goroutine. The cache sends at most one batch before it gets the acknowledgement,
// so one slot is enough and the send never blocks. System messages (the cache's Watch and Unwatch)
// are ignored: the subscription unsubscribes explicitly.
type funcSubscriber struct {
	batches chan *messages.ResultChanges
	touched chan struct{}
}

func (p *funcSubscriber) SendUserMessage(_ *actor.PID, message any) {
	switch m := actor.UnwrapEnvelopeMessage(message).(type) {
	case *messages.ResultChanges:
		select {
		case p.batches <- m:
		default: // impossible: one unacknowledged batch per subscriber
		}
	case *actor.Touched:
		select {
		case p.touched <- struct{}{}:
		default:
		}
	default:
	}
}

func (p *funcSubscriber) SendSystemMessage(*actor.PID, any) {}

func (p *funcSubscriber) Stop(*actor.PID) {}
