package restartbudget

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
)

// Budget is at most N kills per Window.
type Budget struct {
	N      int
	Window time.Duration
}

// String is the budget as Parse reads it: "3/10m0s".
func (b Budget) String() string { return fmt.Sprintf("%d/%s", b.N, b.Window) }

// Validate reports a budget that cannot be applied.
func (b Budget) Validate() error {
	if b.N < 1 {
		return fmt.Errorf("%d kills: must be at least 1", b.N)
	}
	if b.Window <= 0 {
		return fmt.Errorf("window %s: must be a positive duration", b.Window)
	}
	return nil
}

// Parse reads "N/DURATION": at most N kills per DURATION, e.g. "3/10m" or "1/30s".
func Parse(s string) (Budget, error) {
	n, d, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Budget{}, errors.New("want N/DURATION, e.g. 3/10m (at most 3 kills per 10 minutes)")
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil {
		return Budget{}, fmt.Errorf("N %q: want a whole number of kills, e.g. 3/10m", n)
	}
	window, err := time.ParseDuration(strings.TrimSpace(d))
	if err != nil {
		return Budget{}, fmt.Errorf("DURATION %q: want a Go duration with a unit, e.g. 3/10m or 5/1h", d)
	}
	b := Budget{N: count, Window: window}
	if err := b.Validate(); err != nil {
		return Budget{}, err
	}
	return b, nil
}

// Key names the container a kill is for.
type Key struct {
	Pod       types.UID
	Container string
}

// Waiting is a kill that waits for the budget: the Failure that asked for it, since when, and
// whether Due has announced it as deferred.
type Waiting struct {
	Change    messages.ResultChanged
	Since     time.Time
	Announced bool
	claim     string // Claim, made once by Ask
}

// Gate applies a Budget: it takes kills while the window has room and queues the others. The
// zero value is not usable; use New. Not safe for concurrent use.
type Gate struct {
	b       Budget
	taken   []time.Time // kill times still inside the window, oldest first
	waiting []Waiting   // FIFO
}

// New returns a Gate for a valid budget.
func New(b Budget) *Gate { return &Gate{b: b} }

// Budget returns the gate's budget.
func (g *Gate) Budget() Budget { return g.b }

// Ask queues the kill a Failure asks for at now; Due decides whether it is taken at once.
// A container with a kill waiting for the same container ID adds nothing.
func (g *Gate) Ask(c messages.ResultChanged, now time.Time) {
	k := Key{Pod: c.PodUID, Container: c.Container}
	for _, e := range g.waiting {
		if (Key{Pod: e.Change.PodUID, Container: e.Change.Container}) == k && e.Change.ContainerID == c.ContainerID {
			return
		}
	}
	g.waiting = append(g.waiting, Waiting{Change: c, Since: now,
		claim: fmt.Sprintf("%s/%s/%s", c.PodUID, c.Container, c.ContainerID)})
}

// Claim names a waiting kill in a budget shared with other processes (DueShared): pod UID,
// container name and container ID, so that a new container of the same name is a new claim.
func (w Waiting) Claim() string { return w.claim }

// Claims lists the waiting kills' claims, oldest first: what a shared budget is asked for.
func (g *Gate) Claims() []string {
	out := make([]string, len(g.waiting))
	for i, w := range g.waiting {
		out[i] = w.Claim()
	}
	return out
}

// DueShared is Due for a budget shared with other processes, whose room is decided elsewhere
// (cluster/membership's ledger): a waiting kill is taken when taken reports its claim taken
// there, whatever its place in the queue (the shared order decides), and never otherwise. This
// gate's own window is not used; Next is always zero (the caller learns of room from the shared
// budget).
func (g *Gate) DueShared(taken func(claim string) bool) Decision {
	var d Decision
	kept := g.waiting[:0]
	for _, w := range g.waiting {
		if taken(w.Claim()) {
			d.Kill = append(d.Kill, w)
		} else {
			kept = append(kept, w)
		}
	}
	clear(g.waiting[len(kept):])
	g.waiting = kept
	for i := range g.waiting {
		if !g.waiting[i].Announced {
			g.waiting[i].Announced = true
			d.Defer = append(d.Defer, g.waiting[i])
		}
	}
	return d
}

// Decision is what Due hands the caller.
type Decision struct {
	// Kill are the kills taken now, oldest first (Announced: it had waited, and was said to).
	Kill []Waiting
	// Defer are the kills that wait and were not announced before: the caller says so once.
	Defer []Waiting
	// Next is when the window next has room for a waiting kill (zero when none waits).
	Next time.Time
}

// Due takes the waiting kills the window has room for at now, oldest first.
func (g *Gate) Due(now time.Time) Decision {
	g.expire(now)
	var d Decision
	for len(g.waiting) > 0 && len(g.taken) < g.b.N {
		e := g.waiting[0]
		g.waiting = g.waiting[1:]
		g.taken = append(g.taken, now)
		d.Kill = append(d.Kill, e)
	}
	for i := range g.waiting {
		if !g.waiting[i].Announced {
			g.waiting[i].Announced = true
			d.Defer = append(d.Defer, g.waiting[i])
		}
	}
	if len(g.waiting) > 0 {
		d.Next = g.taken[0].Add(g.b.Window)
	}
	return d
}

// expire drops the kills the window ending at now no longer holds.
func (g *Gate) expire(now time.Time) {
	i := 0
	for i < len(g.taken) && !g.taken[i].Add(g.b.Window).After(now) {
		i++
	}
	g.taken = g.taken[i:]
}

// Settle applies a result change to the waiting kills: one whose container was replaced (c names
// another container ID of it) or recovered (c is a non-Failure result of the same probe and
// container ID) ends. It returns the ended kill and whether there was one; recovered says which.
func (g *Gate) Settle(c messages.ResultChanged) (ended Waiting, recovered, ok bool) {
	for i, e := range g.waiting {
		w := e.Change
		if w.PodUID != c.PodUID || w.Container != c.Container {
			continue
		}
		switch {
		case w.ContainerID != c.ContainerID:
		case w.Type == c.Type && c.Result != messages.Failure:
			recovered = true
		default:
			continue
		}
		g.waiting = append(g.waiting[:i], g.waiting[i+1:]...)
		return e, recovered, true
	}
	return Waiting{}, false, false
}

// Forget ends the waiting kills of a pod (removed, or stopping its liveness and startup probes)
// and returns them.
func (g *Gate) Forget(pod types.UID) []Waiting {
	var out []Waiting
	kept := g.waiting[:0]
	for _, e := range g.waiting {
		if e.Change.PodUID == pod {
			out = append(out, e)
		} else {
			kept = append(kept, e)
		}
	}
	clear(g.waiting[len(kept):])
	g.waiting = kept
	return out
}

// Len is the number of waiting kills.
func (g *Gate) Len() int { return len(g.waiting) }

// Next is when the window next has room, at now: now itself when it has room already.
func (g *Gate) Next(now time.Time) time.Time {
	g.expire(now)
	if len(g.taken) < g.b.N {
		return now
	}
	return g.taken[0].Add(g.b.Window)
}
