package exec

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/probeactor/probeactor/internal/clock"
)

// Job is what the pools run: a mailbox's activation (*Mailbox) or an attempt. Jobs are pointers, so
// handing one over allocates nothing.
type Job interface{ Run() }

const (
	// mailboxThroughput is protoactor's default: messages a mailbox handles before yielding.
	mailboxThroughput = 300
	// mailboxQueue is the pool's queue of mailbox activations; past it Schedule starts a goroutine.
	mailboxQueue = 8192
)

// mailboxPool runs one shard's worker mailboxes on a fixed set of goroutines taking them from one
// queue. schedule never blocks (it is called from every sender, and from the pool's own
// goroutines): when the queue is full, or the pool is stopped, it falls back to a goroutine of its
// own, as protoactor's default dispatcher does. A mailbox handler that blocks (a worker waiting for
// its cancelled attempt) holds one pool goroutine for that time; the others and the fallback keep
// the rest going.
type mailboxPool struct {
	mu     sync.RWMutex // schedule holds it shared; Stop exclusively, so no send races the close
	closed bool
	queue  chan Job
	wg     sync.WaitGroup
}

func newMailboxPool(goroutines int) *mailboxPool {
	p := &mailboxPool{queue: make(chan Job, mailboxQueue)}
	p.wg.Add(goroutines)
	for range goroutines {
		go p.run()
	}
	return p
}

// run ends when Stop closed the queue and it is drained.
func (p *mailboxPool) run() {
	defer p.wg.Done()
	for j := range p.queue {
		j.Run()
	}
}

// schedule runs m (a mailbox activation) on a pool goroutine.
func (p *mailboxPool) schedule(m Job) {
	p.mu.RLock()
	if !p.closed {
		select {
		case p.queue <- m:
			p.mu.RUnlock()
			return
		default:
		}
	}
	p.mu.RUnlock()
	go m.Run()
}

// Stop runs what is queued, then ends the pool's goroutines and waits for them. Idempotent.
func (p *mailboxPool) Stop() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.queue)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// attemptPool runs one shard's probe attempts, which may block for up to their timeout (real probes), on
// long-lived goroutines, never holding one attempt behind another for more than BacklogWait: Go
// hands an attempt to an idle goroutine if there is one; else, while fewer than spare goroutines
// are alive, it starts a new one; else it puts the attempt in the backlog, which goroutines take
// from when they finish an attempt, and which starts a new goroutine per waiting attempt once one
// has waited BacklogWait (the busy ones may be blocked on slow probes). So the pool grows to the
// number of attempts in flight when they are slow, but a burst of quick attempts on a machine that
// is already busy does not start (and grow the stacks of) a goroutine each. A goroutine that
// finishes an attempt stays for the next one only while fewer than maxIdle others are idle, and
// for at most two AttemptIdleTimeouts, so the pool shrinks back as soon as a burst of slow attempts
// ends and holds nothing at rest.
//
// Hand-off is LIFO: idle goroutines wait on channels of their own, stacked in the order they went
// idle, and Go hands an attempt to the most recently idle one. So the goroutines that keep working
// are as few as the attempts in flight at the busiest moment of the last timeout, and the others
// reach their retire timeout and end. (With one shared channel, receivers are served in FIFO
// order: every idle goroutine got an attempt now and then, none ever timed out, and under steady
// probing the pool filled up to maxIdle — the goroutine growth of the soak, ARCHITECTURE.md.)
//
// An idle goroutine waits on nothing but its own channel: retiring it and stopping the pool are
// hand-offs too (a nil job). One sweep timer per pool retires, once per AttemptIdleTimeout, the
// goroutines that stayed idle through a whole sweep interval; being the least recently idle, they
// are the bottom of the stack. (A select on the work channel, a retire timer and a quit channel per
// idle goroutine cost 18 % of the actor core's CPU at 100,000 probes/s: selectgo's locking and
// registering a timer channel at every wait.)
type attemptPool struct {
	clock   clock.Clock  // the pool's housekeeping: the backlog's rescue and the sweeper
	mu      sync.RWMutex // Go holds it shared; Stop exclusively, so no wg.Add races the Wait
	closed  bool
	idleMu  sync.Mutex
	stack   []*idler     // idle goroutines, the most recently idle last; at most maxIdle
	epoch   uint64       // sweeps so far (under idleMu)
	sweeper clock.Timer  // armed while goroutines are idle (under idleMu)
	armed   bool         // the sweeper is armed (under idleMu)
	ending  bool         // Stop has begun: no goroutine goes idle any more (under idleMu)
	backlog chan Job     // capacity backlogCap
	live    atomic.Int32 // goroutines of the pool
	rescue  atomic.Bool  // a backlog check is scheduled
	maxIdle int
	spare   int32
	wg      sync.WaitGroup
}

// idler is one idle goroutine's hand-off: whoever takes it off the stack sends it one job (an
// attempt, or nil: end), so the send never blocks. since is the sweep epoch it went idle in.
type idler struct {
	work  chan Job
	since uint64
}

