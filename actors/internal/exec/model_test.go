package exec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
)

// The mailbox against a model of what it promises, step by step on one goroutine, so that every
// interleaving of posts, system messages, activations and carries the random sequence makes is
// checked exactly (as clock's TestSchedulerMatchesModel does for the Scheduler):
//
//   - system messages are handled before user messages, in order; Suspend holds user messages back
//     until Resume; a panic escalates (Failed, then EscalateFailure) and, for an owner that restarts
//     on resume, Restarted is delivered before anything queued once Resume arrives;
//   - user messages are delivered exactly once, in order, at most mailboxThroughput per activation,
//     after which the mailbox is scheduled again;
//   - the mailbox is scheduled only when it has something it may process and is not scheduled
//     already (one activation at a time);
//   - Carry delivers on the calling goroutine only when the mailbox is idle, not suspended and has
//     no system message; an attempt the handler hands off (HandOff) runs after the mailbox was
//     released and its report is carried next, the same way;
//   - Depth is the number of user messages waiting.
func TestMailboxMatchesModel(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		mailboxMatchesModel(t, seed)
	}
}

// entry is a message as the test sees it: a user message (n), a system message (sys), a message
// whose handler panics, or one whose handler hands off an attempt that reports report.
type msg struct {
	n      int
	panics bool
	handOf bool // the handler hands off an attempt (only effective while carried)
	report bool // the report of a handed-off attempt
}

type modelOwner struct {
	m         *Mailbox
	restarts  bool
	scheduled int // activations scheduled and not run yet
	failed    []any
	delivered []string
	carrying  bool // the test is inside Carry (HandOff may succeed)
	handed    int
}

func (o *modelOwner) Schedule(*Mailbox)      { o.scheduled++ }
func (o *modelOwner) Signal(any) bool        { return false }
func (o *modelOwner) Failed(_, msg any)      { o.failed = append(o.failed, msg) }
func (o *modelOwner) RestartsOnResume() bool { return o.restarts }

type attempt struct {
	o *modelOwner
	n int
}

func (a *attempt) RunCarried() any {
	a.o.delivered = append(a.o.delivered, fmt.Sprintf("attempt %d", a.n))
	return &msg{n: a.n, report: true}
}

func (o *modelOwner) InvokeUserMessage(m any) {
	switch x := m.(type) {
	case *Restarted:
		o.delivered = append(o.delivered, "restarted")
	case *msg:
		o.delivered = append(o.delivered, fmt.Sprintf("user %d", x.n))
		if x.panics {
			panic("boom")
		}
		if x.handOf && o.m.HandOff(&attempt{o: o, n: x.n}) {
			o.handed++
		}
	}
}

func (o *modelOwner) InvokeSystemMessage(m any) {
	o.delivered = append(o.delivered, fmt.Sprintf("system %v", m.(*msg).n))
}

func (o *modelOwner) EscalateFailure(_, m any) {
	o.delivered = append(o.delivered, fmt.Sprintf("escalated %d", m.(*msg).n))
}

// model is the reference: the same promises, written as plainly as possible.
type model struct {
	restarts  bool
	user      []any
	sys       []any
	suspended bool
	failed    bool
	running   bool // an activation is scheduled (or a Carry is running)
	scheduled int
	delivered []string
}

func (md *model) schedule() {
	if md.running || (len(md.sys) == 0 && (md.suspended || len(md.user) == 0)) {
		return
	}
	md.running = true
	md.scheduled++
}

func (md *model) deliver(m any) {
	switch x := m.(type) {
	case *Restarted:
		md.delivered = append(md.delivered, "restarted")
	case *msg:
		md.delivered = append(md.delivered, fmt.Sprintf("user %d", x.n))
		if x.panics {
			md.delivered = append(md.delivered, fmt.Sprintf("escalated %d", x.n))
			md.failed = true
		}
	}
}

// process is one activation (inline: on a carrying goroutine). It reports the attempt handed off.
func (md *model) process(inline bool, handOff func(m any) *msg) *msg {
	var carried *msg
	for i := 0; ; i++ {
		if len(md.sys) > 0 {
			if inline {
				md.scheduled++ // still running: the pool continues
				return carried
			}
			s := md.sys[0]
			md.sys = md.sys[1:]
			switch s.(type) {
			case *actor.SuspendMailbox:
				md.suspended = true
			case *actor.ResumeMailbox:
				md.suspended = false
				if md.failed && md.restarts {
					md.user = append([]any{RestartedMsg}, md.user...)
				}
				md.failed = false
			default:
				md.delivered = append(md.delivered, fmt.Sprintf("system %v", s.(*msg).n))
			}
			continue
		}
		if md.suspended || len(md.user) == 0 {
			md.running = false
			return carried
		}
		if i >= mailboxThroughput {
			md.scheduled++
			return carried
		}
		u := md.user[0]
		md.user = md.user[1:]
		md.deliver(u)
		if inline && handOff != nil {
			if a := handOff(u); a != nil {
				carried = a
			}
		}
	}
}

func (md *model) carry(m any) {
	for {
		if md.running || md.suspended || len(md.sys) > 0 {
			md.user = append(md.user, m)
			md.schedule()
			return
		}
		md.running = true
		md.user = append(md.user, m)
		a := md.process(true, func(u any) *msg {
			if x, ok := u.(*msg); ok && x.handOf && !x.panics {
				return x
			}
			return nil
		})
		if a == nil {
			return
		}
		md.delivered = append(md.delivered, fmt.Sprintf("attempt %d", a.n))
		m = &msg{n: a.n, report: true}
	}
}

func mailboxMatchesModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e37))
	restarts := seed%2 == 0
	var depth atomic.Int64
	o := &modelOwner{restarts: restarts}
	m := &Mailbox{Owner: o, Depth: &depth}
	o.m = m
	m.RegisterHandlers(o, nil)
	md := &model{restarts: restarts}
	next := 0
	newMsg := func() *msg {
		next++
		return &msg{n: next, panics: rng.IntN(40) == 0, handOf: rng.IntN(4) == 0}
	}
	steps := 400 + rng.IntN(400)
	checked := 0 // deliveries compared so far
	for step := range steps {
		switch op := rng.IntN(20); {
		case op < 7: // a user message
			u := newMsg()
			m.PostUserMessage(u)
			md.user = append(md.user, u)
			md.schedule()
		case op < 9: // a burst, past one activation's throughput
			for range mailboxThroughput / 2 {
				u := &msg{n: next + 1}
				next++
				m.Post(u)
				md.user = append(md.user, u)
				md.schedule()
			}
		case op < 10:
			s := &msg{n: -(next + 1)}
			next++
			m.PostSystemMessage(s)
			md.sys = append(md.sys, s)
			md.schedule()
		case op < 11:
			m.PostSystemMessage(&actor.SuspendMailbox{})
			md.sys = append(md.sys, &actor.SuspendMailbox{})
			md.schedule()
		case op < 13:
			m.PostSystemMessage(&actor.ResumeMailbox{})
			md.sys = append(md.sys, &actor.ResumeMailbox{})
			md.schedule()
		case op < 17: // run one scheduled activation
			if o.scheduled == 0 {
				continue
			}
			o.scheduled--
			md.scheduled--
			m.Run()
			md.process(false, nil)
		default: // carry a message in, as an attempt-pool goroutine does
			u := newMsg()
			m.Carry(u)
			md.carry(u)
		}
		if !slices.Equal(md.delivered[checked:], o.delivered[min(checked, len(o.delivered)):]) {
			require.Equal(t, md.delivered[checked:], o.delivered[min(checked, len(o.delivered)):],
				"seed %d step %d: deliveries", seed, step)
		}
		checked = len(md.delivered)
		if md.scheduled != o.scheduled || o.scheduled > 1 || int64(len(md.user)) != depth.Load() ||
			len(md.user) != m.UserMessageCount() {
			t.Fatalf("seed %d step %d: activations scheduled %d (model %d, at most 1), waiting %d/%d (model %d)",
				seed, step, o.scheduled, md.scheduled, depth.Load(), m.UserMessageCount(), len(md.user))
		}
	}
	// Drain: resume and run what is scheduled; every user message posted was delivered once.
	m.PostSystemMessage(&actor.ResumeMailbox{})
	md.sys = append(md.sys, &actor.ResumeMailbox{})
	md.schedule()
	for o.scheduled > 0 {
		o.scheduled--
		md.scheduled--
		m.Run()
		md.process(false, nil)
	}
	require.Equal(t, md.delivered, o.delivered, "seed %d: after draining", seed)
	require.Zero(t, depth.Load(), "seed %d: nothing left waiting", seed)
	require.Zero(t, m.UserMessageCount(), "seed %d", seed)
}

// The same promises under real concurrency: senders post and carry from many goroutines while
// activations run on goroutines of their own. Every message is delivered exactly once, each sender's
// messages in the order it sent them, never two at a time, and nothing is left waiting.
func TestMailboxUnderConcurrency(t *testing.T) {
	const senders, each = 8, 2000
	var depth atomic.Int64
	c := &concurrentOwner{seen: make([][]int, senders)}
	m := &Mailbox{Owner: c, Depth: &depth}
	m.RegisterHandlers(c, nil)
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if i%3 == 0 {
					m.Carry(&tagged{s, i})
				} else {
					m.Post(&tagged{s, i})
				}
			}
		}()
	}
	wg.Wait()
	c.runs.Wait()
	for s := range senders {
		require.Len(t, c.seen[s], each, "sender %d: every message once", s)
		require.True(t, slices.IsSorted(c.seen[s]), "sender %d: in order", s)
	}
	require.Zero(t, depth.Load())
	require.Zero(t, c.overlaps.Load(), "never two handlers at once")
}

type tagged struct{ sender, i int }

type concurrentOwner struct {
	mu       sync.Mutex
	seen     [][]int
	busy     atomic.Bool
	overlaps atomic.Int32
	runs     sync.WaitGroup
}

func (c *concurrentOwner) Schedule(m *Mailbox) {
	c.runs.Add(1)
	go func() { defer c.runs.Done(); m.Run() }()
}
func (c *concurrentOwner) Signal(any) bool        { return false }
func (c *concurrentOwner) Failed(any, any)        {}
func (c *concurrentOwner) RestartsOnResume() bool { return false }
func (c *concurrentOwner) InvokeUserMessage(m any) {
	if !c.busy.CompareAndSwap(false, true) {
		c.overlaps.Add(1)
	}
	x := m.(*tagged)
	c.mu.Lock()
	c.seen[x.sender] = append(c.seen[x.sender], x.i)
	c.mu.Unlock()
	c.busy.Store(false)
}
func (c *concurrentOwner) InvokeSystemMessage(any)  {}
func (c *concurrentOwner) EscalateFailure(any, any) {}
