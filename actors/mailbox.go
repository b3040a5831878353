package actors

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
)

// mailbox is the protoactor mailbox of every actor of the tree (installed with actor.WithMailbox;
// a worker embeds its own, so that it costs no allocation of its own). Compared with protoactor's
// default mailbox (a ring buffer of ten slots that never shrinks after a burst, a lock-free system
// queue with a node per message, a method value allocated per activation) it holds one pending user
// message inline and allocates only while more are queued. Its owner decides where it runs (worker
// mailboxes on the tree's mailbox pool, the tree's own actors on a goroutine per activation, as
// protoactor's default dispatcher does), handles its own signals, and logs a panic with its stack
// (so no receiver middleware, which would cost an envelope per message, is needed).
//
// The scheduler and the worker's own attempts skip protoactor's PID lookup and post to it directly:
// carry runs the mailbox on the caller's goroutine (an attempt-pool goroutine) when nobody else is
// running it, and that goroutine then also runs the attempt the worker started, so that a probe
// costs one hand-off between goroutines (scheduler → attempt pool), as a kubelet worker's ticker
// wake-up does; system messages (which may block: a stopping worker waits for its attempt) are
// always left to the mailbox pool.
//
// Supervision: a panic while handling a message is escalated to the supervisor (protoactor's
// EscalateFailure: SuspendMailbox, then Failure to the parent), after the owner was told (a worker
// abandons its attempt and stops its timer). Workers are resumed, not re-incarnated (see
// newWorkerProps): when ResumeMailbox arrives after a failure, the mailbox hands the worker a
// restarted message before any queued message, which is exactly where protoactor's restart would
// deliver Started.
type mailbox struct {
	mu        sync.Mutex
	one       any   // the oldest pending user message when more is nil
	more      []any // all pending user messages, oldest first, when there is more than one
	sys       []any // pending system messages
	running   bool  // a goroutine is processing (or is about to, from the pool's queue)
	suspended bool
	failed    bool // escalated a failure and not resumed yet

	// carrying: the goroutine running the mailbox came through carry and runs the worker's next
	// attempt itself (carried is then set by startAttempt, on that goroutine while it runs the
	// mailbox). Both are cleared under mu when that goroutine gives the mailbox up (release).
	carrying bool
	carried  *attemptSlot

	invoker actor.MessageInvoker
	owner   mailboxOwner
	// depth counts the user messages waiting here into the tree's per-kind total (probeactor_mailbox_messages);
	// nil in tests that build a bare mailbox. A message handed over by carry without queueing is not counted.
	depth *atomic.Int64
}

var _ actor.Mailbox = (*mailbox)(nil)

// mailboxOwner is the actor a mailbox belongs to.
type mailboxOwner interface {
	// schedule runs the mailbox's activation (m.run) on some goroutine; it must not block.
	schedule(m *mailbox)
	// signal handles msg if it is one of the owner's own signals, which skip protoactor's invoker.
	signal(msg any) bool
	// failed is told of a panic while handling msg, before the failure is escalated.
	failed(reason, msg any)
	// restartsOnResume: the owner is resumed after a failure and restarts itself (a restarted
	// message is delivered first).
	restartsOnResume() bool
}

// treeActor is the mailbox owner of the tree's own actors (root, resultsCache, probeManager,
// statusManager, syncLoop): a long-lived goroutine of its own (wake; nil: a goroutine per
// activation, as protoactor's default dispatcher, for the root, which blocks while it stops), and
// the panic logged with its stack before protoactor's restart.
type treeActor struct {
	log  hclog.Logger
	name string
	wake func(*mailbox)
}

func (a *treeActor) schedule(m *mailbox) {
	if a.wake == nil {
		go m.run()
		return
	}
	a.wake(m)
}

func (a *treeActor) signal(any) bool        { return false }
func (a *treeActor) restartsOnResume() bool { return false }
func (a *treeActor) failed(reason, msg any) {
	a.log.Error("actor panicked", "actor", a.name, "message_type", fmt.Sprintf("%T", msg),
		"panic", fmt.Sprint(reason), "stack", string(debug.Stack()))
}

// restarted is what a worker's mailbox delivers first when supervision resumes it after a failure.
type restarted struct{}

var restartedMsg = &restarted{}

// PostUserMessage implements actor.Mailbox (protoactor's senders: probeManager, the cache, tests).
func (m *mailbox) PostUserMessage(msg any) { m.post(msg) }

// PostSystemMessage implements actor.Mailbox.
func (m *mailbox) PostSystemMessage(msg any) {
	m.mu.Lock()
	m.sys = append(m.sys, msg)
	m.scheduleLocked()
}

// RegisterHandlers implements actor.Mailbox. The dispatcher is ignored: worker mailboxes always run
// on the tree's mailbox pool.
func (m *mailbox) RegisterHandlers(invoker actor.MessageInvoker, _ actor.Dispatcher) {
	m.invoker = invoker
}

// Start implements actor.Mailbox.
func (m *mailbox) Start() {}

// UserMessageCount implements actor.Mailbox.
func (m *mailbox) UserMessageCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.userLen()
}

// post queues a user message and schedules the mailbox on the pool.
func (m *mailbox) post(msg any) {
	m.mu.Lock()
	m.pushLocked(msg)
	m.scheduleLocked()
}

