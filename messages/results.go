package messages

import (
	"k8s.io/apimachinery/pkg/types"
)

// ResultChanged says a cached result was set to a new value: part of a ResultChanges batch,
// resultsCache → subscribers.
type ResultChanged struct {
	PodUID      types.UID
	Container   string
	ContainerID ContainerID
	Type        ProbeType
	Result      Result
}

// ResultChanges is a batch of result changes for one subscriber: resultsCache → subscriber.
//
// Flow control: the cache sends the next batch only after the subscriber acknowledged this one with
// AckResults{Seq} (a reply to the sender, e.g. ctx.Respond). While a batch is unacknowledged, later
// changes coalesce per (container ID, probe type) to the latest value, so a slow subscriber costs
// memory bounded by the number of keys, never blocks anybody, and always receives the final state.
// Within a batch, changes appear in the order their keys first changed since the previous batch.
type ResultChanges struct {
	Seq     uint64
	Changes []ResultChanged
}

// AckResults acknowledges the ResultChanges batch Seq: subscriber → resultsCache.
type AckResults struct {
	Seq uint64
}