const (
	// BacklogWait is the longest an attempt waits in the backlog before a goroutine is started for it.
	BacklogWait = time.Millisecond
	// backlogCap bounds the backlog; past it Go starts a goroutine.
	backlogCap = 4096
)

// AttemptIdleTimeout is how long an idle attempt goroutine waits for work before it ends: the pool
// holds no goroutine once probing is at rest.
const AttemptIdleTimeout = time.Second

// newAttemptPool returns a pool that keeps at most maxIdle goroutines idle and starts new ones,
// rather than backlog an attempt, while fewer than spare are alive.
func newAttemptPool(c clock.Clock, maxIdle, spare int) *attemptPool {
	return &attemptPool{clock: c, backlog: make(chan Job, backlogCap), maxIdle: maxIdle, spare: int32(spare)}
}

// Go runs the attempt of s on an idle pool goroutine, or a new one. It never blocks and never waits
// for another attempt. After Stop it starts a plain goroutine (no attempt starts then: every worker
// is gone).
func (p *attemptPool) Go(s Job) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		go s.Run()
		return
	}
	if w := p.pop(); w != nil {
		w.work <- s
		return
	}
	if p.live.Load() >= p.spare {
		select {
		case p.backlog <- s:
			if p.rescue.CompareAndSwap(false, true) {
				p.clock.AfterFunc(BacklogWait, p.rescueBacklog)
			}
			return
		default:
		}
	}
	p.start(s)
}

// start runs s on a new pool goroutine (the caller holds mu shared).
func (p *attemptPool) start(s Job) {
	p.wg.Add(1)
	p.live.Add(1)
	go p.run(s)
}

// rescueBacklog gives every attempt still in the backlog a goroutine: an idle one, or a new one.
func (p *attemptPool) rescueBacklog() {
	p.mu.RLock()
	defer p.mu.RUnlock()
	p.rescue.Store(false)
	for {
		select {
		case s := <-p.backlog:
			if p.closed {
				go s.Run()
			} else if w := p.pop(); w != nil {
				w.work <- s
			} else {
				p.start(s)
			}
		default:
			return
		}
	}
}

// TryGo hands s to an idle pool goroutine and reports whether it could: it never starts one.
func (p *attemptPool) TryGo(s Job) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return false
	}
	w := p.pop()
	if w == nil {
		return false
	}
	w.work <- s
	return true
}

// pop takes the most recently idle goroutine off the stack (nil when none is idle).
func (p *attemptPool) pop() *idler {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	n := len(p.stack)
	if n == 0 {
		return nil
	}
	w := p.stack[n-1]
	p.stack[n-1] = nil
	p.stack = p.stack[:n-1]
	return w
}

// push puts w on the stack and arms the sweeper if it is not; false when maxIdle goroutines are
// idle already or the pool is stopping (w ends instead).
func (p *attemptPool) push(w *idler) bool {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	if p.ending || len(p.stack) >= p.maxIdle {
		return false
	}
	w.since = p.epoch
	p.stack = append(p.stack, w)
	if !p.armed {
		p.armed = true
		p.sweeper = p.clock.AfterFunc(AttemptIdleTimeout, p.sweep)
	}
	return true
}

// sweep runs once per AttemptIdleTimeout while goroutines are idle: it ends those that went idle
// before the previous sweep (idle for one to two AttemptIdleTimeouts), which are the bottom of the
// stack, and re-arms itself while any stay.
func (p *attemptPool) sweep() {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	p.epoch++
	n := 0
	for n < len(p.stack) && p.stack[n].since+1 < p.epoch {
		p.stack[n].work <- nil
		n++
	}
	p.stack = slices.Delete(p.stack, 0, n)
	p.armed = len(p.stack) > 0 && !p.ending
	if p.armed {
		p.sweeper = p.clock.AfterFunc(AttemptIdleTimeout, p.sweep)
	}
}

// run ends when it is handed nil: the goroutine was idle for one to two AttemptIdleTimeouts, or the
// pool stops; or when it finishes an attempt while maxIdle others are idle or the pool is stopping.
func (p *attemptPool) run(s Job) {
	defer p.wg.Done()
	defer p.live.Add(-1)
	me := &idler{work: make(chan Job, 1)}
	for s != nil {
		s.Run()
		select {
		case s = <-p.backlog: // an attempt waiting for a goroutine: this one
			continue
		default:
		}
		if !p.push(me) {
			return
		}
		s = <-me.work
	}
}

// Idle is the number of goroutines waiting for an attempt (tests).
func (p *attemptPool) Idle() int {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	return len(p.stack)
}

// Stop ends the idle goroutines and waits for the busy ones to finish their attempt. Idempotent.
// Under mu no Go is handing over an attempt, so every goroutine on the stack has an empty channel;
// one taken off it before holds its attempt, runs it and then ends, as every busy one does.
func (p *attemptPool) Stop() {
	p.mu.Lock()
	p.closed = true
	p.idleMu.Lock()
	p.ending = true
	if p.armed {
		p.sweeper.Stop()
	}
	p.armed = false
	for _, w := range p.stack {
		w.work <- nil
	}
	p.stack = nil
	p.idleMu.Unlock()
	p.mu.Unlock()
	p.wg.Wait()
}
