package probetiming

import (
	"fmt"
	"time"

	"github.com/probeactor/probeactor/messages"
)

// Live is one probe worker's state at Now, as node describe reads it from the tree
// (messages.ProbeState) and the container's status.
type Live struct {
	Type   messages.ProbeType
	Timing Timing
	// NoRestart is true when a kill does not restart the container (restartPolicy Never, not a
	// sidecar).
	NoRestart bool
	Now       time.Time

	Running   bool      // the container runs
	Started   bool      // it has started: liveness and readiness probe only then
	StartedAt time.Time // when the container started (the initial delay counts from there)

	Published    messages.Result // what the worker published for the container
	HasPublished bool
	Streak       int32           // consecutive attempts with the same result (kubelet's resultRun)
	StreakResult messages.Result // their result
	OnHold       bool            // liveness or startup: waiting for a new container
	Deferred     bool            // the kill its failure asked for waits for the restart budget
	Busy         bool            // an attempt is in flight
	NextTick     time.Time       // the worker's next periodic run; zero: not known
}

// Action is what a worker does next if its current streak continues.
type Action struct {
	// Text says it in a few words: "restarts in ≤ 21s if it keeps failing", "no change while it
	// passes", "waits for the startup probe".
	Text string
	// Within is the worst-case time until the action; Pending says whether there is one with a
	// known bound.
	Within  time.Duration
	Pending bool
}

// StreakText is the streak against its threshold: "failing 2/3", "passing 1/3", "failed 5 in a
// row" (past the threshold), "no result yet".
func StreakText(l Live) string {
	if l.Streak <= 0 {
		switch {
		case l.OnHold && l.Published == messages.Success:
			return "passed"
		case l.OnHold:
			return "failed, held until the container restarts"
		default:
			return "no attempt counted yet"
		}
	}
	word, past, limit := "passing", "passed", l.Timing.Success
	if l.StreakResult == messages.Failure {
		word, past, limit = "failing", "failed", l.Timing.Failure
	}
	if l.Streak >= limit && l.HasPublished && l.Published == l.StreakResult {
		return fmt.Sprintf("%s %d in a row", past, l.Streak)
	}
	return fmt.Sprintf("%s %d/%d", word, l.Streak, limit)
}

// NextAction is the worst-case time until the worker's next action if its streak continues: for
// a failing streak, the kill (liveness, startup) or Ready turning false (readiness) once the
// failure threshold is reached; for a passing streak of a probe whose published result is not
// yet Success, Ready turning true (readiness) or the container starting (startup). With no
// attempt counted yet, the action its first results would bring. The bound counts from the next
// attempt: the one in flight (assumed to have just begun), else the next tick at which the
// initial delay has passed.
func NextAction(l Live) Action {
	switch {
	case !l.Running:
		return Action{Text: "container not running"}
	case l.Deferred:
		return Action{Text: "restart deferred: the restart budget has no room for it; restarts when it allows, if the probe still fails"}
	case l.OnHold && l.Type == messages.Startup && l.Published == messages.Success:
		return Action{Text: "started: no more startup probes until the container restarts"}
	case l.OnHold:
		return Action{Text: "kill requested; probing resumes with the new container"}
	case l.Type != messages.Startup && !l.Started:
		return Action{Text: "waits for the startup probe"}
	case l.Type == messages.Startup && l.Started:
		return Action{Text: "started: no more startup probes until the container restarts"}
	}
	failing := l.Streak > 0 && l.StreakResult == messages.Failure
	passing := l.Streak > 0 && !failing
	published := l.Published
	if !l.HasPublished {
		published = messages.Unknown
	}
	var verb, cond string
	var need int32
	switch {
	case l.Type == messages.Readiness && published == messages.Success && !failing:
		if passing {
			return Action{Text: "stays ready while it passes"}
		}
		verb, cond, need = "turns not ready", "if it fails", l.Timing.Failure
	case l.Type == messages.Readiness && failing && published == messages.Failure:
		return Action{Text: "stays not ready while it fails"}
	case l.Type == messages.Readiness && failing:
		verb, cond, need = "turns not ready", "if it keeps failing", l.Timing.Failure-l.Streak
	case l.Type == messages.Readiness:
		verb, cond, need = "turns ready", "if it passes", l.Timing.Success
		if passing {
			cond, need = "if it keeps passing", l.Timing.Success-l.Streak
		}
	case l.Type == messages.Liveness && passing:
		return Action{Text: "no change while it passes"}
	case l.Type == messages.Startup && passing:
		verb, cond, need = "starts", "if it keeps passing", l.Timing.Success-l.Streak
	default: // liveness or startup: failing, or nothing counted yet
		verb, cond, need = l.killVerb(), "if it fails", l.Timing.Failure
		if failing {
			cond, need = "if it keeps failing", l.Timing.Failure-l.Streak
		}
	}
	d := l.within(need)
	return Action{Text: fmt.Sprintf("%s in ≤ %s %s", verb, Bound(d), cond), Within: d, Pending: true}
}

func (l Live) killVerb() string {
	if l.NoRestart {
		return "is killed"
	}
	return "restarts"
}

// within is the worst-case time until n more attempts have ended: the first starts now if one is
// in flight, else at the next tick at which the initial delay has passed (for a readiness worker
// that manual triggers may re-phase, up to a period after the delay); the others follow at most
// one interval apart; the last takes its whole timeout.
func (l Live) within(n int32) time.Duration {
	n = max(n, 1)
	t := l.Timing
	first := l.Now
	if !l.Busy {
		first = l.NextTick
		if first.IsZero() || first.Before(l.Now) {
			first = l.Now.Add(t.Period)
		}
		eligible := l.StartedAt.Add(t.Delay)
		if first.Before(eligible) {
			periods := (eligible.Sub(first) + t.Period - 1) / t.Period
			first = first.Add(periods * t.Period)
		}
		// A not-ready container's readiness worker is triggered on every status change; a trigger
		// before the delay has passed probes nothing but restarts the period, so the first tick
		// after the delay can come up to a whole period after it.
		if l.Type == messages.Readiness && !(l.HasPublished && l.Published == messages.Success) && l.Now.Before(eligible) {
			first = eligible.Add(t.Period)
		}
	}
	return first.Sub(l.Now) + time.Duration(n-1)*t.Interval() + t.Timeout
}

// Bound formats a duration as an upper bound in whole seconds, rounded up: "11s", "5m1s".
func Bound(d time.Duration) string {
	return ((d + time.Second - 1) / time.Second * time.Second).String()
}
