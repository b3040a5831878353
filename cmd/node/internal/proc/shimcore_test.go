package proc

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

const sec = int64(time.Second)

func leaseLine(deadline int64, grace time.Duration) string {
	return fmt.Sprintf("%s %d %d", shimLease, deadline, int64(grace))
}

func TestShimCore(t *testing.T) {
	spec := func(reattach time.Duration, lease int64) shimSpec {
		return shimSpec{ReattachTimeout: reattach, Grace: 2 * time.Second, LeaseDeadline: lease}
	}
	t.Run("a lost connection kills at once without a re-attach window", func(t *testing.T) {
		c := newShimCore(spec(0, 0))
		assert.Equal(t, shimEffects{Attach: true, Send: "hello"}, c.accepted())
		assert.Equal(t, shimEffects{}, c.sent(true, 1))
		assert.Equal(t, shimEffects{Detach: true, KillTree: true}, c.dropped(2))
		assert.Equal(t, shimEffects{Finish: true, Exit: true}, c.mainExited(), "nobody will hear the exit")
	})
	t.Run("the first node dying before it connects is a lost connection", func(t *testing.T) {
		c := newShimCore(spec(0, 0))
		assert.Equal(t, shimEffects{KillTree: true}, c.stdinEOF(1))
		c = newShimCore(spec(0, 0))
		c.accepted()
		assert.Equal(t, shimEffects{}, c.stdinEOF(1), "it connected: its stdin closing means nothing")
	})
	t.Run("a node that comes back within the window finds the container", func(t *testing.T) {
		c := newShimCore(spec(60*time.Second, 0))
		c.accepted()
		assert.Equal(t, shimEffects{Detach: true}, c.dropped(10*sec))
		assert.True(t, c.window)
		assert.Equal(t, 70*sec, c.windowAt)
		assert.Equal(t, shimEffects{Attach: true, Send: "hello"}, c.accepted())
		assert.False(t, c.window, "the window ends with the new connection")
	})
	t.Run("no node within the window: stopped with the grace period, and none let in after", func(t *testing.T) {
		c := newShimCore(spec(60*time.Second, 0))
		c.accepted()
		c.dropped(10 * sec)
		assert.Equal(t, shimEffects{Term: true, CloseListener: true}, c.windowDue(70*sec))
		assert.True(t, c.killing)
		assert.Equal(t, 72*sec, c.killAt)
		assert.Equal(t, shimEffects{Reject: true}, c.accepted())
		assert.Equal(t, shimEffects{KillTree: true}, c.killDue())
		assert.Equal(t, shimEffects{Finish: true, Exit: true}, c.mainExited())
	})
	t.Run("an exit while detached is kept for the next node", func(t *testing.T) {
		c := newShimCore(spec(60*time.Second, 0))
		c.accepted()
		c.dropped(10 * sec)
		assert.Equal(t, shimEffects{Finish: true}, c.mainExited())
		assert.Equal(t, shimEffects{Attach: true, Send: "hello"}, c.accepted())
		assert.Equal(t, shimEffects{Exit: true}, c.sent(true, 20*sec), "told: done")
	})
	t.Run("an exit nobody comes to hear ends the shim at the window's end", func(t *testing.T) {
		c := newShimCore(spec(60*time.Second, 0))
		c.accepted()
		c.dropped(10 * sec)
		c.mainExited()
		assert.Equal(t, shimEffects{Exit: true}, c.windowDue(70*sec))
	})
	t.Run("an exit is reported to the node attached", func(t *testing.T) {
		c := newShimCore(spec(60*time.Second, 0))
		c.accepted()
		assert.Equal(t, shimEffects{Finish: true, Send: "exited"}, c.mainExited())
		assert.Equal(t, shimEffects{Exit: true}, c.sent(true, 1))
	})
	t.Run("an exit whose report fails waits for the next node", func(t *testing.T) {
		c := newShimCore(spec(60*time.Second, 0))
		c.accepted()
		c.mainExited()
		assert.Equal(t, shimEffects{Detach: true}, c.sent(false, 5*sec))
		assert.Equal(t, 65*sec, c.windowAt)
		c = newShimCore(spec(0, 0))
		c.accepted()
		c.mainExited()
		assert.Equal(t, shimEffects{Detach: true, Exit: true}, c.sent(false, 5*sec), "no window: given up")
	})
	t.Run("TERM keeps the earliest SIGKILL deadline", func(t *testing.T) {
		c := newShimCore(spec(0, 0))
		c.accepted()
		assert.Equal(t, shimEffects{Term: true}, c.line("TERM "+strconv.FormatInt(30*sec, 10), 10*sec))
		assert.Equal(t, 40*sec, c.killAt)
		c.line("TERM "+strconv.FormatInt(60*sec, 10), 11*sec)
		assert.Equal(t, 40*sec, c.killAt, "a later deadline does not stretch the kill")
		c.line("TERM "+strconv.FormatInt(5*sec, 10), 12*sec)
		assert.Equal(t, 17*sec, c.killAt, "an earlier one brings it forward")
		c.line("TERM", 13*sec)
		assert.Equal(t, 17*sec, c.killAt, "a TERM without a grace only signals")
		assert.Equal(t, shimEffects{KillTree: true}, c.line(shimKill, 14*sec))
		assert.Equal(t, shimEffects{}, c.line("BOGUS 1", 14*sec))
	})
	t.Run("nothing starts under a lease run out", func(t *testing.T) {
		assert.True(t, newShimCore(spec(0, 0)).mayStart(500*sec), "no lease")
		assert.True(t, newShimCore(spec(0, 100*sec)).mayStart(100*sec-1))
		assert.False(t, newShimCore(spec(0, 100*sec)).mayStart(100*sec))
	})
	t.Run("the lease is only extended", func(t *testing.T) {
		c := newShimCore(spec(0, 100*sec))
		assert.True(t, c.leaseArmed, "armed from the spec")
		for _, l := range []string{leaseLine(90*sec, time.Second), leaseLine(100*sec, time.Second), "LEASE x 1", "LEASE 200", "LEASE -5 1",
			leaseLine(200*sec, -time.Second)} {
			c.line(l, 10*sec)
			assert.Equal(t, 100*sec, c.lease, "%q", l)
		}
		c.line(leaseLine(150*sec, 3*time.Second), 10*sec)
		assert.Equal(t, 150*sec, c.lease)
		assert.Equal(t, 3*time.Second, c.leaseGrace)
	})
	t.Run("a lease timer that fires early waits for the rest", func(t *testing.T) {
		c := newShimCore(spec(0, 100*sec))
		c.line(leaseLine(150*sec, time.Second), 10*sec)
		assert.Equal(t, shimEffects{}, c.leaseDue(100*sec))
		assert.True(t, c.leaseArmed)
		assert.False(t, c.fenced)
	})
	t.Run("a lease run out stops the container for good", func(t *testing.T) {
		c := newShimCore(spec(0, 100*sec))
		assert.Equal(t, shimEffects{Term: true}, c.leaseDue(101*sec))
		assert.True(t, c.fenced)
		assert.Equal(t, 102*sec, c.killAt, "the grace runs from the deadline, not from the late wake-up")
		c.line(leaseLine(500*sec, time.Second), 101*sec)
		assert.Equal(t, 100*sec, c.lease, "no renewal after it ran out")
		assert.Equal(t, shimEffects{}, c.leaseDue(600*sec), "fenced once")
	})
	t.Run("a kill under way keeps the earlier of its deadline and the lease's", func(t *testing.T) {
		c := newShimCore(spec(0, 100*sec))
		c.accepted()
		c.line("TERM "+strconv.FormatInt(time.Hour.Nanoseconds(), 10), 99*sec)
		assert.Equal(t, shimEffects{}, c.leaseDue(100*sec), "the TERM was sent already")
		assert.Equal(t, 102*sec, c.killAt, "the lease's deadline and grace, not the TERM's hour")
		c = newShimCore(spec(0, 100*sec))
		c.accepted()
		c.line("TERM "+strconv.FormatInt(sec/2, 10), 100*sec-sec/2)
		c.leaseDue(100 * sec)
		assert.Equal(t, 100*sec, c.killAt, "the TERM's earlier deadline stays")
	})
	t.Run("a signal to the shim kills the tree; one keeping an exit is told to go", func(t *testing.T) {
		c := newShimCore(spec(60*time.Second, 0))
		assert.Equal(t, shimEffects{KillTree: true}, c.signal())
		assert.Equal(t, shimEffects{Finish: true, Exit: true}, c.mainExited())
		c = newShimCore(spec(60*time.Second, 0))
		c.stdinEOF(1)
		c.mainExited()
		assert.Equal(t, shimEffects{KillTree: true, Exit: true}, c.signal())
	})
}

