package runner

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cluster/sharder"
)

// errRunnerClosed answers the sharder's Start once Runner.Stop began.
var errRunnerClosed = errors.New("node is shutting down")

// pods is the sharder's PodRunner over PodOps: the shell that carries out the book's effects.
// Start runs a pod at once (the sharder retries a failed start); Stop hands the stop (grace
// period included: StopPod waits for it) to a goroutine, so neither blocks the sharder.
type pods struct {
	ops PodOps
	log hclog.Logger
	// report tells the membership the pods still stopping here (Membership.SetStopping),
	// whenever that set changes, under mu: in order, and before the sharder acknowledges the
	// view that caused a stop.
	report   func(uids []string)
	reported []string
	// held are pods an earlier node left running here, reported as stopping until started here
	// (adopted) or released (swept).
	held map[types.UID]bool

	mu            sync.Mutex
	book          *book
	drained       chan struct{} // closed once the book is closed and no stop is in progress
	drainedClosed bool
	stops         sync.WaitGroup // one per StopPod in progress
}

var _ sharder.PodRunner = (*pods)(nil)

func newPods(ops PodOps, log hclog.Logger, report func([]string)) *pods {
	return &pods{ops: ops, log: log, report: report, book: newBook(), drained: make(chan struct{})}
}

// hold marks pods an earlier node left here: reported as stopping until adopted or released.
func (s *pods) hold(uids []types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = map[types.UID]bool{}
	for _, u := range uids {
		s.held[u] = true
	}
	s.reportLocked()
}

// releaseHeld forgets the held pods: swept (stopped), or adopted already.
func (s *pods) releaseHeld() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = nil
	s.reportLocked()
}

// abandon refuses every later start and stops nothing: the pods keep running for the next node
// (a planned restart). It waits for no stop; those under way end by themselves.
func (s *pods) abandon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.book.closed = true
}

// reportLocked tells the membership the stopping set (with the held pods) if it changed. s.mu
// is held.
func (s *pods) reportLocked() {
	now := s.book.stopping()
	for u := range s.held {
		if !slices.Contains(now, string(u)) {
			now = append(now, string(u))
		}
	}
	slices.Sort(now)
	if !slices.Equal(now, s.reported) {
		s.reported = now
		if s.report != nil {
			s.report(now)
		}
	}
}

// Start implements sharder.PodRunner.
func (s *pods) Start(pod *v1.Pod) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch eff := s.book.apply(pod.UID, start, pod); eff.act {
	case refuse:
		return errRunnerClosed
	case startNow:
		if err := s.ops.StartPod(pod); err != nil {
			s.book.apply(pod.UID, startFailed, nil)
			return err
		}
		if s.held[pod.UID] { // adopted: the same containers run on, as this member's
			delete(s.held, pod.UID)
			s.reportLocked()
		}
	default: // already running, or kept to start after its stop
	}
	return nil
}

// Stop implements sharder.PodRunner. The grace period is the pod's own (StopPod reads it from the
// spec, as the sharder does).
func (s *pods) Stop(uid types.UID, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if eff := s.book.apply(uid, stop, nil); eff.act == stopNow {
		s.stopLocked(eff)
	}
	s.reportLocked()
	return nil
}

// stopLocked runs StopPod on a goroutine, which then tells the book and starts the pod again if
// its share came back meanwhile. The goroutine ends when StopPod returned (bounded by the pod's
// grace period). s.mu is held.
func (s *pods) stopLocked(eff effect) {
	s.stops.Go(func() {
		s.ops.StopPod(eff.pod)
		s.mu.Lock()
		defer s.mu.Unlock()
		if again := s.book.apply(eff.uid, stopDone, nil); again.act == startKept {
			if err := s.ops.StartPod(again.pod); err != nil {
				s.book.apply(eff.uid, startFailed, nil)
				s.log.Error("could not start a pod again after its stop; it stays stopped here", "uid", eff.uid, "error", err)
			}
		}
		s.reportLocked()
		s.drainedLocked()
	})
}

// close refuses every later start, stops the pods still running (those the sharder did not
// release) and returns a channel closed once no stop is in progress.
func (s *pods) close() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	stops := s.book.close()
	if n := len(stops); n > 0 {
		s.log.Warn("stopping pods the sharder did not release", "pods", n)
	}
	for _, eff := range stops {
		s.stopLocked(eff)
	}
	s.reportLocked()
	s.drainedLocked()
	return s.drained
}

// drainedLocked closes drained once the book is closed and every stop finished. s.mu is held.
func (s *pods) drainedLocked() {
	if s.book.closed && !s.drainedClosed && s.book.stopsInProgress() == 0 {
		s.drainedClosed = true
		close(s.drained)
	}
}

// inProgress counts the stops not finished.
func (s *pods) inProgress() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.book.stopsInProgress()
}

// longestGrace is the book's longestGrace.
func (s *pods) longestGrace() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.book.longestGrace()
}
