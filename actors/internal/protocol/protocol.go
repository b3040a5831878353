// Package protocol is the probe tree's private message protocol: what its actors (and the Tree's
// methods) send each other besides the public vocabulary of package messages. Every type's doc
// comment says who sends it to whom; messages are read-only for receivers.
package protocol

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
)

// CleanupPods stops every worker whose pod is not in Desired: embedder / node (kubelet's
// HandlePodCleanups housekeeping) → probeManager.
type CleanupPods struct {
	Desired map[types.UID]struct{}
}

// SetResult publishes a worker's verdict for a container: worker → resultsCache. The cache stores it
// and tells subscribers only when the value differs from the cached one (kubelet's dedup).
type SetResult struct {
	PodUID      types.UID
	Container   string
	ContainerID messages.ContainerID
	Type        messages.ProbeType
	Result      messages.Result
}

// RemoveResult forgets a container's cached result without telling subscribers (kubelet's
// results.Manager.Remove): worker → resultsCache, when the container ID changes or the worker exits.
type RemoveResult struct {
	ContainerID messages.ContainerID
	Type        messages.ProbeType
}

// GetResult asks for a cached result: anyone (Tree.Result, tests) → resultsCache; answered with a
// ResultResponse.
type GetResult struct {
	ContainerID messages.ContainerID
	Type        messages.ProbeType
}

// ResultResponse answers GetResult: resultsCache → requester. Found is false when nothing is cached.
type ResultResponse struct {
	Result messages.Result
	Found  bool
}

// SubscribeResults registers the message's sender as a subscriber of result changes of the given
// types (all types when empty): subscriber → resultsCache (Tree.Subscribe sends it on the
// subscriber's behalf). Subscribing twice replaces the filter. A subscriber that stops is
// unsubscribed automatically.
type SubscribeResults struct {
	Types []messages.ProbeType
	// Snapshot queues the current value of every cached key of Types first (see results.Cache).
	Snapshot bool
}

// UnsubscribeResults removes the sender's subscription: subscriber → resultsCache.
type UnsubscribeResults struct{}

// ContainerView is everything a probe worker needs to know about its container, computed from the
// probe-adjusted pod status: statusManager → probeManager → worker (pushed on change, never polled).
// It mirrors what kubelet's doProbe reads from the status manager cache (spec §2.4 steps 1–9).
type ContainerView struct {
	PodStatusKnown bool        // false: no status for the pod yet (step 1)
	Phase          v1.PodPhase // the pod's phase (step 2)
	PodIP          string      // the default probe host
	// Found is true when a status with a non-empty container ID exists for the container, looked up
	// by name in containerStatuses and then initContainerStatuses (step 3).
	Found       bool
	ContainerID messages.ContainerID
	Running     bool      // State.Running != nil
	StartedAt   time.Time // State.Running.StartedAt
	Terminated  bool      // State.Terminated != nil
	Started     bool      // Started != nil && *Started, as overlaid by statusManager (step 9)
	// ReportedReady and ReportedStarted are the runtime's own Ready and Started (Started != nil &&
	// *Started) of the container, before statusManager's overlay. A runtime reports them true only
	// for a container that was ready or started before the tree took it over (node re-adopting its
	// containers after its own restart): the worker then takes them as the container's first result
	// (kubelet 1.35+, KEP-4781; see worker.Machine).
	ReportedReady   bool
	ReportedStarted bool
}

// PodStatusChanged carries a pod's probe-adjusted status after statusManager recomputed it:
// statusManager → probeManager, which derives each worker's ContainerView from it. Status is
// read-only for receivers.
type PodStatusChanged struct {
	PodUID types.UID
	Status v1.PodStatus
}

// TriggerReadiness asks the readiness worker of a container to probe now and restart its period
// (kubelet's manualTriggerCh, PR #119089): statusManager (UpdatePodStatus found a started, running,
// not-ready container with a readiness worker) → probeManager → worker. At most one trigger is
// pending per worker.
type TriggerReadiness struct {
	PodUID    types.UID
	Container string
}

// ProbeWorkers lists the keys that currently have a worker for a pod: probeManager → resultsCache →
// statusManager (behind the last results of the workers that terminated), whenever the set changes (kubelet's UpdatePodStatus asks "does a worker exist?"). An empty Keys
// means the pod has no workers.
type ProbeWorkers struct {
	PodUID types.UID
	Keys   []messages.ProbeKey
}

// GetPodStatus asks statusManager for a pod's probe-adjusted status: Tree.PodStatus, node → statusManager;
// answered with a PodStatusResponse.
type GetPodStatus struct {
	PodUID types.UID
}

// GetPodStatuses asks statusManager for several pods' statuses at once (Tree.PodStatuses: one
// request, and one reply process in protoactor's registry, for a whole /pods); answered with a
// PodStatusesResponse.
type GetPodStatuses struct {
	PodUIDs []types.UID
}

// PodStatusesResponse answers GetPodStatuses: the pods that have a status (the others are absent).
type PodStatusesResponse struct {
	Statuses map[types.UID]v1.PodStatus
}

// PodStatusResponse answers GetPodStatus: statusManager → requester. Found is false for pods without
// a status.
type PodStatusResponse struct {
	Status v1.PodStatus
	Found  bool
}

// GetProbeKeys asks probeManager which workers a pod has: Tree.ProbeStates → root → probeManager;
// answered with a ProbeKeysResponse.
type GetProbeKeys struct {
	PodUID types.UID
}

// ProbeKeysResponse answers GetProbeKeys: the pod's worker keys (those not stopping), in no
// particular order.
type ProbeKeysResponse struct {
	Keys []messages.ProbeKey
}

// GetProbeState asks one worker for its state: Tree.ProbeStates → root → probeManager → worker;
// answered with a ProbeStateResponse (by probeManager, Found false, when the worker is gone).
type GetProbeState struct {
	Key messages.ProbeKey
}

// ProbeStateResponse answers GetProbeState.
type ProbeStateResponse struct {
	State messages.ProbeState
	Found bool
}

// DeferKill tells the worker whose Failure asked for a kill that the kill waits for the restart
// budget, so it must keep probing the container (a Success cancels the kill): syncLoop →
// probeManager → worker. ContainerID is the container the kill is for.
type DeferKill struct {
	Key         messages.ProbeKey
	ContainerID messages.ContainerID
}

// KillDeferred marks (Deferred) or unmarks a container whose liveness or startup kill waits for
// the restart budget: syncLoop → statusManager, which reports it not ready while marked.
type KillDeferred struct {
	PodUID      types.UID
	ContainerID messages.ContainerID
	Deferred    bool
}

// GetContainerStartups asks statusManager how long each running container of the pods took to
// start and become ready: Tree.ContainerStartups → root → statusManager; answered with a
// ContainerStartupsResponse.
type GetContainerStartups struct {
	PodUIDs []types.UID
}

// ContainerStartupsResponse answers GetContainerStartups (pods without any are absent).
type ContainerStartupsResponse struct {
	Startups map[types.UID][]messages.ContainerStartup
}
