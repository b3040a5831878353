package fakeruntime

import (
	"context"
	"fmt"
	"io"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/messages"
)

// PushFunc receives every new pod status.
type PushFunc func(pod *v1.Pod, status v1.PodStatus)

// ExecFunc scripts an exec probe: it returns the output and the exit code, or an error (e.g. one
// wrapping probes.ErrCommandTimedOut).
type ExecFunc func(ctx context.Context, cmd []string) (output string, exitCode int, err error)

// ExitError is returned by RunInContainer for a non-zero exit code.
type ExitError struct{ Code int }

func (e *ExitError) Error() string {
	return fmt.Sprintf("command terminated with exit code %d", e.Code)
}

// ExitCode returns the exit code.
func (e *ExitError) ExitCode() int { return e.Code }

// Runtime is the fake. Create it with New.
type Runtime struct {
	clock clock.Clock

	pushMu sync.Mutex // orders pushes
	mu     sync.Mutex
	push   PushFunc
	pods   map[types.UID]*pod
	byID   map[string]target
	exec   map[string]ExecFunc // by container name ("" = every container)
	kills  []messages.KillContainer
}

type pod struct {
	spec   *v1.Pod
	status v1.PodStatus
	starts map[string]int
}

type target struct {
	uid  types.UID
	name string
}

// New returns a Runtime that reads time from c (nil: the wall clock, which is virtual inside a
// testing/synctest bubble). It pushes statuses nowhere until ReportStatus gives it a function:
// actors.Start does, with the tree's SetPodStatus.
func New(c clock.Clock) *Runtime {
	if c == nil {
		c = clock.Real()
	}
	return &Runtime{clock: c, pods: map[types.UID]*pod{}, byID: map[string]target{}, exec: map[string]ExecFunc{}}
}

// ReportStatus implements actors.Runtime: push receives every status change from now on (nil: none).
func (r *Runtime) ReportStatus(push func(pod *v1.Pod, status v1.PodStatus)) {
	r.mu.Lock()
	r.push = push
	r.mu.Unlock()
}

// RunPod starts a pod: every regular container and sidecar running, phase Running, then pushes.
func (r *Runtime) RunPod(p *v1.Pod) {
	r.mu.Lock()
	now := metav1.NewTime(r.clock.Now())
	ps := &pod{spec: p.DeepCopy(), starts: map[string]int{}}
	ps.status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.1", StartTime: &now,
		Conditions: []v1.PodCondition{{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: now}}}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			ps.status.InitContainerStatuses = append(ps.status.InitContainerStatuses, r.startLocked(p, ps, c.Name, 0, now))
		} else {
			ps.status.InitContainerStatuses = append(ps.status.InitContainerStatuses, v1.ContainerStatus{Name: c.Name,
				ContainerID: r.newIDLocked(p, ps, c.Name),
				State:       v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}})
		}
	}
	for i := range p.Spec.Containers {
		ps.status.ContainerStatuses = append(ps.status.ContainerStatuses, r.startLocked(p, ps, p.Spec.Containers[i].Name, 0, now))
	}
	r.pods[p.UID] = ps
	r.pushLocked(ps)
}

func (r *Runtime) newIDLocked(p *v1.Pod, ps *pod, name string) string {
	ps.starts[name]++
	id := fmt.Sprintf("fake://%s/%s/%d", p.Name, name, ps.starts[name])
	r.byID[id] = target{uid: p.UID, name: name}
	return id
}

func (r *Runtime) startLocked(p *v1.Pod, ps *pod, name string, restarts int32, now metav1.Time) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, ContainerID: r.newIDLocked(p, ps, name), RestartCount: restarts,
		Image: "fake", ImageID: "fake", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}}}
}

// pushLocked releases r.mu and pushes a copy of ps's status.
func (r *Runtime) pushLocked(ps *pod) {
	push, spec, st := r.push, ps.spec, *ps.status.DeepCopy()
	r.pushMu.Lock()
	r.mu.Unlock()
	defer r.pushMu.Unlock()
	if push != nil {
		push(spec, st)
	}
}

