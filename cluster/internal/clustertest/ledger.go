// Package clustertest records what the members of a test cluster run and checks it: a Ledger of
// pod starts and stops (from in-process fake PodRunners, or parsed from test members' output),
// exactly-once placement, and the timings the cluster is measured by (detection, failover,
// rebalance, duplicate running).
package clustertest

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cluster/ownership"
)

// Kind is what an Event records.
type Kind string

const (
	// Start: Member started UID. Stop: Member stopped UID.
	Start Kind = "start"
	Stop  Kind = "stop"
	// View: Member's membership published Members.
	View Kind = "view"
	// Gone: Member's process died (SIGKILL): everything it ran stops with it.
	Gone Kind = "gone"
)

// Event is one thing that happened on a member.
type Event struct {
	At      time.Time
	Member  string
	Kind    Kind
	UID     types.UID
	Members []string
}

// Ledger collects events from every member; it is safe for concurrent use.
type Ledger struct {
	mu     sync.Mutex
	events []Event
}

// Add records e.
func (l *Ledger) Add(e Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

// Events returns the events in time order.
func (l *Ledger) Events() []Event {
	l.mu.Lock()
	out := slices.Clone(l.events)
	l.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// Runner returns a PodRunner (sharder.PodRunner) for member that records into the ledger.
func (l *Ledger) Runner(member string) *Runner { return &Runner{l: l, member: member} }

// Runner is a fake PodRunner: it records, and runs nothing.
type Runner struct {
	l      *Ledger
	member string
}

func (r *Runner) Start(p *v1.Pod) error {
	r.l.Add(Event{At: time.Now(), Member: r.member, Kind: Start, UID: p.UID})
	return nil
}

func (r *Runner) Stop(uid types.UID, _ time.Duration) error {
	r.l.Add(Event{At: time.Now(), Member: r.member, Kind: Stop, UID: uid})
	return nil
}

// Placement replays events up to and including at: for each pod, the members running it.
func Placement(events []Event, at time.Time) map[types.UID][]string {
	on := map[types.UID]map[string]bool{}
	for _, e := range events {
		if e.At.After(at) {
			break
		}
		switch e.Kind {
		case Start:
			if on[e.UID] == nil {
				on[e.UID] = map[string]bool{}
			}
			on[e.UID][e.Member] = true
		case Stop:
			delete(on[e.UID], e.Member)
		case Gone:
			for _, m := range on {
				delete(m, e.Member)
			}
		default:
		}
	}
	out := map[types.UID][]string{}
	for uid, ms := range on {
		for m := range ms {
			out[uid] = append(out[uid], m)
		}
		slices.Sort(out[uid])
	}
	return out
}

// ExactlyOnce says (nil) whether, at the end of events, every pod runs exactly once and on its
// owner among members, and nothing else runs.
func ExactlyOnce(events []Event, pods []types.UID, members []string) error {
	at := time.Unix(1<<40, 0)
	place := Placement(events, at)
	var problems []string
	for _, uid := range pods {
		on := place[uid]
		switch {
		case len(on) == 0:
			problems = append(problems, fmt.Sprintf("%s runs nowhere", uid))
		case len(on) > 1:
			problems = append(problems, fmt.Sprintf("%s runs on %v", uid, on))
		case on[0] != ownership.Owner(string(uid), members):
			problems = append(problems, fmt.Sprintf("%s runs on %s, not its owner %s", uid, on[0], ownership.Owner(string(uid), members)))
		default:
		}
		delete(place, uid)
	}
	for uid, on := range place {
		if len(on) > 0 {
			problems = append(problems, fmt.Sprintf("%s is not in the pod set but runs on %v", uid, on))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return fmt.Errorf("%d problems: %s", len(problems), strings.Join(problems, "; "))
	}
	return nil
}

// Duplicates measures, over the events after since, how long each pod ran on more than one member
// at once: the longest such stretch of any pod and the number of pods that had one.
func Duplicates(events []Event, since time.Time) (longest time.Duration, pods int) {
	on := map[types.UID]map[string]bool{}
	dupSince := map[types.UID]time.Time{}
	hadDup := map[types.UID]bool{}
	update := func(uid types.UID, at time.Time) {
		n := len(on[uid])
		start, dup := dupSince[uid]
		switch {
		case n > 1 && !dup:
			dupSince[uid] = at
		case n <= 1 && dup:
			delete(dupSince, uid)
			if at.After(since) {
				longest = max(longest, at.Sub(maxTime(start, since)))
				hadDup[uid] = true
			}
		default:
		}
	}
	for _, e := range events {
		switch e.Kind {
		case Start:
			if on[e.UID] == nil {
				on[e.UID] = map[string]bool{}
			}
			on[e.UID][e.Member] = true
			update(e.UID, e.At)
		case Stop:
			delete(on[e.UID], e.Member)
			update(e.UID, e.At)
		case Gone:
			for uid, m := range on {
				if m[e.Member] {
					delete(m, e.Member)
					update(uid, e.At)
				}
			}
		default:
		}
	}
	now := time.Now()
	for uid, start := range dupSince { // still running twice
		longest = max(longest, now.Sub(maxTime(start, since)))
		hadDup[uid] = true
	}
	return longest, len(hadDup)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// LastChange is the time of the last start or stop after since (zero when none).
func LastChange(events []Event, since time.Time) time.Time {
	var last time.Time
	for _, e := range events {
		if (e.Kind == Start || e.Kind == Stop) && e.At.After(since) {
			last = e.At
		}
	}
	return last
}

// FirstView is the time member first published a view equal to members after since (zero when
// none).
func FirstView(events []Event, member string, members []string, since time.Time) time.Time {
	for _, e := range events {
		if e.Kind == View && e.Member == member && e.At.After(since) && slices.Equal(e.Members, members) {
			return e.At
		}
	}
	return time.Time{}
}

// Line formats an event the way a test member prints it on stdout; ParseLines reads them back.
func Line(e Event) string {
	switch e.Kind {
	case View:
		return fmt.Sprintf("event %d %s %s", e.At.UnixNano(), e.Kind, strings.Join(e.Members, ","))
	default:
		uid := string(e.UID)
		if uid == "" {
			uid = "-"
		}
		return fmt.Sprintf("event %d %s %s", e.At.UnixNano(), e.Kind, uid)
	}
}

// ParseLines reads the event lines of member's output (other lines are skipped).
func ParseLines(member, out string) []Event {
	var events []Event
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "event" {
			continue
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		e := Event{At: time.Unix(0, ns), Member: member, Kind: Kind(f[2])}
		if e.Kind == View {
			e.Members = strings.Split(f[3], ",")
		} else if f[3] != "-" {
			e.UID = types.UID(f[3])
		}
		events = append(events, e)
	}
	return events
}
