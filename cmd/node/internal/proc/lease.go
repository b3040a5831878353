package proc

import (
	"errors"
	"fmt"
	"math"
	"time"

	"golang.org/x/sys/unix"
)

// Node's cluster lease, as the runtime keeps it and gives it to every shim (see the package doc,
// Cluster lease). The shim's side is in shim.go (armLease, fence).

// monoNow is CLOCK_MONOTONIC in ns: one clock for node and every shim on the host, whatever
// each process's own scheduling, so a lease deadline means the same instant to all of them.
func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // cannot fail for CLOCK_MONOTONIC
	return ts.Nano()
}

// SetLease tells the runtime that node holds its cluster lease until until (a time from
// time.Now(), with its monotonic reading). Before the first call there is no lease: containers
// run as long as node wants them. From then on every shim of this runtime — running, started
// later, restarted or adopted — holds the lease as an absolute CLOCK_MONOTONIC deadline, the same
// instant for node and every shim on the host however late either reads it, and stops its
// container by itself when the deadline passes (SIGTERM, then SIGKILL to everything after the
// pod's grace period), whether a node is connected or not; the exit is recorded as terminated
// Fenced. Once the lease has run out no container starts (first start or restart): each shows
// Waiting, Fenced, and stays so until its pod is stopped — a renewal does not start it. The
// member that lost its lease stops every pod (the cluster's sharder), and starts a pod again only
// once it holds a current quorum and no peer still runs it; a renewal reaching the runtime before
// that stop (the stop runs on a goroutine) must not start a container the cluster may be running
// elsewhere.
//
// A lease earlier than the one held is ignored: it is only ever extended. SetLease may be called
// from any goroutine and does not wait for any shim (a shim whose connection is gone keeps the
// deadline it had).
func (r *Runtime) SetLease(until time.Time) {
	now := monoNow() // first: the deadline errs early, never late
	deadline := leaseDeadline(now, time.Until(until))
	r.mu.Lock()
	if deadline <= r.lease {
		r.mu.Unlock()
		return
	}
	r.lease = deadline
	refs := make([]containerRef, 0, len(r.byID))
	for _, ref := range r.byID {
		refs = append(refs, ref)
	}
	r.mu.Unlock()
	for _, ref := range refs {
		ref.proc.renewLease(lease{deadline: deadline, grace: ref.grace})
	}
}

// leaseDeadline is the CLOCK_MONOTONIC deadline of a lease that has left to run at now: past the
// clock's range it is never (MaxInt64); long past it is 1, not 0 or less (0 means no lease).
func leaseDeadline(now int64, left time.Duration) int64 {
	deadline := now + int64(left)
	switch {
	case left > 0 && deadline < now:
		return math.MaxInt64
	case deadline < 1:
		return 1
	}
	return deadline
}

// leaseRanOut reports whether node's cluster lease is set and has run out: no container may start.
func (r *Runtime) leaseRanOut() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lease != 0 && monoNow() >= r.lease
}

// currentLease is node's cluster lease now: its CLOCK_MONOTONIC deadline, 0 for none.
func (r *Runtime) currentLease() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lease
}

// lease is node's cluster lease as a shim holds it.
type lease struct {
	deadline int64         // CLOCK_MONOTONIC ns; 0: none
	grace    time.Duration // the pod's grace period, for the stop at the deadline
}

// errFenced means a shim did not start its container: node's cluster lease had run out.
var errFenced = errors.New("the node's cluster lease ran out before the container started")

// ReasonFenced is the reason of a container its shim stopped because node's cluster lease ran
// out (terminated), and of one that waits for the lease to start (waiting).
const ReasonFenced = "Fenced"

// exitOf is how an instance ended, from its shim's report.
func exitOf(m shimMessage, now time.Time) exitStatus {
	st := exitStatus{Code: int32(m.ExitCode), Reason: m.Reason, Message: m.Message, FinishedAt: now}
	if m.Fenced {
		st.Reason, st.Message = ReasonFenced, "the node's cluster lease ran out; the shim stopped the container"
	}
	return st
}

// renewLease hands the shim node's cluster lease l if it runs later than the last one: written
// by sendLeases, so the caller never waits for the shim. Only the latest waiting renewal is
// written. A shim that is gone does not get it (its own deadline stands).
func (p *process) renewLease(l lease) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || l.deadline <= p.lease.deadline {
		return
	}
	p.lease = l
	if p.renewed == nil {
		p.renewed = make(chan struct{}, 1)
		go p.sendLeases() // ends when done closes: the connection has ended
	}
	select {
	case p.renewed <- struct{}{}:
	default: // one is waiting already; it will read the latest lease
	}
}

// sendLeases writes each renewal renewLease asks for, the latest one each time, until done.
func (p *process) sendLeases() {
	var sent int64
	for {
		select {
		case <-p.renewed:
		case <-p.done:
			return
		}
		p.mu.Lock()
		l := p.lease
		p.mu.Unlock()
		if l.deadline > sent {
			p.send(fmt.Sprintf("%s %d %d", shimLease, l.deadline, int64(l.grace)))
			sent = l.deadline
		}
	}
}
