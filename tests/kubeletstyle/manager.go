package kubeletstyle

import (
	"context"
	"sync"
	"time"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

type probeKey struct {
	podUID    types.UID
	container string
	probeType messages.ProbeType
}

// probeManager is kubelet's prober.Manager: workers in an RWMutex-guarded map, one goroutine each.
type probeManager struct {
	workerLock sync.RWMutex
	workers    map[probeKey]*worker

	liveness, readiness, startup *resultsManager
	status                       *statusManager
	prober                       Prober
	start                        time.Time
	rand                         func() float64
	jitter                       time.Duration // Options.JitterWindow
	quit                         <-chan struct{}
	wg                           *sync.WaitGroup
}

// AddPod starts a worker per probe of every container and restartable init container (§1.3). Like
// kubelet 1.37 it skips a key that already has a worker and goes on (1.30–1.33 returned there).
func (m *probeManager) AddPod(pod *v1.Pod) {
	m.workerLock.Lock()
	defer m.workerLock.Unlock()
	select {
	case <-m.quit:
		return // stopped: no new goroutines
	default:
	}
	for _, c := range probedContainers(pod) {
		for _, pt := range messages.ProbeTypes {
			if pt.Spec(c) == nil {
				continue
			}
			k := probeKey{podUID: pod.UID, container: c.Name, probeType: pt}
			if _, ok := m.workers[k]; ok {
				continue
			}
			w := newWorker(m, pt, pod, *c)
			m.workers[k] = w
			m.wg.Add(1)
			go w.run()
		}
	}
}

// StopLivenessAndStartup stops liveness and startup workers of regular containers (§1.3).
func (m *probeManager) StopLivenessAndStartup(pod *v1.Pod) {
	m.workerLock.RLock()
	defer m.workerLock.RUnlock()
	for _, c := range pod.Spec.Containers {
		for _, pt := range []messages.ProbeType{messages.Liveness, messages.Startup} {
			if w, ok := m.workers[probeKey{podUID: pod.UID, container: c.Name, probeType: pt}]; ok {
				w.stop()
			}
		}
	}
}

// RemovePod stops every worker of the pod; they remove themselves when they exit.
func (m *probeManager) RemovePod(pod *v1.Pod) {
	m.workerLock.RLock()
	defer m.workerLock.RUnlock()
	for _, c := range probedContainers(pod) {
		for _, pt := range messages.ProbeTypes {
			if w, ok := m.workers[probeKey{podUID: pod.UID, container: c.Name, probeType: pt}]; ok {
				w.stop()
			}
		}
	}
}

// CleanupPods stops every worker whose pod is not desired.
func (m *probeManager) CleanupPods(desired map[types.UID]struct{}) {
	m.workerLock.RLock()
	defer m.workerLock.RUnlock()
	for k, w := range m.workers {
		if _, ok := desired[k.podUID]; !ok {
			w.stop()
		}
	}
}

func (m *probeManager) removeWorker(k probeKey) {
	m.workerLock.Lock()
	defer m.workerLock.Unlock()
	delete(m.workers, k)
}

func (m *probeManager) getWorker(k probeKey) (*worker, bool) {
	m.workerLock.RLock()
	defer m.workerLock.RUnlock()
	w, ok := m.workers[k]
	return w, ok
}

func (m *probeManager) workerCount() int {
	m.workerLock.RLock()
	defer m.workerLock.RUnlock()
	return len(m.workers)
}

// UpdatePodStatus overlays Started and Ready from the probe results (§5.1) and manually triggers a
// readiness worker whose started, running container is not known to be ready (§2.3).
func (m *probeManager) UpdatePodStatus(pod *v1.Pod, st *v1.PodStatus) {
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		started := m.isContainerStarted(pod, cs)
		cs.Started = &started
		if !started {
			continue
		}
		cs.Ready = m.readyOrTrigger(pod, cs)
	}
	for i := range st.InitContainerStatuses {
		cs := &st.InitContainerStatuses[i]
		started := m.isContainerStarted(pod, cs)
		cs.Started = &started
		if i >= len(pod.Spec.InitContainers) || pod.Spec.InitContainers[i].Name != cs.Name {
			continue
		}
		if !isRestartable(&pod.Spec.InitContainers[i]) {
			if cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
				cs.Ready = true
			}
			continue
		}
		if !started {
			continue
		}
		cs.Ready = m.readyOrTrigger(pod, cs)
	}
}

func (m *probeManager) isContainerStarted(pod *v1.Pod, cs *v1.ContainerStatus) bool {
	if cs.State.Running == nil {
		return false
	}
	if r, ok := m.startup.Get(messages.ContainerID(cs.ContainerID)); ok {
		return r == messages.Success
	}
	_, exists := m.getWorker(probeKey{podUID: pod.UID, container: cs.Name, probeType: messages.Startup})
	return !exists
}

func (m *probeManager) readyOrTrigger(pod *v1.Pod, cs *v1.ContainerStatus) bool {
	if cs.State.Running == nil {
		return false
	}
	if r, ok := m.readiness.Get(messages.ContainerID(cs.ContainerID)); ok && r == messages.Success {
		return true
	}
	w, exists := m.getWorker(probeKey{podUID: pod.UID, container: cs.Name, probeType: messages.Readiness})
	if exists {
		select {
		case w.triggerCh <- struct{}{}:
		default: // "Failed to trigger a manual run"
		}
	}
	return !exists
}

// probe is kubelet's prober.probe: nil spec → Success; up to 3 attempts while the attempt errors;
// Success and Warning → Success; Failure and Unknown → Failure.
func (m *probeManager) probe(ctx context.Context, spec *v1.Probe, t probes.Target) (messages.Result, error) {
	if spec == nil {
		return messages.Success, nil
	}
	var (
		out probes.Outcome
		err error
	)
	for i := 0; i < maxProbeRetries; i++ {
		if out, err = m.prober.Probe(ctx, spec, t); err == nil {
			break
		}
	}
	if err != nil {
		return messages.Failure, err
	}
	switch out.Result {
	case probes.Success, probes.Warning:
		return messages.Success, nil
	default:
		return messages.Failure, nil
	}
}

// probedContainers is kubelet's AddPod/RemovePod container set: containers, then sidecars.
func probedContainers(pod *v1.Pod) []*v1.Container {
	var cs []*v1.Container
	for i := range pod.Spec.Containers {
		cs = append(cs, &pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		if isRestartable(&pod.Spec.InitContainers[i]) {
			cs = append(cs, &pod.Spec.InitContainers[i])
		}
	}
	return cs
}