// TestShimCoreSimulation drives the core with random events in time order, delivering each timer
// at its deadline as the shell does (the lease's up to its grace late, as a starved shim may wake),
// and checks the invariants after every step, with two
// end-to-end safety properties: the container never runs past its lease's deadline plus grace,
// and never outlives node's connection by more than the re-attach window plus grace.
func TestShimCoreSimulation(t *testing.T) {
	for seed := range uint64(2000) {
		simulateShim(t, seed)
		if t.Failed() {
			return
		}
	}
}

func simulateShim(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	reattach := time.Duration(rng.IntN(3)) * 10 * time.Second // 0, 10 or 20 s
	grace := time.Duration(rng.IntN(4)) * time.Second
	var lease int64
	if rng.IntN(3) > 0 {
		lease = int64(rng.IntN(60)+1) * sec
	}
	c := newShimCore(shimSpec{ReattachTimeout: reattach, Grace: grace, LeaseDeadline: lease})
	now := int64(0)

	// The world around the core.
	var (
		conn        bool // node's connection is open
		stdinClosed bool
		killed      bool  // the tree was SIGKILLed
		exited      bool  // the shim exited
		lost        bool  // node's connection is lost (or the first node died before connecting) ...
		lostSince   int64 // ... since then, and no node attached again
		lastKillAt  int64
		wasKilling  bool
		lastLease   = c.lease
		wasFenced   bool
		mainExitsAt = int64(rng.IntN(120)+1) * sec / 2 // when the container would exit by itself
		trace       []string
	)
	fail := func(format string, a ...any) {
		t.Errorf("seed %d, at %v: %s\ntrace:\n%s", seed, time.Duration(now), fmt.Sprintf(format, a...), "  "+strings.Join(trace, "\n  "))
	}
	apply := func(what string, e shimEffects) {
		trace = append(trace, fmt.Sprintf("%v %s → %+v", time.Duration(now), what, e))
		if e.Reject && !c.expired {
			fail("rejected a node before the window expired")
		}
		if e.Attach {
			conn, lost = true, false
		}
		if e.Detach {
			conn = false
		}
		if e.KillTree {
			killed = true
		}
		for e.Send != "" {
			ok := rng.IntN(5) > 0
			if !conn {
				fail("send %q with no connection", e.Send)
				return
			}
			ok = ok && conn
			e2 := c.sent(ok, now)
			trace = append(trace, fmt.Sprintf("%v sent(%t) → %+v", time.Duration(now), ok, e2))
			if e2.Detach {
				conn, lost, lostSince = false, true, now
			}
			if e2.KillTree {
				killed = true
			}
			e.Exit = e.Exit || e2.Exit
			e.Send = e2.Send
		}
		if e.Exit {
			if !c.mainDone {
				fail("exited while the container's main process runs")
			}
			exited = true
		}
	}
	check := func() {
		if c.killing && wasKilling && c.killAt > lastKillAt {
			fail("the pending SIGKILL moved later: %v → %v", time.Duration(lastKillAt), time.Duration(c.killAt))
		}
		wasKilling, lastKillAt = c.killing, c.killAt
		if c.lease < lastLease {
			fail("the lease went back")
		}
		if wasFenced && (!c.fenced || c.lease != lastLease) {
			fail("fenced, then unfenced or extended")
		}
		lastLease, wasFenced = c.lease, c.fenced
		if c.fenced && !c.mainDone && !killed && !(c.killing && c.killAt <= c.lease+int64(c.leaseGrace)) {
			fail("fenced with no SIGKILL due by the lease's deadline plus grace")
		}
		alive := !c.mainDone && !killed
		if alive && c.lease != 0 && now > c.lease+int64(c.leaseGrace) {
			fail("runs past its lease's deadline plus grace")
		}
		if alive && lost && now > lostSince+int64(reattach)+int64(grace) {
			fail("outlived node's connection by more than the window and the grace")
		}
	}

	for step := 0; step < 200 && !exited; step++ {
		// The next timer due, as the shell arms them, and the one after it.
		next, which, after := int64(-1), "", int64(-1)
		consider := func(on bool, at int64, name string) {
			switch {
			case !on:
			case next < 0 || at < next:
				next, which, after = at, name, next
			case after < 0 || at < after:
				after = at
			}
		}
		consider(c.window, c.windowAt, "window")
		consider(c.killing, c.killAt, "kill")
		consider(c.leaseArmed, c.lease, "lease")
		if !c.mainDone && !killed {
			consider(true, mainExitsAt, "main")
		}
		// An outside event comes first, or the timer fires.
		ext := now + int64(rng.IntN(4000))*int64(time.Millisecond)
		if next >= 0 && next <= ext {
			now = max(now, next)
			if which == "lease" && c.leaseGrace > 0 { // a starved shim wakes late, within the grace
				late := rng.Int64N(int64(c.leaseGrace))
				if after >= 0 {
					late = min(late, after-now) // not past another deadline
				}
				now += late
			}
			switch which {
			case "window":
				apply("windowDue", c.windowDue(now))
			case "kill":
				apply("killDue", c.killDue())
			case "lease":
				if conn && rng.IntN(2) == 0 { // a renewal already waiting is applied first, as the shell does
					apply("lease (waiting)", c.line(leaseLine(now+int64(rng.IntN(20))*sec, time.Duration(rng.IntN(3))*time.Second), now))
				}
				apply("leaseDue", c.leaseDue(now))
			case "main":
				apply("mainExited", c.mainExited())
			}
		} else {
			now = ext
			switch r := rng.IntN(10); {
			case r < 2:
				apply("accepted", c.accepted())
			case r < 4 && conn:
				conn, lost, lostSince = false, true, now
				apply("dropped", c.dropped(now))
			case r < 6 && conn: // node may renew after the shim fenced: it cannot know
				apply("lease", c.line(leaseLine(now+int64(rng.IntN(20))*sec, time.Duration(rng.IntN(3))*time.Second), now))
			case r < 7 && conn:
				apply("term", c.line(fmt.Sprintf("%s %d", shimTerm, int64(rng.IntN(30))*sec), now))
			case r < 8 && conn:
				apply("kill", c.line(shimKill, now))
			case r < 9 && !stdinClosed: // the first node closes its end of the shim's stdin, once
				stdinClosed = true
				if !c.everConnected {
					lost, lostSince = true, now
				}
				apply("stdinEOF", c.stdinEOF(now))
			case r == 9 && rng.IntN(10) == 0:
				apply("signal", c.signal())
			}
		}
		if killed && !c.mainDone {
			apply("mainExited", c.mainExited()) // SIGKILL ends the main process
		}
		check()
		if t.Failed() {
			return
		}
	}
}
