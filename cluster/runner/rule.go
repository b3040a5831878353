package runner

import (
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cluster/sharder"
)

// phase is where one pod (one UID) is on this member.
type phase uint8

const (
	// idle: not here (never started, or its stop finished). The book keeps no entry for it.
	idle phase = iota
	// running: StartPod returned; the instance runs.
	running
	// stopping: StopPod is in progress on a goroutine.
	stopping
	// restarting: StopPod is in progress and the pod starts again once it finished (its share
	// came back while it stopped).
	restarting
)

func (p phase) String() string {
	switch p {
	case idle:
		return "idle"
	case running:
		return "running"
	case stopping:
		return "stopping"
	case restarting:
		return "restarting"
	default:
		return "unknown"
	}
}

// event is what happens to one pod.
type event uint8

const (
	// start: the sharder starts the pod (PodRunner.Start).
	start event = iota + 1
	// stop: the sharder stops it (PodRunner.Stop).
	stop
	// stopDone: StopPod returned.
	stopDone
	// startFailed: the StartPod that the last transition asked for returned an error.
	startFailed
	// closing: Runner.Stop began; nothing starts any more.
	closing
)

func (e event) String() string {
	switch e {
	case start:
		return "start"
	case stop:
		return "stop"
	case stopDone:
		return "stopDone"
	case startFailed:
		return "startFailed"
	case closing:
		return "closing"
	default:
		return "unknown"
	}
}

// action is what a transition asks for.
type action uint8

const (
	// none: nothing to do.
	none action = iota
	// startNow: StartPod(the event's pod), before the sharder's Start returns.
	startNow
	// stopNow: StopPod(the running instance) on a goroutine: the sharder's Stop returns at once.
	stopNow
	// startAfterStop: keep the event's pod (the newest one given), to start once the stop in
	// progress finished.
	startAfterStop
	// cancelRestart: forget the pod kept for after the stop.
	cancelRestart
	// startKept: the stop finished: StartPod(the kept pod).
	startKept
	// refuse: the runner is closed; the sharder's Start gets errRunnerClosed.
	refuse
)

func (a action) String() string {
	switch a {
	case none:
		return "none"
	case startNow:
		return "startNow"
	case stopNow:
		return "stopNow"
	case startAfterStop:
		return "startAfterStop"
	case cancelRestart:
		return "cancelRestart"
	case startKept:
		return "startKept"
	case refuse:
		return "refuse"
	default:
		return "unknown"
	}
}

// transition is the stop-then-start rule for one pod: from phase p, with the runner closed or
// not, event e leads to the returned phase and asks for the returned action. It is total: an
// event that cannot happen in a phase (a stopDone while running) changes nothing.
//
//	phase \ event  start                      stop                    stopDone              startFailed  closing
//	idle           running, startNow          -                       -                     -            -
//	running        -                          stopping, stopNow       -                     idle         stopping, stopNow
//	stopping       restarting, startAfterStop -                       idle                  -            -
//	restarting     restarting, startAfterStop stopping, cancelRestart running, startKept    -            stopping, cancelRestart
//	closed         refuse (whatever the phase); restarting cannot be reached, so stopDone ends in idle
//
// Two instances of a UID never run here at once: a start while the pod stops waits for stopDone.
// Nothing starts once closed: closing drops the kept pod and stops a pod still running (one the
// sharder did not release), and start is refused.
func transition(p phase, closed bool, e event) (phase, action) {
	switch e {
	case start:
		switch {
		case closed:
			return p, refuse
		case p == idle:
			return running, startNow
		case p == stopping, p == restarting:
			return restarting, startAfterStop
		default: // running: already here
			return p, none
		}
	case stop, closing:
		switch p {
		case running:
			return stopping, stopNow
		case restarting:
			return stopping, cancelRestart
		default: // idle: nothing here; stopping: already under way
			return p, none
		}
	case stopDone:
		switch {
		case p == stopping:
			return idle, none
		case p == restarting && !closed:
			return running, startKept
		case p == restarting: // closing turns restarting into stopping first: defensive only
			return idle, cancelRestart
		default: // no stop was in progress
			return p, none
		}
	case startFailed:
		if p == running {
			return idle, none
		}
		return p, none
	default:
		return p, none
	}
}

// book applies transition to every pod of this member and keeps the instances it acts on. It is
// pure (no lock, no goroutine, no I/O): the runner holds it under its mutex and carries out the
// effects it returns.
type book struct {
	pods   map[types.UID]*entry
	closed bool
}

type entry struct {
	phase phase
	pod   *v1.Pod // the instance running or stopping
	kept  *v1.Pod // restarting: the pod to start once the stop finished
}

// effect is one action for the shell to carry out: startNow and startKept call StartPod(pod),
// stopNow calls StopPod(pod) on a goroutine, refuse answers errRunnerClosed.
type effect struct {
	act action
	uid types.UID
	pod *v1.Pod
}

func newBook() *book { return &book{pods: map[types.UID]*entry{}} }

// apply takes one event for uid (pod: the pod of a start) and returns what to carry out.
func (b *book) apply(uid types.UID, e event, pod *v1.Pod) effect {
	en := b.pods[uid]
	from := idle
	if en != nil {
		from = en.phase
	}
	to, act := transition(from, b.closed, e)
	eff := effect{act: act, uid: uid}
	switch act {
	case startNow:
		en = &entry{pod: pod}
		eff.pod = pod
	case stopNow:
		eff.pod = en.pod
	case startAfterStop:
		en.kept = pod
	case cancelRestart:
		en.kept = nil
	case startKept:
		en.pod, en.kept = en.kept, nil
		eff.pod = en.pod
	default: // none, refuse
	}
	if to == idle {
		delete(b.pods, uid)
	} else {
		en.phase = to
		b.pods[uid] = en
	}
	return eff
}

// close refuses every later start and returns the stops it asks for (pods still running), in UID
// order.
func (b *book) close() []effect {
	b.closed = true
	var stops []effect
	for _, uid := range slices.Sorted(maps.Keys(b.pods)) {
		if eff := b.apply(uid, closing, nil); eff.act == stopNow {
			stops = append(stops, eff)
		}
	}
	return stops
}

// stopsInProgress counts the pods whose StopPod has not returned.
func (b *book) stopsInProgress() int {
	n := 0
	for _, en := range b.pods {
		if en.phase == stopping || en.phase == restarting {
			n++
		}
	}
	return n
}

// stopping lists the pods whose StopPod has not returned, in UID order.
func (b *book) stopping() []string {
	var out []string
	for uid, en := range b.pods {
		if en.phase == stopping || en.phase == restarting {
			out = append(out, string(uid))
		}
	}
	slices.Sort(out)
	return out
}

// longestGrace is the longest termination grace period among the pods here (running, stopping
// or kept to start), 0 when there are none.
func (b *book) longestGrace() time.Duration {
	var longest time.Duration
	for _, en := range b.pods {
		longest = max(longest, gracePeriod(en.pod), gracePeriod(en.kept))
	}
	return longest
}

// gracePeriod is the pod's spec.terminationGracePeriodSeconds, or sharder.DefaultGracePeriod (0
// for no pod).
func gracePeriod(p *v1.Pod) time.Duration {
	switch {
	case p == nil:
		return 0
	case p.Spec.TerminationGracePeriodSeconds == nil:
		return sharder.DefaultGracePeriod
	default:
		return time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
	}
}
