package exec

import (
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// Mailbox is the protoactor mailbox of every actor of a tree (installed with actor.WithMailbox; a
// worker embeds its own, so that it costs no allocation of its own). Compared with protoactor's
// default mailbox (a ring buffer of ten slots that never shrinks after a burst, a lock-free system
// queue with a node per message, a method value allocated per activation) it holds one pending user
// message inline and allocates only while more are queued. Its Owner decides where it runs (worker
// mailboxes on their shard's mailbox pool, the tree's own actors on a Runner), handles its own
// signals, and logs a panic with its stack (so no receiver middleware, which would cost an envelope
// per message, is needed).
//
// The scheduler and the worker's own attempts skip protoactor's PID lookup and post to it directly:
// Carry runs the mailbox on the caller's goroutine (an attempt-pool goroutine) when nobody else is
// running it, and that goroutine then also runs the attempt the worker started (HandOff), so that a
// probe costs one hand-off between goroutines (scheduler → attempt pool), as a kubelet worker's
// ticker wake-up does; system messages (which may block: a stopping worker waits for its attempt)
// are always left to the mailbox pool.
//
// Supervision: a panic while handling a message is escalated to the supervisor (protoactor's
// EscalateFailure: SuspendMailbox, then Failure to the parent), after the owner was told (a worker
// abandons its attempt and stops its timer). Workers are resumed, not re-incarnated: when
// ResumeMailbox arrives after a failure, a mailbox whose owner RestartsOnResume hands it Restarted
// before any queued message, which is exactly where protoactor's restart would deliver Started.
type Mailbox struct {
	mu        sync.Mutex
	one       any   // the oldest pending user message when more is nil
	more      []any // all pending user messages, oldest first, when there is more than one
	sys       []any // pending system messages
	running   bool  // a goroutine is processing (or is about to, from the pool's queue)
	suspended bool
	failed    bool // escalated a failure and not resumed yet

	// carrying: the goroutine running the mailbox came through Carry and runs the owner's next
	// attempt itself (carried is then set by HandOff, on that goroutine while it runs the
	// mailbox). Both are cleared under mu when that goroutine gives the mailbox up (release).
	carrying bool
	carried  Carried

	invoker actor.MessageInvoker
	// Owner is the actor the mailbox belongs to (set before the mailbox is used).
	Owner Owner
	// Depth counts the user messages waiting here into a per-kind total (probeactor_mailbox_messages);
	// nil leaves them uncounted. A message handed over by Carry without queueing is not counted.
	Depth *atomic.Int64
}

var _ actor.Mailbox = (*Mailbox)(nil)

// Owner is the actor a mailbox belongs to.
type Owner interface {
	// Schedule runs the mailbox's activation (m.Run) on some goroutine; it must not block.
	Schedule(m *Mailbox)
	// Signal handles msg if it is one of the owner's own signals, which skip protoactor's invoker.
	Signal(msg any) bool
	// Failed is told of a panic while handling msg, before the failure is escalated.
	Failed(reason, msg any)
	// RestartsOnResume: the owner is resumed after a failure and restarts itself (Restarted is
	// delivered first).
	RestartsOnResume() bool
}

// Carried is an attempt the owner handed off (HandOff) while a carrying goroutine ran its mailbox:
// that goroutine runs it once it has released the mailbox.
type Carried interface {
	// RunCarried runs the attempt and returns the message that reports it, which the goroutine then
	// carries into the mailbox, or nil when the owner must not be told (it abandoned the attempt).
	RunCarried() any
}

// Restarted is what a mailbox whose owner RestartsOnResume delivers first when supervision resumes it
// after a failure. One value (RestartedMsg) serves every mailbox.
type Restarted struct{}

// RestartedMsg is the one Restarted value.
var RestartedMsg = &Restarted{}

// PostUserMessage implements actor.Mailbox (protoactor's senders: probeManager, the cache, tests).
func (m *Mailbox) PostUserMessage(msg any) { m.Post(msg) }

// PostSystemMessage implements actor.Mailbox.
func (m *Mailbox) PostSystemMessage(msg any) {
	m.mu.Lock()
	m.sys = append(m.sys, msg)
	m.scheduleLocked()
}

// RegisterHandlers implements actor.Mailbox. The dispatcher is ignored: worker mailboxes always run
// on the tree's mailbox pool.
func (m *Mailbox) RegisterHandlers(invoker actor.MessageInvoker, _ actor.Dispatcher) {
	m.invoker = invoker
}

// Start implements actor.Mailbox.
func (m *Mailbox) Start() {}

// UserMessageCount implements actor.Mailbox.
func (m *Mailbox) UserMessageCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.userLen()
}

