package exec

import (
	"context"
	"sync"
	"time"
)

// Context is the context.Context of an attempt. It lives in a pooled attempt slot and is reused from one
// attempt to the next while it is live (a context.WithCancel per attempt costs two allocations); it
// is cancelled only when a worker abandons its attempt, and a cancelled one is never made live
// again: the slot gets a new one. Children derived through a wrapper (probes/exec.go's
// context.WithTimeout(context.WithValue(ctx, …))) are watched by a goroutine of the context package
// that selects on this context's done channel and then reads Err: a context made live again after
// a cancel handed it nil, and the context package panics on that ("missing cancel error": it
// crashed node in a soak under load). It has no deadline and no values. Children derived directly
// (the prober's context.WithTimeout) register through AfterFunc, so the context package starts no
// goroutine for them.
type Context struct {
	mu     sync.Mutex
	done   chan struct{} // made by the first Done; closed by cancel
	err    error
	afters []*afterFunc
}

type afterFunc struct{ f func() }

var _ context.Context = (*Context)(nil)

// Deadline implements context.Context: none (the prober applies the probe's timeout).
func (c *Context) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done implements context.Context.
func (c *Context) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

// Err implements context.Context.
func (c *Context) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value implements context.Context: no values.
func (c *Context) Value(any) any { return nil }

// AfterFunc arranges for f to run once c is cancelled (the context package's afterFuncer:
// context.WithCancel and friends register their child's cancel through it, and f reads c.Err()).
// stop reports whether it kept f from running. Registered callbacks run when cancel runs; for an
// already cancelled context f runs in a goroutine of its own (the context package calls AfterFunc
// holding the child's lock, which f takes); c stays cancelled, so f sees its error.
func (c *Context) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	c.afters = append(c.afters, a)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.afters {
			if x == a {
				last := len(c.afters) - 1
				c.afters[i] = c.afters[last]
				c.afters[last] = nil
				c.afters = c.afters[:last]
				return true
			}
		}
		return false
	}
}

// Cancel cancels c for good: its done channel closes, Err reports context.Canceled, and the
// children registered through AfterFunc are cancelled on the calling goroutine.
func (c *Context) Cancel() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.Canceled
	if c.done != nil {
		close(c.done)
	}
	fs := c.afters
	c.afters = nil
	c.mu.Unlock()
	for _, a := range fs { // the context package's child cancellations: quick, and they read c.Err()
		a.f()
	}
}
