package proc

import (
	"strconv"
	"strings"
	"time"
)

// shimCore is every decision of a container's shim (ShimMain): what node's connection, the
// container's exit, the shim's deadlines and signals to the shim lead to. It is pure: it reads no
// clock (times are CLOCK_MONOTONIC ns, handed in), does no I/O and starts nothing; each event
// returns the shimEffects the shell carries out, and the shell arms one timer for each deadline
// the core reports (window, kill, lease). TestShimCore tables it; TestShimCoreSimulation drives it
// with random events and checks its invariants after every step.
//
// Invariants:
//   - the shim exits only once the container's main process has exited (Exit implies mainDone);
//   - a SIGKILL deadline pending is never moved later (a stop never stretches another);
//   - the lease is only ever extended, and only before it ran out; once fenced, always fenced, and
//     a fenced container's SIGKILL is due no later than the lease's deadline plus its grace;
//   - once the re-attach window expired, no node is let in again.
type shimCore struct {
	reattach time.Duration // spec.ReattachTimeout
	grace    time.Duration // spec.Grace: the stop at the window's end

	connected     bool // a node's connection is attached
	everConnected bool
	nodeLost      bool // a node's connection closed (or the first node died before connecting)
	mainDone      bool // the container's main process has exited (and been finished)
	signalled     bool // SIGTERM/INT/HUP to the shim: the container is taken down for good
	expired       bool // the re-attach window passed: no node is let in any more

	window   bool  // the re-attach window runs, until windowAt
	windowAt int64 //
	killing  bool  // a SIGKILL is due at killAt
	killAt   int64 //

	lease      int64         // node's cluster lease deadline; 0: none
	leaseGrace time.Duration // the grace of the stop the lease's end begins
	leaseArmed bool          // the lease timer runs, until lease
	fenced     bool          // the lease ran out: the container is being stopped for good
}

// shimEffects is what one event asks of the shell, carried out in this order.
type shimEffects struct {
	Reject        bool   // close the connection just accepted: no node is let in any more
	Attach        bool   // the connection just accepted replaces the current one (closed)
	Detach        bool   // close the current connection: it is gone
	Term          bool   // SIGTERM to the container's process group
	KillTree      bool   // SIGKILL to the group and every descendant
	CloseListener bool   // close and remove the socket: no node can connect again
	Finish        bool   // the main process exited: kill and reap the rest, drain the log
	Send          string // "hello" or "exited" on the current connection; then report sent
	Exit          bool   // the shim exits 0
}

func newShimCore(spec shimSpec) *shimCore {
	c := &shimCore{reattach: spec.ReattachTimeout, grace: spec.Grace, lease: spec.LeaseDeadline, leaseGrace: spec.Grace}
	c.leaseArmed = c.lease != 0
	return c
}

// mayStart says whether the container may start now: not once the lease it starts under has run
// out (it would run where the cluster may already place the pod anew).
func (c *shimCore) mayStart(now int64) bool { return c.lease == 0 || now < c.lease }

// accepted: a node connected.
func (c *shimCore) accepted() shimEffects {
	if c.expired {
		return shimEffects{Reject: true}
	}
	c.connected, c.everConnected, c.window = true, true, false
	return shimEffects{Attach: true, Send: "hello"}
}

// sent: the shell wrote what Send asked, ok or not (a failed write: node is gone).
func (c *shimCore) sent(ok bool, now int64) shimEffects {
	if ok {
		return shimEffects{Exit: c.mainDone} // the exit is reported
	}
	e := c.dropped(now)
	e.Exit = c.exitUnheard()
	return e
}

// dropped: node's connection closed (by node, or a failed write).
func (c *shimCore) dropped(now int64) shimEffects {
	c.connected = false
	e := c.detached(now)
	e.Detach = true
	return e
}

// stdinEOF: the first node closed its end of the shim's stdin (it connected, or it died).
func (c *shimCore) stdinEOF(now int64) shimEffects {
	if c.everConnected {
		return shimEffects{}
	}
	return c.detached(now) // the first node died before it connected
}

