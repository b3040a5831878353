package proc

import "time"

// backoff is kubelet's per-container CrashLoopBackOff entry (flowcontrol.Backoff with no jitter):
// the first restart after an exit is immediate, later ones wait initial, 2×initial, ... up to max;
// a container that ran for more than 2×max before exiting starts over at initial.
type backoff struct {
	initial, max time.Duration
	current      time.Duration // the delay the next check uses; 0 = no entry yet
	lastUpdate   time.Time     // when next() last ran (the last restart)
}

// expired reports whether the entry should be forgotten: the container ran (from the last restart
// to eventTime, its exit) for longer than twice the cap.
func (b *backoff) expired(eventTime time.Time) bool {
	return eventTime.Sub(b.lastUpdate) > 2*b.max
}

// inBackoff reports whether a container that exited at eventTime must still wait at now, and until
// when.
func (b *backoff) inBackoff(eventTime, now time.Time) (bool, time.Time) {
	if b.current == 0 || b.expired(eventTime) {
		return false, time.Time{}
	}
	until := eventTime.Add(b.current)
	return now.Before(until), until
}

// next records a restart at now of a container that exited at eventTime and doubles the delay.
func (b *backoff) next(eventTime, now time.Time) {
	if b.current == 0 || b.expired(eventTime) {
		b.current = min(b.initial, b.max)
	} else {
		b.current = min(2*b.current, b.max)
	}
	b.lastUpdate = now
}
