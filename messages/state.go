package messages

import "time"

// ProbeState is one probe worker's state, as Tree.ProbeStates reports it (node describe): what
// kubelet keeps per worker but never shows — the streak against its threshold, the last attempt,
// the hold — and what the tree adds (a kill deferred by the restart budget, the next run).
type ProbeState struct {
	Key ProbeKey
	// ContainerID is the container the worker tracks ("" before it saw one).
	ContainerID ContainerID
	// Published is the result the worker last published for ContainerID; HasPublished is false
	// when it published none.
	Published    Result
	HasPublished bool
	// Streak is the number of consecutive counted attempts with StreakResult (kubelet's resultRun
	// and lastResult); 0 after a hold or before any attempt counted.
	Streak       int
	StreakResult Result
	// LastResult is the last attempt's verdict, Unknown when the prober itself failed (an error,
	// which counts for nothing), at LastAt; LastAt is zero before the first attempt.
	LastResult Result
	LastAt     time.Time
	// OnHold: a liveness or startup worker waiting for a new container after its threshold.
	OnHold bool
	// KillDeferred: the kill this worker's Failure asked for waits for the restart budget.
	KillDeferred bool
	// Busy: an attempt is in flight.
	Busy bool
	// NextRun is the worker's next periodic run (zero when its timer is stopped).
	NextRun time.Time
	// Running, Started and ContainerStartedAt are the container as the worker last saw it.
	Running            bool
	Started            bool
	ContainerStartedAt time.Time
}

// ContainerStartup is how long a container instance took from its start (State.Running.StartedAt)
// to its first Started and its first Ready, as the tree computed them (Tree.ContainerStartups;
// node's status page).
type ContainerStartup struct {
	Container   string
	ContainerID ContainerID
	// Started is true once the instance has started; StartedAfter is then how long that took.
	Started      bool
	StartedAfter time.Duration
	// Ready is true once the instance has been ready; ReadyAfter is then how long that took.
	Ready      bool
	ReadyAfter time.Duration
	// Adopted: the runtime reported the instance ready or started when the tree first saw it
	// (node re-adopting it after its own restart): it started before, and is not measured.
	Adopted bool
}
