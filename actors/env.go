package actors

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"

	"github.com/probeactor/probeactor/actors/internal/exec"
	"github.com/probeactor/probeactor/actors/internal/supervision"
)

// Child names under the tree's root; sibling PIDs are derived from them before anything is spawned,
// so no actor ever needs to learn another's PID at run time.
const (
	nameRoot    = "root"
	nameCache   = "resultsCache"
	nameManager = "probeManager"
	nameStatus  = "statusManager"
	nameSync    = "syncLoop"
)

// env is what every actor of one tree shares. It is built before the root is spawned and read-only
// afterwards (the executor is safe for concurrent use).
type env struct {
	cfg     *config
	sys     *actor.ActorSystem
	log     hclog.Logger
	slots   *slotPool // the tree's attempt slots
	metrics *metrics
	// budgetMetrics are the restart budget's series (nil without WithRestartBudget or WithRegistry).
	budgetMetrics *budgetMetrics
	queued        *queued   // user messages waiting in the tree's mailboxes, per actor kind
	start         time.Time // tree start, for kubelet's restart jitter
	// stopping is set when the root starts stopping: children then skip messages to siblings that
	// may already be gone (a dead letter each, otherwise).
	stopping atomic.Bool
	// outside orders the sends made from outside the tree's actors that must not outlive it
	// (SubscribeFunc's): they happen under the read lock and only while stopping is false; the root
	// sets stopping under the write lock. done is closed when every actor of the tree is gone, and
	// subs counts SubscribeFunc's goroutines (Tree.Stop waits for them).
	outside sync.RWMutex
	done    chan struct{}
	subs    sync.WaitGroup

	// warned holds "<actor>|<type>" for each unhandled message type already logged.
	warned sync.Map

	root, cache, manager, status, sync *actor.PID

	// supervisor is probeManager's strategy for workers (set when its props are built).
	supervisor *supervision.Strategy
	// infra is the root's strategy for its four children: the same back-off, but it never gives up
	// (without them the tree is no tree; protoactor's default would stop one after 10 panics in 10 s).
	infra *supervision.Strategy

	// workerProps spawn every worker; spawning is the worker probeManager is spawning (read by the
	// props' producers during SpawnNamed, on probeManager's goroutine).
	workerProps *actor.Props
	spawning    *workerActor
}

// props builds the props of one of the tree's own actors: the tree's mailbox, which logs a panic
// with its stack before supervision handles it (and a test's extra middleware).
func (e *env) props(name string, produce actor.Producer, opts ...actor.PropsOption) *actor.Props {
	opts = append(opts, actor.WithMailbox(func() actor.Mailbox {
		owner := &treeActor{log: e.log, name: name}
		if name != nameRoot { // the root's Stopped handler stops the runners
			owner.wake = e.cfg.exec.Runner(name)
		}
		return &exec.Mailbox{Owner: owner, Depth: &e.queued[kindOf(name)]}
	}))
	if len(e.cfg.middleware) > 0 {
		opts = append(opts, actor.WithReceiverMiddleware(e.cfg.middleware...))
	}
	return actor.PropsFromProducer(produce, opts...)
}

func (e *env) now() time.Time { return e.cfg.clock.Now() }

// send delivers a message from outside the tree (the Tree's methods).
func (e *env) send(pid *actor.PID, msg any) { e.sys.Root.Send(pid, msg) }

// tell is how the tree's actors send to each other: from sends msg to "to" unless the tree is
// stopping. A stopping root has let every child finish its current message (see rootActor.barrier)
// and protoactor then stops them all at once, so a message to a sibling could become a dead letter;
// a stopping tree takes no new work either. This is the only place that rule lives. from nil means
// the actor system's root context (a worker failing outside a handler). It reports whether msg was
// sent.
func (e *env) tell(from actor.SenderContext, to *actor.PID, msg any) bool {
	if e.stopping.Load() {
		return false
	}
	if from == nil {
		from = e.sys.Root
	}
	from.Send(to, msg)
	return true
}

// ask is tell with from as the sender, so that "to" can answer (result batches, acknowledgements).
func (e *env) ask(from actor.SenderContext, to *actor.PID, msg any) bool {
	if e.stopping.Load() {
		return false
	}
	from.Request(to, msg)
	return true
}

// fromOutside runs send, which sends to the tree from outside its actors, unless the tree is
// stopping; it reports whether send ran. A send that runs is queued before the root starts stopping,
// so the root's stop barrier covers what it causes.
func (e *env) fromOutside(send func()) bool {
	e.outside.RLock()
	defer e.outside.RUnlock()
	if e.stopping.Load() {
		return false
	}
	send()
	return true
}

// unhandled records a message the actor named name does not understand: counted in
// probeactor_unhandled_messages_total{actor,type} (with WithRegistry) and logged once per actor
// kind and type. protoactor's lifecycle messages, which every actor receives, are not "unhandled".
func (e *env) unhandled(name string, msg any) {
	switch msg.(type) {
	case actor.SystemMessage, actor.AutoReceiveMessage, actor.AutoRespond, *actor.ReceiveTimeout:
		return
	default:
	}
	typ := fmt.Sprintf("%T", msg)
	if e.metrics != nil {
		e.metrics.unhandled.WithLabelValues(name, typ).Inc()
	}
	if _, seen := e.warned.LoadOrStore(name+"|"+typ, struct{}{}); !seen {
		e.log.Warn("unhandled message dropped (logged once per actor and type)", "actor", name, "type", typ)
	}
}

func childPID(root *actor.PID, name string) *actor.PID {
	return actor.NewPID(root.Address, root.Id+"/"+name)
}

// treeActor is the mailbox owner of the tree's own actors (root, resultsCache, probeManager,
// statusManager, syncLoop): a long-lived goroutine of its own (wake; nil: a goroutine per
// activation, as protoactor's default dispatcher, for the root, which blocks while it stops), and
// the panic logged with its stack before protoactor's restart.
type treeActor struct {
	log  hclog.Logger
	name string
	wake func(*exec.Mailbox)
}

func (a *treeActor) Schedule(m *exec.Mailbox) {
	if a.wake == nil {
		go m.Run()
		return
	}
	a.wake(m)
}

func (a *treeActor) Signal(any) bool        { return false }
func (a *treeActor) RestartsOnResume() bool { return false }
func (a *treeActor) Failed(reason, msg any) {
	a.log.Error("actor panicked", "actor", a.name, "message_type", fmt.Sprintf("%T", msg),
		"panic", fmt.Sprint(reason), "stack", string(debug.Stack()))
}
