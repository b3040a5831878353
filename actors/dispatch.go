package actors

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Executors of one tree. protoactor's default dispatcher starts a new goroutine for every mailbox
// activation, and each one at once outgrows its initial stack (protoactor's call depth): at 100,000
// probes/s, goroutine start-up and stack growth were a third of the actor core's CPU. Worker mailboxes
// and probe attempts therefore run on long-lived goroutines whose stacks are already grown. They are
// separate executors because a worker waits for its cancelled attempt when it stops: on one shared
// pool, workers waiting for attempts could occupy every goroutine the attempts need.

// job is what the pools run: a worker mailbox's activation (*workerMailbox) or a worker's attempt
// (*attemptSlot). Both are pointers, so handing one over allocates nothing.
type job interface{ run() }

// jobFunc runs a function as a job (tests).
type jobFunc func()

func (f jobFunc) run() { f() }

const (
	// mailboxThroughput is protoactor's default: messages a mailbox handles before yielding.
	mailboxThroughput = 300
	// mailboxQueue is the pool's queue of mailbox activations; past it Schedule starts a goroutine.
	mailboxQueue = 8192
)

// mailboxPool runs worker mailboxes (workerMailbox) on a fixed set of goroutines taking them from
// one queue. schedule never blocks (it is called from every sender, and from the pool's own
// goroutines): when the queue is full, or the pool is stopped, it falls back to a goroutine of its
// own, as protoactor's default dispatcher does. A mailbox handler that blocks (a worker waiting for
// its cancelled attempt) holds one pool goroutine for that time; the others and the fallback keep
// the rest going.
type mailboxPool struct {
	mu     sync.RWMutex // schedule holds it shared; Stop exclusively, so no send races the close
	closed bool
	queue  chan job
	wg     sync.WaitGroup
}

func newMailboxPool(goroutines int) *mailboxPool {
	p := &mailboxPool{queue: make(chan job, mailboxQueue)}
	p.wg.Add(goroutines)
	for range goroutines {
		go p.run()
	}
	return p
}

// defaultMailboxGoroutines is one pool goroutine per P.
func defaultMailboxGoroutines() int { return max(2, runtime.GOMAXPROCS(0)) }

// run ends when Stop closed the queue and it is drained.
func (p *mailboxPool) run() {
	defer p.wg.Done()
	for j := range p.queue {
		j.run()
	}
}

// schedule runs m (a mailbox activation) on a pool goroutine.
func (p *mailboxPool) schedule(m job) {
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
	go m.run()
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

// attemptPool runs probe attempts, which may block for up to their timeout (real probes), on
// long-lived goroutines, never holding one attempt behind another for more than backlogWait: Go
// hands an attempt to an idle goroutine if there is one; else, while fewer than spare goroutines
// are alive, it starts a new one; else it puts the attempt in the backlog, which goroutines take
// from when they finish an attempt, and which starts a new goroutine per waiting attempt once one
// has waited backlogWait (the busy ones may be blocked on slow probes). So the pool grows to the
// number of attempts in flight when they are slow, but a burst of quick attempts on a machine that
// is already busy does not start (and grow the stacks of) a goroutine each. A goroutine that
// finishes an attempt stays for the next one only while fewer than maxIdle others are idle, and
// for at most two attemptIdleTimeouts, so the pool shrinks back as soon as a burst of slow attempts
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
// hand-offs too (a nil job). One sweep timer per pool retires, once per attemptIdleTimeout, the
// goroutines that stayed idle through a whole sweep interval; being the least recently idle, they
// are the bottom of the stack. (A select on the work channel, a retire timer and a quit channel per
// idle goroutine cost 18 % of the actor core's CPU at 100,000 probes/s: selectgo's locking and
// registering a timer channel at every wait.)
type attemptPool struct {
	mu      sync.RWMutex // Go holds it shared; Stop exclusively, so no wg.Add races the Wait
	closed  bool
	idleMu  sync.Mutex
	stack   []*idler // idle goroutines, the most recently idle last; at most maxIdle
	epoch   uint64   // sweeps so far (under idleMu)
	sweeper *time.Timer
	armed   bool         // the sweeper is armed (under idleMu)
	ending  bool         // Stop has begun: no goroutine goes idle any more (under idleMu)
	backlog chan job     // capacity backlogCap
	live    atomic.Int32 // goroutines of the pool
	rescue  atomic.Bool  // a backlog check is scheduled
	maxIdle int
	spare   int32
	wg      sync.WaitGroup
}

// idler is one idle goroutine's hand-off: whoever takes it off the stack sends it one job (an
// attempt, or nil: end), so the send never blocks. since is the sweep epoch it went idle in.
type idler struct {
	work  chan job
	since uint64
}

const (
	// backlogWait is the longest an attempt waits in the backlog before a goroutine is started for it.
	backlogWait = time.Millisecond
	// backlogCap bounds the backlog; past it Go starts a goroutine.
	backlogCap = 4096
)

// attemptIdleTimeout is how long an idle attempt goroutine waits for work before it ends: the pool
// holds no goroutine once probing is at rest.
const attemptIdleTimeout = time.Second

func newAttemptPool(maxIdle int) *attemptPool {
	p := &attemptPool{backlog: make(chan job, backlogCap),
		maxIdle: maxIdle, spare: int32(2 * max(2, runtime.GOMAXPROCS(0)))}
	p.sweeper = time.AfterFunc(time.Hour, p.sweep)
	p.sweeper.Stop() // armed by the first goroutine that goes idle
	return p
}

// defaultIdleAttemptGoroutines is how many idle attempt goroutines may stay (256 on 2 cores, ~2 MB
// of stacks). The scheduler wakes workers in bursts (every worker due in the same instant), and a
// mailbox goroutine starts a burst's attempts faster than they finish: with 8 idle goroutines, most
// attempts at 100,000 probes/s still started a goroutine and grew its stack (15 % of CPU); with 256,
// under 2 %. The LIFO hand-off keeps only as many as the bursts use.
func defaultIdleAttemptGoroutines() int { return 128 * max(2, runtime.GOMAXPROCS(0)) }

// Go runs the attempt of s on an idle pool goroutine, or a new one. It never blocks and never waits
// for another attempt. After Stop it starts a plain goroutine (no attempt starts then: every worker
// is gone).
func (p *attemptPool) Go(s job) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		go s.run()
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
				time.AfterFunc(backlogWait, p.rescueBacklog)
			}
			return
		default:
		}
	}
	p.start(s)
}

