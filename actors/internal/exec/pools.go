package exec

import (
	"runtime/pprof"
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
	pprof.SetGoroutineLabels(mailboxLabels)
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
	goLabeled(mailboxLabels, m)
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
// The shard's firing goroutine does not hand each due tick to a goroutine of its own: Dispatch
// queues ticks in the backlog and wakes one searcher per burst (Dispatch's doc).
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
	clock     clock.Clock  // the pool's housekeeping: the backlog's rescue and the sweeper
	mu        sync.RWMutex // Go and Dispatch hold it shared; Stop exclusively, so no wg.Add races the Wait
	closed    bool
	idleMu    sync.Mutex
	stack     []*idler      // idle goroutines, the most recently idle last; at most maxIdle
	epoch     uint64        // sweeps so far (under idleMu)
	sweeper   clock.Timer   // armed while goroutines are idle (under idleMu)
	armed     bool          // the sweeper is armed (under idleMu)
	ending    bool          // Stop has begun: no goroutine goes idle any more (under idleMu)
	backlog   chan Job      // capacity backlogCap: attempts waiting for a goroutine, dispatched ticks
	live      atomic.Int32  // goroutines of the pool
	rescue    atomic.Bool   // a backlog check is scheduled
	searching atomic.Bool   // a goroutine woken to search the backlog has not taken a job yet
	searchers atomic.Uint64 // goroutines woken or started to search the backlog, ever (tests)
	maxIdle   int
	spare     int32
	wg        sync.WaitGroup
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
		goLabeled(attemptLabels, s)
		return
	}
	if w := p.pop(); w != nil {
		w.work <- s
		return
	}
	if p.live.Load() >= p.spare {
		select {
		case p.backlog <- s:
			p.armRescue()
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

// rescueBacklog gives every job still in the backlog (an attempt, or a dispatched tick) a goroutine:
// an idle one, or a new one.
func (p *attemptPool) rescueBacklog() {
	p.mu.RLock()
	defer p.mu.RUnlock()
	p.rescue.Store(false)
	for {
		select {
		case s := <-p.backlog:
			if p.closed {
				goLabeled(attemptLabels, s)
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

// Dispatch queues j (a worker's tick, from the shard's firing goroutine) for the pool's goroutines
// and makes sure one is on its way to take it; false when the pool is stopped or the queue (the
// backlog) is full, and j was not taken.
//
// A burst of due ticks is not handed out a goroutine each: that woke a parked goroutine per probe,
// a quarter of the actor core's CPU at 100,000 workers on 16 cores. The ticks go into the backlog,
// which every pool goroutine drains before it goes idle, and at most one idle goroutine at a time is
// woken to search it (searching), as the Go runtime wakes spinning threads: the searcher, once it
// has taken a tick, wakes the next one if ticks are still queued. A goroutine hands the backlog on
// to that searcher after relayAfter ticks in a row (relayAfter says why). So a burst of quick probes
// costs a wake-up per relayAfter ticks, and a probe that blocks never holds up the ticks queued
// behind it by more than one goroutine's wake-up: the goroutine that took it woke a searcher before
// it began.
func (p *attemptPool) Dispatch(j Job) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return false
	}
	select {
	case p.backlog <- j:
	default:
		return false
	}
	p.kick()
	return true
}

// search is the job a goroutine is woken or started with to search the backlog; it is never run.
var search Job = searchMark{}

type searchMark struct{}

func (searchMark) Run() {}

// kick wakes an idle goroutine (or starts one, while fewer than spare are alive) to search the
// backlog, unless one is searching already. When none can be had, the backlog's rescue gives every
// waiting job a goroutine after BacklogWait, as it does for attempts (the busy goroutines may be
// blocked on slow probes). The caller holds mu shared.
func (p *attemptPool) kick() {
	if !p.searching.CompareAndSwap(false, true) || p.wakeSearcher() {
		return
	}
	if p.live.Load() < p.spare {
		p.searchers.Add(1)
		p.start(search)
		return
	}
	p.searching.Store(false)
	p.armRescue()
}

// armRescue schedules the backlog's rescue (rescueBacklog, after BacklogWait) unless it is already
// scheduled.
func (p *attemptPool) armRescue() {
	if p.rescue.CompareAndSwap(false, true) {
		p.clock.AfterFunc(BacklogWait, p.rescueBacklog)
	}
}

// wakeSearcher hands search to the most recently idle goroutine, for a caller that has just set
// searching; false when none is idle.
func (p *attemptPool) wakeSearcher() bool {
	w := p.pop()
	if w == nil {
		return false
	}
	p.searchers.Add(1)
	w.work <- search
	return true
}

// testHookSearchedEmpty, when set (tests), runs when a searcher's first look found the backlog
// empty, before it says it is no longer searching: the window next's second look exists for.
var testHookSearchedEmpty func()

// next is what a pool goroutine does after a job (or, searching, on waking): the backlog's next
// job, or nil, and it goes idle. A searcher that found a job, or found none, is no longer
// searching; it looks once more after saying so, because a job queued in between saw it searching
// and woke nobody. Whoever takes a job while others wait wakes a searcher for them first.
func (p *attemptPool) next(searching bool) Job {
	var j Job
	select {
	case j = <-p.backlog:
	default:
	}
	if searching {
		if j == nil && testHookSearchedEmpty != nil {
			testHookSearchedEmpty()
		}
		p.searching.Store(false)
		if j == nil {
			select {
			case j = <-p.backlog:
			default:
			}
		}
	}
	if j != nil && len(p.backlog) > 0 && !p.searching.Load() {
		p.mu.RLock()
		if !p.closed {
			p.kick()
		}
		p.mu.RUnlock()
	}
	return j
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

// run runs s, then whatever waits in the backlog, then waits on the stack for the next job; handed
// search, it takes its first job from the backlog. It ends when it is handed nil (it was idle for
// one to two AttemptIdleTimeouts, or the pool stops), or when it finds nothing to do while maxIdle
// others are idle or the pool is stopping.
func (p *attemptPool) run(s Job) {
	defer p.wg.Done()
	defer p.live.Add(-1)
	pprof.SetGoroutineLabels(attemptLabels)
	me := &idler{work: make(chan Job, 1)}
	taken := 0 // jobs taken from the backlog since this goroutine last went idle
	for s != nil {
		searching := s == search
		if !searching {
			s.Run()
		}
		handOn := false
		if taken == relayAfter { // hand on; with no goroutine to take over, go on for as many again
			taken, handOn = 0, p.relay()
		}
		if !handOn {
			if s = p.next(searching); s != nil { // a job waiting for a goroutine: this one
				taken++
				continue
			}
		}
		taken = 0
		if !p.push(me) {
			return
		}
		s = <-me.work
	}
}

// relayAfter is how many jobs in a row a goroutine takes from the backlog before it hands the
// backlog on to a searcher and goes idle. A goroutine that drains the backlog does not block while
// there is work, so it gives up its proc only when the runtime preempts it, after 10 ms. Under
// overload (more due than the cores can probe) the backlog never empties, every searcher woke the
// next, and every idle goroutine ended up draining, each in 10 ms slices: the mailbox pool's and the
// tree actors' goroutines waited for hundreds of them, and stopping a tree of 1,000,000 workers on 2
// vCPUs outlasted protoactor's 10 s stop future (yielding the proc every 16 jobs instead was not
// enough: the slices were shorter, the drainers as many). Handing on bounds the drainers: each
// lives for relayAfter jobs, and a new one comes only as the searcher takes its first job. A burst
// then costs a wake-up per relayAfter ticks rather than one.
const relayAfter = 32

// relay is asked by a goroutine that has taken relayAfter jobs in a row and has run the last: true
// when it may go idle, because the backlog is empty or a searcher is on its way to it (already
// searching, or woken now); false when no goroutine is idle to take over, and it goes on itself.
func (p *attemptPool) relay() bool {
	if len(p.backlog) == 0 || p.searching.Load() {
		return true
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return false // what is queued runs before Stop returns
	}
	if !p.searching.CompareAndSwap(false, true) || p.wakeSearcher() {
		return true
	}
	p.searching.Store(false)
	return false
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
