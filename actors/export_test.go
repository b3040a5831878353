package actors

import (
	"time"

	"github.com/probeactor/probeactor/actors/internal/exec"
	"github.com/probeactor/probeactor/messages"
)

// What the black-box tests of package actors_test (stress_test.go) may see of the tree's internals
// and of this package's test harness. Keep it this small: moving the internals changes this file
// only.

// The harness: a fresh ActorSystem that fails the test on any dead letter, a logger that prints
// only when the test fails, and a testing/synctest bubble.
var (
	NewTestSystem = newSystem
	TestLogger    = testLogger
	InBubble      = inBubble
)

// AttemptBacklogWait is the longest an attempt waits in the attempt pool's backlog.
const AttemptBacklogWait = exec.BacklogWait

// PoolIdleRetirement bounds how long an idle attempt-pool goroutine lives (twice its idle timeout).
const PoolIdleRetirement = 2 * exec.AttemptIdleTimeout

// InspectWorker reports whether probeManager has a worker for k and whether an attempt of it is in
// flight.
func InspectWorker(t *Tree, k messages.ProbeKey) (exists, busy bool, err error) {
	res, err := t.env.sys.Root.RequestFuture(t.env.manager, &inspectWorker{key: k}, 10*time.Second).Result()
	if err != nil {
		return false, false, err
	}
	info := res.(*workerInfo)
	return info.Exists, info.Busy, nil
}

// WorkerCount is probeManager's number of workers (those told to stop and not yet gone included).
func WorkerCount(t *Tree) (int, error) {
	res, err := t.env.sys.Root.RequestFuture(t.env.manager, &countWorkers{}, 10*time.Second).Result()
	if err != nil {
		return 0, err
	}
	return res.(int), nil
}

// SchedulerEntries is the number of timers pending in the tree's shards (one clock.Scheduler each).
func SchedulerEntries(t *Tree) int { return t.env.cfg.exec.Pending() }
