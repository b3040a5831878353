package worker

import "github.com/probeactor/probeactor/messages"

// Published is the last result a worker sent to the results cache, so the worker sends a result
// only when it differs from what the cache already holds for the key (kubelet's cache dedups Set;
// deduplicating at the source also saves the message, one per probe in steady state). The zero
// value has published nothing.
//
// It stays valid as long as the worker is the only writer of its (container ID, probe type) entry
// and the entry is removed only through Forget: true for a live worker, including across a
// supervision restart (the cache keeps the entry). A worker that stops (or is given up on) takes its
// Published with it; a new worker starts from the zero value and publishes again.
type Published struct {
	id     messages.ContainerID
	result messages.Result
}

// Changed reports whether publishing r for id would change the cache, and if so records it as
// published. The caller must send the result when it returns true.
func (p *Published) Changed(id messages.ContainerID, r messages.Result) bool {
	if p.id == id && p.id != "" && p.result == r {
		return false
	}
	p.id, p.result = id, r
	return true
}

// Forget records that the cache entry of id was removed.
func (p *Published) Forget(id messages.ContainerID) {
	if p.id == id {
		*p = Published{}
	}
}
