package actors

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// Executors of one tree. protoactor's default dispatcher starts a new goroutine for every mailbox
// activation, and each one at once outgrows its initial stack (protoactor's call depth): at 100,000
// probes/s, goroutine start-up and stack growth were a third of the actor core's CPU. Worker mailboxes
// and probe attempts therefore run on long-lived goroutines whose stacks are already grown. They are
// separate executors because a worker waits for its cancelled attempt when it stops: on one shared
// pool, workers waiting for attempts could occupy every goroutine the attempts need.

const (
	// mailboxThroughput is protoactor's default: messages a mailbox handles before yielding.
	mailboxThroughput = 300
	// mailboxQueue is the pool's queue of mailbox activations; past it Schedule starts a goroutine.
	mailboxQueue = 8192
)

// mailboxPool is an actor.Dispatcher for the worker mailboxes: a fixed set of goroutines taking
// mailbox activations from one queue. Schedule never blocks (it is called from every sender, and
// from the pool's own goroutines): when the queue is full, or the pool is stopped, it falls back to
// a goroutine of its own, as protoactor's default dispatcher does. A mailbox handler that blocks
// (a worker waiting for its cancelled attempt) holds one pool goroutine for that time; the others
// and the fallback keep the rest going.
type mailboxPool struct {
	mu     sync.RWMutex // Schedule holds it shared; Stop exclusively, so no send races the close
	closed bool
	queue  chan func()
	wg     sync.WaitGroup
}

var _ actor.Dispatcher = (*mailboxPool)(nil)

func newMailboxPool(goroutines int) *mailboxPool {
	p := &mailboxPool{queue: make(chan func(), mailboxQueue)}
	p.wg.Add(goroutines)
	for range goroutines {
		go p.run()
	}
	return p
}

// defaultMailboxGoroutines is one pool goroutine per P.
func defaultMailboxGoroutines() int { return max(2, runtime.GOMAXPROCS(0)) }

func (p *mailboxPool) run() {
	defer p.wg.Done()
	for fn := range p.queue {
		fn()
	}
}

// Schedule runs fn (a mailbox's processMessages) on a pool goroutine.
func (p *mailboxPool) Schedule(fn func()) {
	p.mu.RLock()
	if !p.closed {
		select {
		case p.queue <- fn:
			p.mu.RUnlock()
			return
		default:
		}
	}
	p.mu.RUnlock()
	go fn()
}

// Throughput is protoactor's per-activation message budget.
func (p *mailboxPool) Throughput() int { return mailboxThroughput }

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
// long-lived goroutines without ever queueing one attempt behind another: Go hands fn to an idle
// goroutine if one is waiting and otherwise starts a new one, so the pool grows to the number of
// attempts in flight. A goroutine that finishes an attempt stays for the next one only while fewer
// than maxIdle others are idle, so the pool shrinks back as soon as a burst of slow attempts ends.
type attemptPool struct {
	mu      sync.RWMutex // Go holds it shared; Stop exclusively, so no wg.Add races the Wait
	closed  bool
	work    chan func() // unbuffered: a send succeeds only into an idle goroutine's hands
	quit    chan struct{}
	idle    atomic.Int32
	maxIdle int32
	wg      sync.WaitGroup
}

func newAttemptPool(maxIdle int) *attemptPool {
	return &attemptPool{work: make(chan func()), quit: make(chan struct{}), maxIdle: int32(maxIdle)}
}

// defaultIdleAttemptGoroutines keeps a few goroutines per P ready: instant probes complete within
// one scheduling quantum, so a handful serve any rate.
func defaultIdleAttemptGoroutines() int { return 4 * max(2, runtime.GOMAXPROCS(0)) }

// Go runs fn on an idle pool goroutine, or a new one. It never blocks and never waits for another
// attempt. After Stop it starts a plain goroutine (no attempt starts then: every worker is gone).
func (p *attemptPool) Go(fn func()) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		go fn()
		return
	}
	select {
	case p.work <- fn:
	default:
		p.wg.Add(1)
		go p.run(fn)
	}
}

func (p *attemptPool) run(fn func()) {
	defer p.wg.Done()
	for {
		fn()
		if p.idle.Add(1) > p.maxIdle {
			p.idle.Add(-1)
			return
		}
		select {
		case fn = <-p.work:
			p.idle.Add(-1)
		case <-p.quit:
			p.idle.Add(-1)
			return
		}
	}
}

// Idle is the number of goroutines waiting for an attempt (tests).
func (p *attemptPool) Idle() int { return int(p.idle.Load()) }

// Stop ends the idle goroutines and waits for the busy ones to finish their attempt. Idempotent.
func (p *attemptPool) Stop() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.quit)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// executors are a tree's worker mailbox pool and attempt pool, started by Start and stopped with
// the root (after every worker is gone).
type executors struct {
	mailboxes *mailboxPool
	attempts  *attemptPool
}

func newExecutors() *executors {
	return &executors{mailboxes: newMailboxPool(defaultMailboxGoroutines()),
		attempts: newAttemptPool(defaultIdleAttemptGoroutines())}
}

// stop ends both pools and waits for their goroutines. Idempotent.
func (x *executors) stop() {
	x.attempts.Stop()
	x.mailboxes.Stop()
}