// Post queues a user message and schedules the mailbox.
func (m *Mailbox) Post(msg any) {
	m.mu.Lock()
	m.pushLocked(msg)
	m.scheduleLocked()
}

// Carry delivers msg and, when no goroutine is running the mailbox and no system message is
// pending, processes the mailbox on the calling goroutine, which must be an attempt-pool goroutine
// (free to block): an attempt the worker starts meanwhile is run here as well, right after the
// mailbox was released, and its report is carried the same way. So a tick handed to the attempt pool
// by the scheduler becomes "tick handled → probe → verdict handled" on one goroutine, one hand-off
// per probe, while the mailbox stays free during the probe (a stopping worker can cancel it).
func (m *Mailbox) Carry(msg any) {
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
		if msg = s.RunCarried(); msg == nil {
			return
		}
	}
}

// scheduleLocked hands the mailbox to its owner's Schedule unless it is running or has nothing it may process.
// It unlocks m.mu.
func (m *Mailbox) scheduleLocked() {
	if m.running || (len(m.sys) == 0 && (m.suspended || m.userLen() == 0)) {
		m.mu.Unlock()
		return
	}
	m.running = true
	m.mu.Unlock()
	m.Owner.Schedule(m)
}

func (m *Mailbox) userLen() int {
	if m.more != nil {
		return len(m.more)
	}
	if m.one != nil {
		return 1
	}
	return 0
}

func (m *Mailbox) pushLocked(msg any) {
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

func (m *Mailbox) pushFrontLocked(msg any) {
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
func (m *Mailbox) count(d int64) {
	if m.Depth != nil {
		m.Depth.Add(d)
	}
}

func (m *Mailbox) popLocked() any {
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

// Run is the mailbox's activation (a Job): its owner's Schedule runs it on some goroutine.
func (m *Mailbox) Run() { m.process(false) }

// process runs queued messages: system messages first, then user messages unless suspended, at
// most mailboxThroughput per activation (then the mailbox goes back to the end of the pool's
// queue). inline: the caller came through Carry; system messages are left to the pool. It returns
// the attempt the owner handed off to the carrying goroutine to run (inline only), taken under mu as
// the goroutine gives the mailbox up: once it is given up another goroutine may carry the mailbox
// and start an attempt of its own.
func (m *Mailbox) process(inline bool) (carried Carried) {
	for i := 0; ; i++ {
		m.mu.Lock()
		if len(m.sys) > 0 {
			if inline {
				carried = m.release()
				m.mu.Unlock()
				m.Owner.Schedule(m) // still running: the pool continues
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
				if m.failed && m.Owner.RestartsOnResume() {
					m.pushFrontLocked(RestartedMsg)
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
			m.Owner.Schedule(m) // let other mailboxes run; still running
			return carried
		}
		msg := m.popLocked()
		m.mu.Unlock()
		m.invoke(msg, false)
	}
}

// HandOff gives c, an attempt the owner starts while handling a message, to the goroutine carrying
// the mailbox, which runs it once it has released the mailbox; false when the mailbox is not being
// carried (the owner then runs c elsewhere). Only the goroutine running the mailbox (inside a
// handler) may call it.
func (m *Mailbox) HandOff(c Carried) bool {
	if !m.carrying {
		return false
	}
	m.carried = c
	return true
}

// release ends carrying (m.mu held) and returns the attempt the worker started for the carrier.
func (m *Mailbox) release() Carried {
	s := m.carried
	m.carrying, m.carried = false, nil
	return s
}

// invoke hands one message to the actor (the worker's own signals straight to the worker); a panic
// is escalated to the supervisor after the worker abandoned what it was doing.
func (m *Mailbox) invoke(msg any, system bool) {
	defer func() {
		if r := recover(); r != nil {
			m.Owner.Failed(r, msg)
			m.mu.Lock()
			m.failed = true
			m.mu.Unlock()
			m.invoker.EscalateFailure(r, msg)
		}
	}()
	switch {
	case system:
		m.invoker.InvokeSystemMessage(msg)
	case !m.Owner.Signal(msg):
		m.invoker.InvokeUserMessage(msg)
	default:
	}
}
