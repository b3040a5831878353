package kubeletstyle

import (
	"context"
	"fmt"
	"time"

	"github.com/probeactor/probeactor/internal/restartpolicy"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
	v1 "k8s.io/api/core/v1"
)

// maxProbeRetries is kubelet's runProbeWithRetries bound: an attempt that errors is retried.
const maxProbeRetries = 3

// worker is kubelet's prober worker: one goroutine, one ticker, state touched only by that goroutine.
type worker struct {
	m         *probeManager
	stopCh    chan struct{} // buffer 1; stop() never blocks
	triggerCh chan struct{} // buffer 1; manual readiness trigger from UpdatePodStatus

	pod       *v1.Pod // the pod given to AddPod; never updated (kubelet)
	container v1.Container
	spec      *v1.Probe
	probeType messages.ProbeType
	initial   messages.Result
	results   *resultsManager

	containerID messages.ContainerID
	lastResult  messages.Result // zero value is Success, as in kubelet
	resultRun   int
	onHold      bool
}

func newWorker(m *probeManager, pt messages.ProbeType, pod *v1.Pod, c v1.Container) *worker {
	w := &worker{
		m:         m,
		stopCh:    make(chan struct{}, 1),
		triggerCh: make(chan struct{}, 1),
		pod:       pod,
		container: c,
		probeType: pt,
	}
	switch pt {
	case messages.Readiness:
		w.spec, w.initial, w.results = c.ReadinessProbe, messages.Failure, m.readiness
	case messages.Liveness:
		w.spec, w.initial, w.results = c.LivenessProbe, messages.Success, m.liveness
	case messages.Startup:
		w.spec, w.initial, w.results = c.StartupProbe, messages.Unknown, m.startup
	default:
		panic(fmt.Sprintf("kubeletstyle: unknown probe type %d", pt))
	}
	return w
}

func (w *worker) key() probeKey {
	return probeKey{podUID: w.pod.UID, container: w.container.Name, probeType: w.probeType}
}

// run is kubelet's worker.run: optional start-up jitter, then doProbe on every tick until stopped.
func (w *worker) run() {
	defer w.m.wg.Done()
	period := time.Duration(w.spec.PeriodSeconds) * time.Second
	if period <= 0 {
		period = 10 * time.Second // API default; the spec is defaulted by the embedder normally
	}
	if max(period, w.m.jitter) > time.Since(w.m.start) {
		// kubelet sleeps uninterruptibly; we also honour the subsystem's quit so Stop is prompt.
		j := time.NewTimer(time.Duration(w.m.rand() * float64(period)))
		select {
		case <-j.C:
		case <-w.m.quit:
			j.Stop()
		}
	}
	ticker := time.NewTicker(period)
	defer func() {
		ticker.Stop()
		if w.containerID != "" {
			w.results.Remove(w.containerID)
		}
		w.m.removeWorker(w.key())
	}()
	ctx := context.Background()
probeLoop:
	for w.doProbe(ctx) {
		select {
		case <-w.stopCh:
			break probeLoop
		case <-w.m.quit:
			break probeLoop
		case <-ticker.C:
		case <-w.triggerCh:
			ticker.Reset(period)
		}
	}
}

func (w *worker) stop() {
	select {
	case w.stopCh <- struct{}{}:
	default:
	}
}

// doProbe is kubelet's worker.doProbe (§2.4), step by step. It returns whether to keep going.
func (w *worker) doProbe(ctx context.Context) (keepGoing bool) {
	defer func() {
		if r := recover(); r != nil { // kubelet's HandleCrash: log, swallow, keep going
			keepGoing = true
		}
	}()

	status, ok := w.m.status.GetPodStatus(w.pod.UID)
	if !ok {
		return true
	}
	if status.Phase == v1.PodFailed || status.Phase == v1.PodSucceeded {
		return false
	}
	c, ok := containerStatus(status.ContainerStatuses, w.container.Name)
	if !ok || c.ContainerID == "" {
		c, ok = containerStatus(status.InitContainerStatuses, w.container.Name)
		if !ok || c.ContainerID == "" {
			return true
		}
	}
	if string(w.containerID) != c.ContainerID {
		if w.containerID != "" {
			w.results.Remove(w.containerID)
		}
		w.containerID = messages.ContainerID(c.ContainerID)
		// kubelet 1.37 (ChangeContainerStatusOnKubeletRestart off): a running container that started
		// more than 10 s before the prober did keeps what it had, no initial value.
		if r := c.State.Running; r == nil || r.StartedAt.IsZero() || !r.StartedAt.Time.Before(w.m.start.Add(-10*time.Second)) {
			w.results.Set(w.containerID, w.initial, w.pod)
		}
		w.onHold = false
	}
	if w.onHold {
		return true
	}
	if c.State.Running == nil {
		if w.containerID != "" {
			w.results.Set(w.containerID, messages.Failure, w.pod)
		}
		// kubelet 1.37 (ContainerRestartRules, RestartAllContainersOnContainerExits): keep going
		// while the container restarts, or the pod restarts all its containers.
		if c.State.Terminated == nil {
			return true
		}
		return restartpolicy.ShouldRestart(&w.container, w.pod.Spec.RestartPolicy, c.State.Terminated.ExitCode) ||
			restartpolicy.AllRestarting(w.pod.Spec.InitContainers, w.pod.Spec.Containers, &status)
	}
	if w.pod.DeletionTimestamp != nil && (w.probeType == messages.Liveness || w.probeType == messages.Startup) {
		w.results.Set(w.containerID, messages.Success, w.pod)
		return false
	}
	if int32(time.Since(c.State.Running.StartedAt.Time).Seconds()) < w.spec.InitialDelaySeconds {
		return true
	}
	if c.Started != nil && *c.Started {
		if w.probeType == messages.Startup {
			return true
		}
	} else if w.probeType != messages.Startup {
		return true
	}

	result, err := w.m.probe(ctx, w.spec, probes.Target{Container: &w.container, ContainerID: c.ContainerID, PodIP: status.PodIP})
	if err != nil {
		return true
	}
	if w.lastResult == result {
		w.resultRun++
	} else {
		w.lastResult = result
		w.resultRun = 1
	}
	if (result == messages.Failure && w.resultRun < int(w.spec.FailureThreshold)) ||
		(result == messages.Success && w.resultRun < int(w.spec.SuccessThreshold)) {
		return true
	}
	w.results.Set(w.containerID, result, w.pod)
	if (w.probeType == messages.Liveness && result == messages.Failure) || w.probeType == messages.Startup {
		w.onHold = true
		w.resultRun = 0
	}
	return true
}

func containerStatus(list []v1.ContainerStatus, name string) (v1.ContainerStatus, bool) {
	for _, c := range list {
		if c.Name == name {
			return c, true
		}
	}
	return v1.ContainerStatus{}, false
}