// start runs s on a new pool goroutine (the caller holds mu shared).
func (p *attemptPool) start(s job) {
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
				go s.run()
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
func (p *attemptPool) TryGo(s job) bool {
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
		p.sweeper.Reset(attemptIdleTimeout)
	}
	return true
}

// sweep runs once per attemptIdleTimeout while goroutines are idle: it ends those that went idle
// before the previous sweep (idle for one to two attemptIdleTimeouts), which are the bottom of the
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
		p.sweeper.Reset(attemptIdleTimeout)
	}
}

// run ends when it is handed nil: the goroutine was idle for one to two attemptIdleTimeouts, or the
// pool stops; or when it finishes an attempt while maxIdle others are idle or the pool is stopping.
func (p *attemptPool) run(s job) {
	defer p.wg.Done()
	defer p.live.Add(-1)
	me := &idler{work: make(chan job, 1)}
	for s != nil {
		s.run()
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
	p.sweeper.Stop()
	p.armed = false
	for _, w := range p.stack {
		w.work <- nil
	}
	p.stack = nil
	p.idleMu.Unlock()
	p.mu.Unlock()
	p.wg.Wait()
}

// executors are a tree's worker mailbox pool, its attempt pool and the goroutines of its own
// actors' mailboxes, started by Start and stopped with the root (after every other actor is gone).
type executors struct {
	mailboxes *mailboxPool
	attempts  *attemptPool
	slots     sync.Pool // of *attemptSlot: one tree's attempts only

	quit    chan struct{} // closed by stop: runners end
	runners sync.WaitGroup
	once    sync.Once
}

func newExecutors() *executors {
	return &executors{mailboxes: newMailboxPool(defaultMailboxGoroutines()),
		attempts: newAttemptPool(defaultIdleAttemptGoroutines()), quit: make(chan struct{}),
		slots: sync.Pool{New: func() any { return &attemptSlot{ctx: new(attemptCtx)} }}}
}

// runner starts a goroutine of its own for the mailbox of one of the tree's actors (probeManager,
// statusManager, resultsCache, syncLoop): each of them is one stage of the pod pipeline, so it gets
// a long-lived goroutine, woken when its mailbox has work, rather than a new goroutine (and a new
// stack to grow) per activation or a place in the workers' queue. It ends when the executors stop.
func (x *executors) runner() (wake func(*mailbox)) {
	ch := make(chan *mailbox, 1) // one activation at a time: at most one wake-up is pending
	x.runners.Add(1)
	go func() {
		defer x.runners.Done()
		for {
			select {
			case m := <-ch:
				m.run()
			case <-x.quit:
				return
			}
		}
	}()
	return func(m *mailbox) {
		select {
		case ch <- m:
		case <-x.quit:
			go m.run() // stopped: a goroutine of its own, as protoactor's default dispatcher
		}
	}
}

// stop ends both pools and the runners and waits for their goroutines. Idempotent.
func (x *executors) stop() {
	x.attempts.Stop()
	x.mailboxes.Stop()
	x.once.Do(func() { close(x.quit) })
	x.runners.Wait()
}
