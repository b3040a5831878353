package kubeletstyle

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Prober runs one probe attempt: the same interface the actor core takes (actors.Prober).
type Prober interface {
	Probe(ctx context.Context, spec *v1.Probe, t probes.Target) (probes.Outcome, error)
}

// Runtime kills (and restarts) containers whose liveness or startup probe failed: the same method the
// actor core's actors.Runtime has. It reports the new container afterwards through SetPodStatus.
type Runtime interface {
	KillContainer(ctx context.Context, req messages.KillContainer) error
}

// Options configures a Kubelet.
type Options struct {
	Prober  Prober  // required
	Runtime Runtime // required
	// Rand is the jitter source in [0, 1) for workers created within one period of Start; default
	// math/rand/v2.Float64.
	Rand func() float64
	// JitterWindow widens kubelet's jitter rule to the workers created within max(JitterWindow,
	// period) of Start, as actors.WithStartupJitterWindow does (0: kubelet's rule). The benchmarks
	// use it so that both designs get the same schedule whatever their set-up speed.
	JitterWindow time.Duration
	// OnUpdate, if set, is called by the consumer goroutine for every update it drains, after handling
	// it. It runs on the syncLoop: a slow OnUpdate is a slow syncLoop.
	OnUpdate func(messages.ProbeType, Update)
	// OnBlocked, if set, is called by a worker after it waited d for room in a full results channel
	// (measurement only; the wait itself is kubelet's).
	OnBlocked func(d time.Duration)
	// OnKillError, if set, receives errors returned by Runtime.KillContainer (default: dropped).
	OnKillError func(messages.KillContainer, error)
}

// Kubelet is the whole baseline subsystem: probe manager, workers, three results managers, the status
// manager and the syncLoop consumer.
type Kubelet struct {
	opts   Options
	pm     *probeManager
	status *statusManager
	quit   chan struct{}

	wg         sync.WaitGroup // workers and the syncLoop
	killWG     sync.WaitGroup
	killCtx    context.Context
	killCancel context.CancelFunc
	stopOnce   sync.Once
}

// Start builds the subsystem and starts its syncLoop goroutine.
func Start(opts Options) (*Kubelet, error) {
	if opts.Prober == nil {
		return nil, errors.New("kubeletstyle: Options.Prober is required")
	}
	if opts.Runtime == nil {
		return nil, errors.New("kubeletstyle: Options.Runtime is required")
	}
	if opts.Rand == nil {
		opts.Rand = rand.Float64
	}
	k := &Kubelet{opts: opts, status: newStatusManager(), quit: make(chan struct{})}
	k.killCtx, k.killCancel = context.WithCancel(context.Background())
	k.pm = &probeManager{
		workers:   make(map[probeKey]*worker),
		liveness:  newResultsManager(k.quit, opts.OnBlocked),
		readiness: newResultsManager(k.quit, opts.OnBlocked),
		startup:   newResultsManager(k.quit, opts.OnBlocked),
		status:    k.status,
		prober:    opts.Prober,
		start:     time.Now(),
		rand:      opts.Rand,
		jitter:    opts.JitterWindow,
		quit:      k.quit,
		wg:        &k.wg,
	}
	k.wg.Add(1)
	go k.syncLoop()
	return k, nil
}

// AddPod registers the pod and starts its probe workers (kubelet's SyncPod → probeManager.AddPod).
// It never refuses a pod: kubelet's pods were validated by the API server.
func (k *Kubelet) AddPod(pod *v1.Pod) error {
	k.status.addPod(pod)
	k.pm.AddPod(pod)
	return nil
}

// RemovePod stops the pod's workers and forgets the pod (SyncTerminatingPod → RemovePod).
func (k *Kubelet) RemovePod(pod *v1.Pod) {
	k.pm.RemovePod(pod)
	k.status.removePod(pod.UID)
}

// CleanupPods stops the workers of every pod not in desired (HandlePodCleanups).
func (k *Kubelet) CleanupPods(desired map[types.UID]struct{}) { k.pm.CleanupPods(desired) }

// StopLivenessAndStartup stops a terminating pod's liveness and startup workers.
func (k *Kubelet) StopLivenessAndStartup(pod *v1.Pod) { k.pm.StopLivenessAndStartup(pod) }

// SetPodStatus is the runtime's view of the pod; like kubelet's generateAPIPodStatus it is overlaid
// with the probe results (UpdatePodStatus) and cached with regenerated conditions.
func (k *Kubelet) SetPodStatus(pod *v1.Pod, status v1.PodStatus) {
	st := *status.DeepCopy()
	k.pm.UpdatePodStatus(pod, &st)
	k.status.setPodStatus(pod, st)
}

