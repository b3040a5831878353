package main

import (
	"fmt"
	"sort"
	"time"
)

// Kind is the probe handler a slot's pods use for all their probes.
type Kind int

// The four probe kinds, one slot in four each.
const (
	HTTP Kind = iota
	TCP
	GRPC
	Exec
)

func (k Kind) String() string {
	switch k {
	case HTTP:
		return "http"
	case TCP:
		return "tcp"
	case GRPC:
		return "grpc"
	case Exec:
		return "exec"
	default:
		return fmt.Sprintf("kind(%d)", int(k))
	}
}

// Schedule timing. Every value is a pure function of the slot index, so two runs with the same
// pod count and duration do the same things at the same times.
const (
	liveWindow   = 6 * time.Second // a liveness target fails this long (three liveness periods: a kill)
	liveQuietEnd = 20 * time.Second
	firstRemoval = 20 * time.Second // no generation ends before this (node has started them all)
)

// Slot is one of the N places a pod occupies: its pods follow each other (generation after
// generation, each in its own manifest file) and share its targets, whose answers flap on the
// slot's schedule.
type Slot struct {
	Index int
	Kind  Kind

	ReadyPeriod time.Duration // the readiness target is down for the first UnreadyFor of
	UnreadyFor  time.Duration // every ReadyPeriod, shifted by ReadyOffset
	ReadyOffset time.Duration
	LiveFails   []time.Duration // the liveness target is down for liveWindow from each of these

	Lifetime    time.Duration // of each generation but the first
	Generations []Generation
	Startup     bool // its pods have a startup probe (against the liveness target)
}

// Generation is one pod of a slot: its own manifest file, added at Add and removed at Remove
// (Remove ≥ the run's duration: still there at the end), rewritten with a new annotation at each
// of Edits (each edit replaces the pod: a changed static pod is a new pod).
type Generation struct {
	N           int
	Add, Remove time.Duration
	Edits       []time.Duration
}

// Name is the generation's pod name; File its manifest file's name.
func (s *Slot) Name(g int) string { return fmt.Sprintf("soak-%03d-g%03d", s.Index, g) }

// File is the manifest file of generation g.
func (s *Slot) File(g int) string { return s.Name(g) + ".yaml" }

// Schedule is everything a soak run does, decided before it starts.
type Schedule struct {
	Duration time.Duration
	Slots    []Slot
}

// NewSchedule plans a run of pods slots for duration d: readiness flapping every 30–60 s (down a
// third of the time), a liveness failure every 3–4 minutes per slot (never in the last 20 s),
// generations living 90–240 s (the first one ends between 20 s and one lifetime in, so removals
// are spread over the run), and one in three slots editing each generation half-way through its
// life.
func NewSchedule(pods int, d time.Duration) *Schedule {
	s := &Schedule{Duration: d, Slots: make([]Slot, pods)}
	for i := range s.Slots {
		sl := &s.Slots[i]
		sl.Index = i
		sl.Kind = Kind(i % 4)
		sl.Startup = i%2 == 1
		sl.ReadyPeriod = 30*time.Second + time.Duration(i%4)*10*time.Second
		sl.UnreadyFor = sl.ReadyPeriod / 3
		sl.ReadyOffset = time.Duration(i*7) * time.Second % sl.ReadyPeriod
		every := 180*time.Second + time.Duration(i%5)*15*time.Second
		for at := 45*time.Second + time.Duration(i*13)*time.Second%every; at+liveWindow <= d-liveQuietEnd; at += every {
			sl.LiveFails = append(sl.LiveFails, at)
		}
		sl.Lifetime = 90*time.Second + time.Duration(i*37%151)*time.Second
		add := time.Duration(0)
		remove := firstRemoval + time.Duration(int64(sl.Lifetime)*int64(i*7919%1000)/1000)
		for g := 0; ; g++ {
			gen := Generation{N: g, Add: add, Remove: remove}
			if i%3 == 0 {
				if at := add + (remove-add)/2; at < d && remove-add >= 10*time.Second {
					gen.Edits = []time.Duration{at}
				}
			}
			sl.Generations = append(sl.Generations, gen)
			if remove >= d {
				break
			}
			add, remove = remove, remove+sl.Lifetime
		}
	}
	return s
}

// at clamps t to the run: after the end every target keeps its final answer.
func (s *Schedule) at(t time.Duration) time.Duration { return min(t, s.Duration) }

// Ready is the slot's readiness target at t since the start.
func (s *Schedule) Ready(slot int, t time.Duration) bool {
	sl := &s.Slots[slot]
	t = s.at(t)
	return (t+sl.ReadyOffset)%sl.ReadyPeriod >= sl.UnreadyFor
}

// Live is the slot's liveness target at t since the start.
func (s *Schedule) Live(slot int, t time.Duration) bool {
	t = s.at(t)
	for _, f := range s.Slots[slot].LiveFails {
		if t >= f && t < f+liveWindow {
			return false
		}
	}
	return true
}

// Op is one change to the manifest directory.
type Op struct {
	At     time.Duration
	Slot   int
	Gen    int
	Remove bool // remove the generation's file; else write it (with Edit edits applied)
	Edit   int
}

// Ops are the manifest changes after the start (the files written before node starts are the
// first generations, Edit 0), in time order, all before the end of the run.
func (s *Schedule) Ops() []Op {
	var ops []Op
	for i := range s.Slots {
		for _, g := range s.Slots[i].Generations {
			if g.Add > 0 {
				ops = append(ops, Op{At: g.Add, Slot: i, Gen: g.N})
			}
			for k, e := range g.Edits {
				ops = append(ops, Op{At: e, Slot: i, Gen: g.N, Edit: k + 1})
			}
			if g.Remove < s.Duration {
				ops = append(ops, Op{At: g.Remove, Slot: i, Gen: g.N, Remove: true})
			}
		}
	}
	sort.SliceStable(ops, func(a, b int) bool {
		if ops[a].At != ops[b].At {
			return ops[a].At < ops[b].At
		}
		return ops[a].Remove && !ops[b].Remove // a slot's old generation goes before its new one comes
	})
	return ops
}

// Expected is what a pod must report once the run is over and node had time to settle.
type Expected struct {
	Slot  int
	Name  string
	Ready bool // the container's and the pod's readiness
	Edits int  // the pod must be the version with this many edits
}

// Final is every pod that must exist after the run, by name: each slot's last generation, ready
// as its readiness target ends, in its last edited version.
func (s *Schedule) Final() map[string]Expected {
	out := make(map[string]Expected, len(s.Slots))
	for i := range s.Slots {
		sl := &s.Slots[i]
		g := sl.Generations[len(sl.Generations)-1]
		out[sl.Name(g.N)] = Expected{Slot: i, Name: sl.Name(g.N), Ready: s.Ready(i, s.Duration), Edits: len(g.Edits)}
	}
	return out
}

// Counts summarises the schedule: pods added and removed after the start, edits, liveness
// failures.
func (s *Schedule) Counts() (added, removed, edits, liveFails int) {
	for _, op := range s.Ops() {
		switch {
		case op.Remove:
			removed++
		case op.Edit > 0:
			edits++
		default:
			added++
		}
	}
	for i := range s.Slots {
		liveFails += len(s.Slots[i].LiveFails)
	}
	return added, removed, edits, liveFails
}
