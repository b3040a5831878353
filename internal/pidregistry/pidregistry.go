// Package pidregistry sizes the pinned protoactor's process registry for a long-lived process.
//
// protoactor registers every spawned actor and every future in a registry of 1,024 buckets, each a
// 32-shard concurrent map: 32,768 Go maps. A Go map keeps the storage it has grown, so every map
// that has once held an entry keeps ~280 bytes for good, and a process that keeps spawning actors
// and futures (node: a worker per probe of every pod started, a future per query) grows its live
// heap towards ~9 MiB over its first hours, a few hundred KiB for every few thousand new PIDs —
// the heap growth `make soak` measured (ARCHITECTURE.md, "What grows, and why"). The registry
// needs nowhere near that many shards: lookups take one shard's read lock, and a few thousand
// shards leave contention negligible on any core count node runs on. Compact replaces the buckets
// with fewer, so the registry reaches its bound within the first minute and stays there.
//
// Invariant: Compact runs right after actor.NewActorSystem, before anything else uses the system
// (no spawn, no future, no remote or cluster): it swaps the registry's bucket slice without a lock,
// moving the processes NewActorSystem registered (the event stream).
package pidregistry

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	cmap "github.com/orcaman/concurrent-map"
)

// DefaultBuckets is node's bucket count: 64 buckets of 32 shards, 2,048 maps (~0.6 MiB once all
// are used, against ~9 MiB for protoactor's 1,024 buckets).
const DefaultBuckets = 64

// Compact gives sys's process registry n buckets instead of protoactor's 1,024, keeping every
// process registered so far. See the package doc for when it may be called.
func Compact(sys *actor.ActorSystem, n int) error {
	if n < 1 {
		return fmt.Errorf("pidregistry: %d buckets: must be at least 1", n)
	}
	reg := sys.ProcessRegistry
	sm := &actor.SliceMap{LocalPIDs: make([]cmap.ConcurrentMap, n)}
	for i := range sm.LocalPIDs {
		sm.LocalPIDs[i] = cmap.New()
	}
	for _, bucket := range reg.LocalPIDs.LocalPIDs {
		for id, p := range bucket.Items() {
			sm.GetBucket(id).Set(id, p)
		}
	}
	reg.LocalPIDs = sm
	return nil
}

// Buckets is the number of buckets sys's registry has (tests, diagnostics).
func Buckets(sys *actor.ActorSystem) int { return len(sys.ProcessRegistry.LocalPIDs.LocalPIDs) }
