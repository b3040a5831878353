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

// Book is the syncLoop's record of the pods it knows and of the container ID it last killed per
// container of each (the package's invariants). The zero value is not usable; use New. Not safe
// for concurrent use.
type Book struct {
	// pods holds every known pod; its value maps a container name to the container ID last killed
	// (nil until the pod's first kill).
	pods map[types.UID]map[string]messages.ContainerID
}

// New returns a Book that knows no pod.
func New() *Book { return &Book{pods: map[types.UID]map[string]messages.ContainerID{}} }

// Add is an AddPod: the pod is known from now on. A pod added again keeps its record.
func (b *Book) Add(uid types.UID) {
	if _, ok := b.pods[uid]; !ok {
		b.pods[uid] = nil
	}
}

// Remove is a RemovePod: the pod and its record are forgotten. Removing a pod the Book does not know
// does nothing.
func (b *Book) Remove(uid types.UID) { delete(b.pods, uid) }

// Cleanup is a CleanupPods (kubelet's HandlePodCleanups): every known pod not in desired is
// forgotten, with its record. It returns the pods it forgot, sorted, for the caller to forget too.
func (b *Book) Cleanup(desired map[types.UID]struct{}) []types.UID {
	var gone []types.UID
	for uid := range b.pods {
		if _, ok := desired[uid]; !ok {
			gone = append(gone, uid)
		}
	}
	slices.Sort(gone)
	for _, uid := range gone {
		delete(b.pods, uid)
	}
	return gone
}

// Known reports whether the pod is known.
func (b *Book) Known(uid types.UID) bool {
	_, ok := b.pods[uid]
	return ok
}

// Result decides what a result change asks for: Kill for a Failure of a known pod whose container
// ID was not the last killed for its container, None for any other result, UnknownPod or
// AlreadyKilled for a Failure ignored. It records nothing: a kill is recorded when it is performed
// (Take).
func (b *Book) Result(c messages.ResultChanged) Verdict {
	if c.Result != messages.Failure {
		return None
	}
	killed, ok := b.pods[c.PodUID]
	switch {
	case !ok:
		return UnknownPod
	case killed[c.Container] == c.ContainerID:
		return AlreadyKilled
	}
	return Kill
}

// Take is a kill about to be performed for a Failure Result answered Kill to, at once or when the
// restart budget lets it through: it reports whether the kill goes ahead, and if so records its
// container ID as the container's last killed. It refuses (and records nothing) when the pod is not
// known any more or the container ID was killed meanwhile.
func (b *Book) Take(c messages.ResultChanged) bool {
	killed, ok := b.pods[c.PodUID]
	if !ok || killed[c.Container] == c.ContainerID {
		return false
	}
	if killed == nil {
		killed = map[string]messages.ContainerID{}
		b.pods[c.PodUID] = killed
	}
	killed[c.Container] = c.ContainerID
	return true
}
