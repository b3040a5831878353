package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// DefaultStopTimeout bounds a part's Stop when neither the part nor its Part entry says otherwise.
const DefaultStopTimeout = 10 * time.Second

// Component is a long-lived part: see the package doc for the contract.
type Component interface {
	// Start brings the part up and returns once it runs; on error nothing of it runs.
	Start(ctx context.Context) error
	// Stop takes the part down and returns once everything it began has ended. ctx's deadline
	// bounds the waiting.
	Stop(ctx context.Context) error
}

// Failing is a Component that can fail on its own while it runs. The channel yields at most one
// error, the reason the part stopped working; it is never closed.
type Failing interface {
	Failed() <-chan error
}

// Budgeted is a Component whose stop deadline is known only when it stops (the grace periods of
// the pods it runs at that moment). It overrides Part.StopTimeout.
type Budgeted interface {
	StopTimeout() time.Duration
}

// Funcs is a Component made of two functions; a nil one does nothing.
type Funcs struct {
	StartFunc func(ctx context.Context) error
	StopFunc  func(ctx context.Context) error
}

// Start implements Component.
func (f Funcs) Start(ctx context.Context) error {
	if f.StartFunc == nil {
		return nil
	}
	return f.StartFunc(ctx)
}

// Stop implements Component.
func (f Funcs) Stop(ctx context.Context) error {
	if f.StopFunc == nil {
		return nil
	}
	return f.StopFunc(ctx)
}

// Part is one named entry of a List.
type Part struct {
	// Name says what the part is ("probe-tree", "http-api"); unique in its List.
	Name string
	Component
	// StopTimeout bounds its Stop (default DefaultStopTimeout; a Budgeted part says its own).
	StopTimeout time.Duration
}

// Phase is a step of a part's life that a List reports.
type Phase string

// The phases, in the order a part goes through them.
const (
	Starting Phase = "starting"
	Started  Phase = "started"
	Stopping Phase = "stopping"
	Stopped  Phase = "stopped"
)

// Event is one step a List took: a part starting, started (Err: its Start failed), stopping or
// stopped (Err: what its Stop returned; Overran: past its deadline).
type Event struct {
	Part    string
	Phase   Phase
	Err     error
	Took    time.Duration // Started and Stopped: how long the step took
	Overran bool          // Stopped: the Stop returned after its deadline
}

// List runs parts: started in order, stopped in reverse. Use it once: Start (or Run) at most once,
// then Stop.
type List struct {
	parts   []Part
	log     hclog.Logger
	observe func(Event)

	mu       sync.Mutex
	started  int // how many parts, from the first, run
	stopped  bool
	failed   chan error    // the first failure of a running part (buffered 1)
	stopping chan struct{} // closed when Stop begins: ends the failure watchers
	watchers sync.WaitGroup
}

// Option configures a List.
type Option func(*List)

// WithLogger logs every step at debug, a failed start or stop at error, and an overrun at warn.
func WithLogger(log hclog.Logger) Option { return func(l *List) { l.log = log } }

// WithObserver calls fn with every Event, in order, on the goroutine that takes the step (tests
// use it to check the order).
func WithObserver(fn func(Event)) Option { return func(l *List) { l.observe = fn } }

