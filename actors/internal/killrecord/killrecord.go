package killrecord

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
)

// Verdict is what a result change asks of the syncLoop (Book.Result).
type Verdict uint8

const (
	// None: the result is not a Failure; it asks nothing.
	None Verdict = iota
	// Kill: kill the container, at once or when the restart budget allows (then Take decides again).
	Kill
	// UnknownPod: a Failure of a pod the Book does not know, ignored (kubelet's "ignore irrelevant
	// update"; the shell logs it).
	UnknownPod
	// AlreadyKilled: a Failure of the container ID the Book last killed for that container, ignored.
	AlreadyKilled
)

var verdictNames = [...]string{None: "None", Kill: "Kill", UnknownPod: "UnknownPod", AlreadyKilled: "AlreadyKilled"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "Verdict(?)"
}

// Book is the syncLoop's record of the pods it knows, each with R (the syncLoop's copy of the pod,
// which a kill reads), and of the container ID it last killed per container (the package's
// invariants). A known pod costs one entry of R; the kill record is kept only for pods with a
// kill. The zero value is not usable; use New. Not safe for concurrent use.
type Book[R any] struct {
	pods map[types.UID]R
	// killed holds, for each known pod with a kill, the container ID last killed per container.
	killed map[types.UID]map[string]messages.ContainerID
}

// New returns a Book that knows no pod.
func New[R any]() *Book[R] {
	return &Book[R]{pods: map[types.UID]R{}, killed: map[types.UID]map[string]messages.ContainerID{}}
}

// Add is an AddPod: the pod is known from now on, with rec. A pod added again takes the new rec
// and keeps its kill record.
func (b *Book[R]) Add(uid types.UID, rec R) { b.pods[uid] = rec }

// Remove is a RemovePod: the pod and its record are forgotten. Removing a pod the Book does not know
// does nothing.
func (b *Book[R]) Remove(uid types.UID) {
	delete(b.pods, uid)
	delete(b.killed, uid)
}

// Cleanup is a CleanupPods (kubelet's HandlePodCleanups): every known pod not in desired is
// forgotten, with its record. It returns the pods it forgot, sorted, for the caller to act on.
func (b *Book[R]) Cleanup(desired map[types.UID]struct{}) []types.UID {
	var gone []types.UID
	for uid := range b.pods {
		if _, ok := desired[uid]; !ok {
			gone = append(gone, uid)
		}
	}
	slices.Sort(gone)
	for _, uid := range gone {
		b.Remove(uid)
	}
	return gone
}

// Pod returns a known pod's R; false if the pod is not known.
func (b *Book[R]) Pod(uid types.UID) (R, bool) {
	rec, ok := b.pods[uid]
	return rec, ok
}

// Result decides what a result change asks for: Kill for a Failure of a known pod whose container
// ID was not the last killed for its container, None for any other result, UnknownPod or
// AlreadyKilled for a Failure ignored. It records nothing: a kill is recorded when it is performed
// (Take).
func (b *Book[R]) Result(c messages.ResultChanged) Verdict {
	if c.Result != messages.Failure {
		return None
	}
	switch _, ok := b.pods[c.PodUID]; {
	case !ok:
		return UnknownPod
	case b.killed[c.PodUID][c.Container] == c.ContainerID:
		return AlreadyKilled
	}
	return Kill
}

// Take is a kill about to be performed for a Failure Result answered Kill to, at once or when the
// restart budget lets it through: it reports whether the kill goes ahead, with the pod's R, and if
// so records its container ID as the container's last killed. It refuses (and records nothing)
// when the pod is not known any more or the container ID was killed meanwhile.
func (b *Book[R]) Take(c messages.ResultChanged) (R, bool) {
	rec, ok := b.pods[c.PodUID]
	if !ok || b.killed[c.PodUID][c.Container] == c.ContainerID {
		var zero R
		return zero, false
	}
	k := b.killed[c.PodUID]
	if k == nil {
		k = map[string]messages.ContainerID{}
		b.killed[c.PodUID] = k
	}
	k[c.Container] = c.ContainerID
	return rec, true
}
