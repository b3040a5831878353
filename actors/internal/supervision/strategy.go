package supervision

import (
	"fmt"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"

	"github.com/probeactor/probeactor/internal/clock"
)

// GiveUpFunc is called when a child has failed too often. It runs on the supervising parent's
// goroutine while the parent handles the failure (a system message), after the child has been told to
// stop. It must not block; the usual body is a Send to the parent or to whoever publishes Unknown.
type GiveUpFunc func(child *actor.PID, reason any)

// Option configures a Strategy.
type Option func(*Strategy)

// WithClock sets the clock restart delays are measured on (default clock.Real()).
func WithClock(c clock.Clock) Option { return func(s *Strategy) { s.clock = c } }

// WithRand sets the jitter source (default clock.DefaultRand()).
func WithRand(r clock.Rand) Option { return func(s *Strategy) { s.rnd = r } }

// WithLogger sets the logger failures are reported on (default hclog.NewNullLogger()).
func WithLogger(l hclog.Logger) Option { return func(s *Strategy) { s.log = l } }

// OnGiveUp sets the callback for children given up on.
func OnGiveUp(f GiveUpFunc) Option { return func(s *Strategy) { s.onGiveUp = f } }

// Resume makes the strategy resume a failed child after its back-off (protoactor's Resume
// directive: the same instance continues with its mailbox) instead of restarting it (a new instance
// from the child's Props). It is for children that restart themselves when resumed, and whose
// Props therefore never need to produce a second instance.
func Resume() Option { return func(s *Strategy) { s.resume = true } }

// Strategy is a protoactor SupervisorStrategy that restarts each failed child on its own exponential
// back-off (see Policy) and gives up on a child that fails too often: it stops that child and calls
// OnGiveUp. Siblings are never affected (one-for-one).
//
// While a child waits for its restart its mailbox stays suspended, so messages sent to it queue and
// are processed by the restarted incarnation. The failing message itself is lost (protoactor).
//
// Lifecycle contract for the supervising parent: call Forget(pid) on *actor.Terminated for each child
// and Stop() on *actor.Stopping. Then no restart timer outlives the parent and no per-child state
// outlives its child. One Strategy per parent.
//
// Strategy is safe for concurrent use: HandleFailure runs on the parent's goroutine, restart timers on
// the clock's.
type Strategy struct {
	policy   Policy
	clock    clock.Clock
	rnd      clock.Rand
	log      hclog.Logger
	onGiveUp GiveUpFunc
	resume   bool

	mu       sync.Mutex
	children map[string]*child // by PID.Id; only children that have failed
	stopped  bool
}

type child struct {
	tracker *Tracker
	timer   clock.Timer // pending restart, nil when none
}

var _ actor.SupervisorStrategy = (*Strategy)(nil)

// New returns a Strategy for p, or an error naming the invalid policy field.
func New(p Policy, opts ...Option) (*Strategy, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("supervision strategy: %w", err)
	}
	s := &Strategy{
		policy:   p,
		clock:    clock.Real(),
		rnd:      clock.DefaultRand(),
		log:      hclog.NewNullLogger(),
		children: make(map[string]*child),
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// HandleFailure implements actor.SupervisorStrategy.
func (s *Strategy) HandleFailure(sys *actor.ActorSystem, sup actor.Supervisor, pid *actor.PID, _ *actor.RestartStatistics, reason, message any) {
	log := s.log.With("child", pid.Id, "reason", fmt.Sprint(reason), "message_type", fmt.Sprintf("%T", message))

	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		sup.StopChildren(pid)
		return
	}
	c := s.children[pid.Id]
	if c == nil {
		c = &child{tracker: NewTracker(s.policy)}
		s.children[pid.Id] = c
	}
	if c.timer != nil { // cannot normally happen: a suspended child does not fail again
		c.timer.Stop()
		c.timer = nil
	}
	delay, giveUp := c.tracker.Failure(s.clock.Now(), s.rnd())
	attempt := c.tracker.Attempt()
	if giveUp {
		delete(s.children, pid.Id)
		s.mu.Unlock()
		log.Error("child failed too often; stopping it", "max_failures", s.policy.MaxFailures, "window", s.policy.Window)
		sys.EventStream.Publish(&actor.SupervisorEvent{Child: pid, Reason: reason, Directive: actor.StopDirective})
		sup.StopChildren(pid)
		if s.onGiveUp != nil {
			s.onGiveUp(pid, reason)
		}
		return
	}
	log.Warn("child failed; restarting after back-off", "attempt", attempt, "delay", delay)
	if delay <= 0 {
		s.mu.Unlock()
		s.restart(sys, sup, pid, reason)
		return
	}
	var tm clock.Timer
	tm = s.clock.AfterFunc(delay, func() {
		s.mu.Lock()
		cur := s.children[pid.Id]
		if s.stopped || cur != c || c.timer != tm {
			s.mu.Unlock()
			return
		}
		c.timer = nil
		s.mu.Unlock()
		s.restart(sys, sup, pid, reason)
	})
	c.timer = tm
	s.mu.Unlock()
}

func (s *Strategy) restart(sys *actor.ActorSystem, sup actor.Supervisor, pid *actor.PID, reason any) {
	if s.resume {
		sys.EventStream.Publish(&actor.SupervisorEvent{Child: pid, Reason: reason, Directive: actor.ResumeDirective})
		sup.ResumeChildren(pid)
		return
	}
	sys.EventStream.Publish(&actor.SupervisorEvent{Child: pid, Reason: reason, Directive: actor.RestartDirective})
	sup.RestartChildren(pid)
}

// Forget drops the back-off state of a child and cancels its pending restart. Call it when the child
// has terminated.
func (s *Strategy) Forget(pid *actor.PID) {
	if pid == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.children[pid.Id]; c != nil {
		if c.timer != nil {
			c.timer.Stop()
		}
		delete(s.children, pid.Id)
	}
}

// Stop cancels every pending restart and forgets every child; later failures stop the failing child.
// Call it when the parent is stopping. Idempotent.
func (s *Strategy) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for id, c := range s.children {
		if c.timer != nil {
			c.timer.Stop()
		}
		delete(s.children, id)
	}
}

// Tracked returns how many children currently have back-off state (failed and not yet forgotten).
func (s *Strategy) Tracked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.children)
}

// Waiting reports whether pid is suspended, waiting for its restart. Its mailbox then holds user
// messages until the restart (a parent must not wait for such a child to answer).
func (s *Strategy) Waiting(pid *actor.PID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.children[pid.Id]
	return c != nil && c.timer != nil
}

// Pending returns how many children are waiting for a restart.
func (s *Strategy) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.children {
		if c.timer != nil {
			n++
		}
	}
	return n
}