// carry delivers msg and, when no goroutine is running the mailbox and no system message is
// pending, processes the mailbox on the calling goroutine, which must be an attempt-pool goroutine
// (free to block): an attempt the worker starts meanwhile is run here as well, right after the
// mailbox was released, and its report is carried the same way. So a tick handed to the attempt pool
// by the scheduler becomes "tick handled → probe → verdict handled" on one goroutine, one hand-off
// per probe, while the mailbox stays free during the probe (a stopping worker can cancel it).
func (m *mailbox) carry(msg any) {
	for {
		m.mu.Lock()
		if m.running || m.suspended || len(m.sys) > 0 {
			m.pushLocked(msg)
			m.scheduleLocked()
			return
		}
		m.running, m.carrying = true, true
		first := m.userLen() == 0 // nothing queued ahead of msg: hand it over without queueing it
		if !first {
			m.pushLocked(msg)
		}
		m.mu.Unlock()
		if first {
			m.invoke(msg, false)
		}
		s := m.process(true)
		if s == nil {
			return
		}
		if _, tell := s.exec(); !tell {
			return
		}
		msg = attemptFinishedMsg
	}
}

// scheduleLocked hands the mailbox to the pool unless it is running or has nothing it may process.
// It unlocks m.mu.
func (m *mailbox) scheduleLocked() {
	if m.running || (len(m.sys) == 0 && (m.suspended || m.userLen() == 0)) {
		m.mu.Unlock()
		return
	}
	m.running = true
	m.mu.Unlock()
	m.owner.schedule(m)
}

func (m *mailbox) userLen() int {
	if m.more != nil {
		return len(m.more)
	}
	if m.one != nil {
		return 1
	}
	return 0
}

func (m *mailbox) pushLocked(msg any) {
	m.count(1)
	switch {
	case m.more != nil:
		m.more = append(m.more, msg)
	case m.one == nil:
		m.one = msg
	default:
		m.more = append(make([]any, 0, 4), m.one, msg)
		m.one = nil
	}
}

func (m *mailbox) pushFrontLocked(msg any) {
	m.count(1)
	switch {
	case m.more != nil:
		m.more = append(m.more, nil)
		copy(m.more[1:], m.more)
		m.more[0] = msg
	case m.one == nil:
		m.one = msg
	default:
		m.more = append(make([]any, 0, 4), msg, m.one)
		m.one = nil
	}
}

// count adds d to the tree's count of waiting user messages.
func (m *mailbox) count(d int64) {
	if m.depth != nil {
		m.depth.Add(d)
	}
}

func (m *mailbox) popLocked() any {
	m.count(-1)
	if m.more != nil {
		msg := m.more[0]
		m.more[0] = nil
		m.more = m.more[1:]
		if len(m.more) == 0 {
			m.more = nil // a burst's backing array is not kept
		}
		return msg
	}
	msg := m.one
	m.one = nil
	return msg
}

// run is the mailbox's activation on a pool goroutine.
func (m *mailbox) run() { m.process(false) }

// process runs queued messages: system messages first, then user messages unless suspended, at
// most mailboxThroughput per activation (then the mailbox goes back to the end of the pool's
// queue). inline: the caller came through carry; system messages are left to the pool. It returns
// the attempt the worker started for the carrying goroutine to run (inline only), taken under mu as
// the goroutine gives the mailbox up: once it is given up another goroutine may carry the mailbox
// and start an attempt of its own.
func (m *mailbox) process(inline bool) (carried *attemptSlot) {
	for i := 0; ; i++ {
		m.mu.Lock()
		if len(m.sys) > 0 {
			if inline {
				carried = m.release()
				m.mu.Unlock()
				m.owner.schedule(m) // still running: the pool continues
				return carried
			}
			msg := m.sys[0]
			m.sys[0] = nil
			m.sys = m.sys[1:]
			if len(m.sys) == 0 {
				m.sys = nil
			}
			switch msg.(type) {
			case *actor.SuspendMailbox:
				m.suspended = true
				m.mu.Unlock()
			case *actor.ResumeMailbox:
				m.suspended = false
				if m.failed && m.owner.restartsOnResume() {
					m.pushFrontLocked(restartedMsg)
				}
				m.failed = false
				m.mu.Unlock()
			default:
				m.mu.Unlock()
				m.invoke(msg, true)
			}
			continue
		}
		if m.suspended || m.userLen() == 0 {
			m.running = false
			carried = m.release()
			m.mu.Unlock()
			return carried
		}
		if i >= mailboxThroughput {
			carried = m.release()
			m.mu.Unlock()
			m.owner.schedule(m) // let other mailboxes run; still running
			return carried
		}
		msg := m.popLocked()
		m.mu.Unlock()
		m.invoke(msg, false)
	}
}

// release ends carrying (m.mu held) and returns the attempt the worker started for the carrier.
func (m *mailbox) release() *attemptSlot {
	s := m.carried
	m.carrying, m.carried = false, nil
	return s
}

// invoke hands one message to the actor (the worker's own signals straight to the worker); a panic
// is escalated to the supervisor after the worker abandoned what it was doing.
func (m *mailbox) invoke(msg any, system bool) {
	defer func() {
		if r := recover(); r != nil {
			m.owner.failed(r, msg)
			m.mu.Lock()
			m.failed = true
			m.mu.Unlock()
			m.invoker.EscalateFailure(r, msg)
		}
	}()
	switch {
	case system:
		m.invoker.InvokeSystemMessage(msg)
	case !m.owner.signal(msg):
		m.invoker.InvokeUserMessage(msg)
	default:
	}
}