// detached applies the re-attach rule: no node is attached any more.
func (c *shimCore) detached(now int64) shimEffects {
	c.nodeLost = true
	switch {
	case c.reattach > 0:
		c.window, c.windowAt = true, now+int64(c.reattach)
	case c.mainDone:
		c.window, c.windowAt = true, now // nobody will come to hear the exit
	default:
		return shimEffects{KillTree: true} // the container dies with node's connection
	}
	return shimEffects{}
}

// windowDue: the re-attach window has passed with no node attached.
func (c *shimCore) windowDue(now int64) shimEffects {
	c.window = false
	if c.mainDone {
		return shimEffects{Exit: true} // nobody came to hear the exit
	}
	// No node came back: stop the container as node would have, and let no node in.
	c.expired = true
	c.killBy(now + int64(c.grace))
	return shimEffects{CloseListener: true, Term: true}
}

// leaseDue: the lease timer fired (the shell has applied the lines already waiting first, so a
// renewal on its way counts before the deadline is judged).
func (c *shimCore) leaseDue(now int64) shimEffects {
	c.leaseArmed = false
	if c.lease > now {
		c.leaseArmed = true // early, or extended meanwhile: wait for the rest
		return shimEffects{}
	}
	return c.fence()
}

// fence stops the container because the lease ran out, as a TERM with the lease's grace would:
// SIGTERM now (unless a kill is under way: it was sent then), SIGKILL when the grace has passed
// since the deadline — a shim that woke late does not stretch it — or at the kill's own deadline,
// whichever is earlier. It is for good: no renewal cancels it.
func (c *shimCore) fence() shimEffects {
	if c.mainDone || c.fenced {
		return shimEffects{}
	}
	c.fenced = true
	term := !c.killing
	c.killBy(c.lease + int64(c.leaseGrace)) // the deadline has passed: no overflow
	return shimEffects{Term: term}
}

// killDue: a pending SIGKILL's time has come.
func (c *shimCore) killDue() shimEffects {
	c.killing = false
	return shimEffects{KillTree: true}
}

// signal: SIGTERM, SIGINT or SIGHUP to the shim itself.
func (c *shimCore) signal() shimEffects {
	c.signalled = true
	return shimEffects{KillTree: true, Exit: c.mainDone} // one keeping an exit for the next node is told to go
}

// line carries out one line node sent on the current connection.
func (c *shimCore) line(text string, now int64) shimEffects {
	cmd, arg, _ := strings.Cut(text, " ")
	switch cmd {
	case shimTerm:
		// The shim keeps the kill's deadline itself, so a node that dies during a grace period
		// does not stretch it (node arms its own SIGKILL as well).
		if grace, err := strconv.ParseInt(arg, 10, 64); err == nil && grace >= 0 {
			c.killBy(now + grace)
		}
		return shimEffects{Term: true}
	case shimKill:
		return shimEffects{KillTree: true}
	case shimLease:
		d, g, _ := strings.Cut(arg, " ")
		deadline, err1 := strconv.ParseInt(d, 10, 64)
		grace, err2 := strconv.ParseInt(g, 10, 64)
		if err1 != nil || err2 != nil || deadline <= 0 || grace < 0 || deadline <= c.lease || c.fenced {
			return shimEffects{} // malformed; not later than the lease held (only ever extended); or too late
		}
		c.lease, c.leaseGrace = deadline, time.Duration(grace)
		c.leaseArmed = true // an armed timer that fires early re-arms itself (leaseDue)
	}
	return shimEffects{}
}

// mainExited: the container's main process has exited. The shell finishes it (kills and reaps the
// rest, drains the log) before the exit is reported to the node attached, or kept for the next one.
func (c *shimCore) mainExited() shimEffects {
	c.mainDone = true
	if c.connected {
		return shimEffects{Finish: true, Send: "exited"}
	}
	return shimEffects{Finish: true, Exit: c.exitUnheard()}
}

// exitUnheard says whether an exit no node heard is given up at once rather than kept for the next
// node within the window.
func (c *shimCore) exitUnheard() bool {
	return c.mainDone && (c.reattach <= 0 && c.nodeLost || c.expired || c.signalled)
}

// killBy makes the container's tree die by deadline: a kill already under way keeps its SIGKILL
// deadline when that is earlier, so no stop stretches another.
func (c *shimCore) killBy(deadline int64) {
	if c.killing && c.killAt <= deadline {
		return
	}
	c.killing, c.killAt = true, deadline
}