// Update changes a pod's status with f (e.g. set the phase or a container state) and pushes it.
func (r *Runtime) Update(uid types.UID, f func(*v1.PodStatus)) {
	r.mu.Lock()
	ps, ok := r.pods[uid]
	if !ok {
		r.mu.Unlock()
		return
	}
	f(&ps.status)
	for _, ss := range [][]v1.ContainerStatus{ps.status.ContainerStatuses, ps.status.InitContainerStatuses} {
		for _, cs := range ss {
			if cs.ContainerID != "" {
				r.byID[cs.ContainerID] = target{uid: uid, name: cs.Name}
			}
		}
	}
	r.pushLocked(ps)
}

// Status returns the runtime's current status of a pod.
func (r *Runtime) Status(uid types.UID) (v1.PodStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ps, ok := r.pods[uid]
	if !ok {
		return v1.PodStatus{}, false
	}
	return *ps.status.DeepCopy(), true
}

// ContainerID returns a container's current ID.
func (r *Runtime) ContainerID(uid types.UID, name string) messages.ContainerID {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cs := r.findLocked(uid, name); cs != nil {
		return messages.ContainerID(cs.ContainerID)
	}
	return ""
}

func (r *Runtime) findLocked(uid types.UID, name string) *v1.ContainerStatus {
	ps, ok := r.pods[uid]
	if !ok {
		return nil
	}
	for _, ss := range [][]v1.ContainerStatus{ps.status.ContainerStatuses, ps.status.InitContainerStatuses} {
		for i := range ss {
			if ss[i].Name == name {
				return &ss[i]
			}
		}
	}
	return nil
}

// KillContainer implements the core's Runtime.
func (r *Runtime) KillContainer(ctx context.Context, req messages.KillContainer) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("kill %s: %w", req.Container, err)
	}
	r.mu.Lock()
	r.kills = append(r.kills, req)
	cs := r.findLocked(req.Pod.UID, req.Container)
	if cs == nil || cs.ContainerID != string(req.ContainerID) || cs.State.Running == nil {
		r.mu.Unlock()
		return nil // stale: that container is gone already
	}
	ps := r.pods[req.Pod.UID]
	now := metav1.NewTime(r.clock.Now())
	term := &v1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", StartedAt: cs.State.Running.StartedAt,
		FinishedAt: now, ContainerID: cs.ContainerID}
	if req.Restart {
		restarts := cs.RestartCount + 1
		*cs = r.startLocked(ps.spec, ps, req.Container, restarts, now)
		cs.LastTerminationState = v1.ContainerState{Terminated: term}
	} else {
		cs.State = v1.ContainerState{Terminated: term}
		cs.Ready = false
	}
	r.pushLocked(ps)
	return nil
}

// Kills returns every kill request received, in order.
func (r *Runtime) Kills() []messages.KillContainer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]messages.KillContainer(nil), r.kills...)
}

// SetExec scripts the exec probes of a container name ("" for every container without its own).
func (r *Runtime) SetExec(container string, f ExecFunc) {
	r.mu.Lock()
	r.exec[container] = f
	r.mu.Unlock()
}

// RunInContainer implements probes.CommandRunner with the scripts set by SetExec.
func (r *Runtime) RunInContainer(ctx context.Context, containerID string, cmd []string, out io.Writer) error {
	r.mu.Lock()
	t, ok := r.byID[containerID]
	f := r.exec[t.name]
	if f == nil {
		f = r.exec[""]
	}
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("container %q not found", containerID)
	}
	if f == nil {
		return nil
	}
	output, code, err := f(ctx, cmd)
	if _, werr := io.WriteString(out, output); werr != nil {
		return fmt.Errorf("write output: %w", werr)
	}
	if err != nil {
		return err
	}
	if code != 0 {
		return &ExitError{Code: code}
	}
	return nil
}
