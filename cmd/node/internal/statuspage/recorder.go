package statuspage

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cmd/node/internal/proc"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// Prober is the prober the probe tree calls (actors.Prober has this method set; it is restated here
// so this package depends on probes only).
type Prober interface {
	Probe(ctx context.Context, spec *v1.Probe, t probes.Target) (probes.Outcome, error)
}

// Recorder is History behind a mutex, fed by node: pods through PodEvent, a subscriber of the
// runtime's pod events (or by hand: Observe and Forget), attempts through the Prober it wraps,
// Retain from housekeeping. Safe for concurrent use; it starts no goroutine.
type Recorder struct {
	now func() time.Time

	mu sync.Mutex
	h  *History
}

// NewRecorder returns an empty Recorder; now stamps attempts.
func NewRecorder(now func() time.Time) *Recorder {
	return &Recorder{now: now, h: NewHistory()}
}

// PodEvent is a subscriber of the runtime's pod events (proc.Runtime.Subscribe): a new status
// is Observed, a removed pod Forgotten. The runtime delivers each status to its subscribers before
// the tree learns it, as Observe needs.
func (r *Recorder) PodEvent(e proc.PodEvent) {
	switch e.Kind {
	case proc.PodStatusChanged:
		r.Observe(e.Pod, e.Status)
	case proc.PodRemoved:
		r.Forget(e.Pod.UID)
	default: // PodStarted: no container ID yet
	}
}

// Observe learns the container IDs of a pod's status (the runtime reports every change). Call it
// before the probe tree learns the status, so the tree never probes a container ID the Recorder
// cannot attribute.
func (r *Recorder) Observe(pod *v1.Pod, st v1.PodStatus) {
	ids := make(map[string]string, len(st.ContainerStatuses)+len(st.InitContainerStatuses))
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for _, cs := range list {
			if cs.ContainerID != "" {
				ids[cs.ContainerID] = cs.Name
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Observe(pod.UID, ids)
}

// Forget removes everything kept for a pod (node calls it when the tree removes the pod).
func (r *Recorder) Forget(pod types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Forget(pod)
}

// Retain forgets every pod not in desired (node's housekeeping).
func (r *Recorder) Retain(desired map[types.UID]struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Retain(desired)
}

// Probe returns a copy of one probe's recent attempts (ok false: none recorded).
func (r *Recorder) Probe(k Key) (Probe, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.h.Probe(k)
}

// Stats returns the size of what the Recorder keeps.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.h.Stats()
}

// Prober returns inner wrapped so that every call the probe tree makes is recorded. The wrapper
// changes nothing the tree sees: same outcome, same error, same ctx.
func (r *Recorder) Prober(inner Prober) Prober { return recordingProber{inner: inner, r: r} }

type recordingProber struct {
	inner Prober
	r     *Recorder
}

// Probe implements Prober. An attempt whose ctx ended (the tree abandoned it: its worker stopped)
// is not recorded: the tree discards it too.
func (p recordingProber) Probe(ctx context.Context, spec *v1.Probe, t probes.Target) (probes.Outcome, error) {
	out, err := p.inner.Probe(ctx, spec, t)
	if ctx.Err() != nil {
		return out, err
	}
	a := attemptOf(out, err, p.r.now())
	typ, ok := probeType(spec, t.Container)
	p.r.mu.Lock()
	if ok {
		p.r.h.Record(t.ContainerID, typ, a)
	} else {
		p.r.h.Unattributed()
	}
	p.r.mu.Unlock()
	return out, err
}

// attemptOf maps the prober's answer to an Attempt.
func attemptOf(out probes.Outcome, err error, at time.Time) Attempt {
	if err != nil {
		return Attempt{At: at, Outcome: Error, Message: err.Error()}
	}
	a := Attempt{At: at, Message: out.Output}
	switch out.Result {
	case probes.Success:
		a.Outcome, a.Message = Success, ""
	case probes.Warning:
		a.Outcome = Warning
	case probes.Failure:
		a.Outcome = Failure
	default:
		a.Outcome = Unknown
	}
	return a
}

// probeType tells which of the container's probes spec is. The tree probes with the container's own
// probe pointers (messages.ProbeType.Spec), so identity decides; a spec that is none of them is not
// attributed.
func probeType(spec *v1.Probe, c *v1.Container) (messages.ProbeType, bool) {
	if spec == nil || c == nil {
		return 0, false
	}
	for _, typ := range messages.ProbeTypes {
		if typ.Spec(c) == spec {
			return typ, true
		}
	}
	return 0, false
}