// New returns a List of parts. It panics when two parts share a name or a part has no name or no
// Component: the list is the program's wiring, not input.
func New(parts []Part, opts ...Option) *List {
	seen := map[string]bool{}
	for i, p := range parts {
		if p.Name == "" || p.Component == nil {
			panic(fmt.Sprintf("lifecycle: part %d (%q) has no name or no component", i, p.Name))
		}
		if seen[p.Name] {
			panic(fmt.Sprintf("lifecycle: two parts are named %q", p.Name))
		}
		seen[p.Name] = true
	}
	l := &List{parts: slices.Clone(parts), log: hclog.NewNullLogger(), observe: func(Event) {}, failed: make(chan error, 1), stopping: make(chan struct{})}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Names returns the parts' names in start order (the stop order is its reverse).
func (l *List) Names() []string {
	names := make([]string, len(l.parts))
	for i, p := range l.parts {
		names[i] = p.Name
	}
	return names
}

// Start starts every part in order. When one fails, the ones started before it are stopped in
// reverse and the error, naming the part, is returned: nothing runs then.
func (l *List) Start(ctx context.Context) error {
	for i, p := range l.parts {
		l.emit(Event{Part: p.Name, Phase: Starting})
		began := time.Now()
		err := p.Start(ctx)
		l.emit(Event{Part: p.Name, Phase: Started, Err: err, Took: time.Since(began)})
		if err != nil {
			l.log.Error("start failed; stopping what was started", "part", p.Name, "error", err)
			l.Stop()
			return fmt.Errorf("start %s: %w", p.Name, err)
		}
		l.mu.Lock()
		if l.stopped { // Stop ran meanwhile (it stopped the parts before this one)
			l.mu.Unlock()
			l.stopPart(p)
			return fmt.Errorf("start %s: %w", p.Name, errStoppedWhileStarting)
		}
		l.started = i + 1
		if f, ok := p.Component.(Failing); ok {
			l.watch(p.Name, f) // under mu: before Stop's Wait, or not at all
		}
		l.mu.Unlock()
	}
	return nil
}

var errStoppedWhileStarting = errors.New("the list was stopped while starting")

// watch forwards the part's first failure to Failed; the goroutine ends with it or when Stop
// begins.
func (l *List) watch(name string, f Failing) {
	ch := f.Failed()
	l.watchers.Go(func() {
		select {
		case err := <-ch:
			select {
			case l.failed <- fmt.Errorf("%s: %w", name, err):
			default: // another part failed first
			}
		case <-l.stopping:
		}
	})
}

// Failed yields the first failure of a running part (named), at most once.
func (l *List) Failed() <-chan error { return l.failed }

// Stop stops the started parts in reverse, each within its deadline, and returns once the last
// one has. A second call does nothing.
func (l *List) Stop() {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.stopped = true
	n := l.started
	l.mu.Unlock()
	close(l.stopping)
	l.watchers.Wait()
	for i := n - 1; i >= 0; i-- {
		l.stopPart(l.parts[i])
	}
}

// stopPart stops one part within its deadline, logging when it is exceeded.
func (l *List) stopPart(p Part) {
	timeout := p.StopTimeout
	if b, ok := p.Component.(Budgeted); ok {
		timeout = b.StopTimeout()
	}
	if timeout <= 0 {
		timeout = DefaultStopTimeout
	}
	l.emit(Event{Part: p.Name, Phase: Stopping})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	overran := time.AfterFunc(timeout, func() { // ends when it fired or the stop returned first
		l.log.Warn("a part is past its stop deadline; waiting for it", "part", p.Name, "deadline", timeout)
	})
	began := time.Now()
	err := p.Stop(ctx)
	took := time.Since(began)
	late := !overran.Stop()
	switch {
	case err != nil:
		l.log.Error("stop failed", "part", p.Name, "error", err, "took", took)
	case late:
		l.log.Warn("a part stopped after its deadline", "part", p.Name, "deadline", timeout, "took", took)
	}
	l.emit(Event{Part: p.Name, Phase: Stopped, Err: err, Took: took, Overran: late})
}

// Run starts the list, waits until ctx ends or a running part fails, and stops it. It returns the
// start's error or the failure (nil when ctx ended it).
func (l *List) Run(ctx context.Context) error {
	if err := l.Start(ctx); err != nil {
		return err
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-l.failed:
		l.log.Error("a part failed; stopping", "error", err)
	}
	l.Stop()
	return err
}

func (l *List) emit(e Event) {
	if e.Phase == Starting || e.Phase == Stopping {
		l.log.Debug(string(e.Phase), "part", e.Part)
	}
	l.observe(e)
}