// PodStatus returns the cached, probe-adjusted status.
func (k *Kubelet) PodStatus(uid types.UID) (v1.PodStatus, bool) {
	st, ok := k.status.GetPodStatus(uid)
	if !ok {
		return v1.PodStatus{}, false
	}
	return *st.DeepCopy(), true
}

// Result returns the cached result of one probe type for a container.
func (k *Kubelet) Result(id messages.ContainerID, pt messages.ProbeType) (messages.Result, bool) {
	switch pt {
	case messages.Liveness:
		return k.pm.liveness.Get(id)
	case messages.Readiness:
		return k.pm.readiness.Get(id)
	case messages.Startup:
		return k.pm.startup.Get(id)
	default:
		return messages.Unknown, false
	}
}

// WorkerCount is the number of live workers.
func (k *Kubelet) WorkerCount() int { return k.pm.workerCount() }

// Stop ends every goroutine of the subsystem and waits for them (kubelet itself never stops).
func (k *Kubelet) Stop() {
	k.stopOnce.Do(func() {
		k.pm.workerLock.Lock() // no AddPod can start a worker after this
		close(k.quit)
		k.pm.workerLock.Unlock()
		k.killCancel()
		k.wg.Wait()
		k.killWG.Wait()
	})
}

// syncLoop is the consumer: kubelet's syncLoopIteration cases for the three updates channels.
func (k *Kubelet) syncLoop() {
	defer k.wg.Done()
	for {
		var (
			u  Update
			pt messages.ProbeType
		)
		select {
		case <-k.quit:
			return
		case u = <-k.pm.liveness.updates:
			pt = messages.Liveness
			if u.Result == messages.Failure {
				k.handleProbeSync(u, pt)
			}
		case u = <-k.pm.readiness.updates:
			pt = messages.Readiness
			k.status.SetContainerReadiness(u.PodUID, u.ContainerID, u.Result == messages.Success)
		case u = <-k.pm.startup.updates:
			pt = messages.Startup
			k.status.SetContainerStartup(u.PodUID, u.ContainerID, u.Result == messages.Success)
			if u.Result == messages.Failure {
				k.handleProbeSync(u, pt)
			}
		}
		if k.opts.OnUpdate != nil {
			k.opts.OnUpdate(pt, u)
		}
	}
}

// handleProbeSync plays the part of the pod sync that follows a liveness/startup Failure
// (computePodActions): kill the running container, and restart it unless restartPolicy is Never. The
// kill runs in the background, as kubelet's pod workers do it off the syncLoop.
func (k *Kubelet) handleProbeSync(u Update, pt messages.ProbeType) {
	pod, ok := k.status.getPod(u.PodUID)
	if !ok {
		return // "SyncLoop (probe): ignore irrelevant update"
	}
	st, ok := k.status.GetPodStatus(u.PodUID)
	if !ok {
		return
	}
	cs := findByID(&st, u.ContainerID)
	if cs == nil || cs.State.Running == nil {
		return
	}
	spec := findContainer(pod, cs.Name)
	if spec == nil {
		return
	}
	restart := pod.Spec.RestartPolicy != v1.RestartPolicyNever || isRestartable(spec)
	msg := fmt.Sprintf("Container %s failed %s probe", cs.Name, map[messages.ProbeType]string{messages.Liveness: "liveness", messages.Startup: "startup"}[pt])
	if restart {
		msg += ", will be restarted"
	}
	req := messages.KillContainer{
		Pod: pod, Container: cs.Name, ContainerID: u.ContainerID, Probe: pt,
		Message: msg, GracePeriod: gracePeriod(pod, pt.Spec(spec)), Restart: restart,
	}
	k.killWG.Add(1)
	go func() {
		defer k.killWG.Done()
		if err := k.opts.Runtime.KillContainer(k.killCtx, req); err != nil && k.opts.OnKillError != nil {
			k.opts.OnKillError(req, err)
		}
	}()
}

func findContainer(pod *v1.Pod, name string) *v1.Container {
	for _, c := range probedContainers(pod) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// gracePeriod is kuberuntime's setTerminationGracePeriod (§4.3) without the deletion branch.
func gracePeriod(pod *v1.Pod, spec *v1.Probe) time.Duration {
	secs := int64(30)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		secs = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.DeletionGracePeriodSeconds != nil {
		secs = *pod.DeletionGracePeriodSeconds
	} else if spec != nil && spec.TerminationGracePeriodSeconds != nil {
		secs = *spec.TerminationGracePeriodSeconds
	}
	return time.Duration(secs) * time.Second
}
