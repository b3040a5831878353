package actors

import (
	"fmt"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/podstatus"
	"github.com/probeactor/probeactor/actors/supervision"
	"github.com/probeactor/probeactor/messages"
)

// managerActor is the probeManager: the supervisor of one worker per ProbeKey. It keeps the latest
// probe-adjusted status per pod so a new worker starts with its container view, forwards pushed
// views and readiness triggers to the workers of a pod, and tells statusManager which workers exist.
type managerActor struct {
	env      *env
	log      hclog.Logger
	strategy *supervision.Strategy

	workers  map[messages.ProbeKey]*actor.PID
	byID     map[string]messages.ProbeKey // worker PID.Id → key
	pods     map[types.UID]map[messages.ProbeKey]struct{}
	statuses map[types.UID]*v1.PodStatus
	names    map[types.UID]types.NamespacedName // for events, while the pod has workers
	givenUp  map[string]any                     // worker PID.Id → last panic, for workers the strategy gave up on
	stopSent map[string]struct{}                // worker PID.Id → told to stop (by us or the strategy), until Terminated
}

func newManagerProps(e *env) *actor.Props {
	m := &managerActor{
		env:      e,
		log:      e.log.Named(nameManager),
		workers:  map[messages.ProbeKey]*actor.PID{},
		byID:     map[string]messages.ProbeKey{},
		pods:     map[types.UID]map[messages.ProbeKey]struct{}{},
		statuses: map[types.UID]*v1.PodStatus{},
		names:    map[types.UID]types.NamespacedName{},
		givenUp:  map[string]any{},
		stopSent: map[string]struct{}{},
	}
	// The give-up callback runs on this actor's goroutine (while it handles the child's failure), so
	// it may touch m directly; the follow-up happens when the child's Terminated arrives.
	s, err := supervision.New(e.cfg.policy,
		supervision.WithClock(e.cfg.clock),
		supervision.WithRand(e.cfg.rand),
		supervision.WithLogger(e.log.Named("supervision")),
		supervision.OnGiveUp(func(child *actor.PID, reason any) {
			m.givenUp[child.Id] = reason
			m.stopSent[child.Id] = struct{}{} // the strategy stopped it
		}),
		supervision.Resume())
	if err != nil { // the policy was validated in newConfig
		panic(fmt.Sprintf("probeManager supervision: %v", err))
	}
	m.strategy = s
	e.supervisor = s
	e.workerProps = newWorkerProps(e, s)
	return e.props(func() actor.Actor { return m }, actor.WithSupervisor(s))
}

func (m *managerActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *messages.AddPod:
		m.addPod(ctx, msg.Pod)
	case *messages.RemovePod:
		m.stopWhere(ctx, msg.Pod.UID, func(messages.ProbeKey) bool { return true })
	case *messages.StopLivenessAndStartup:
		// Containers and sidecars (kubelet 1.30–1.35 skips sidecars; PR #141766 adds them).
		m.stopWhere(ctx, msg.Pod.UID, func(k messages.ProbeKey) bool { return k.Type != messages.Readiness })
	case *messages.CleanupPods:
		for uid := range m.pods {
			if _, ok := msg.Desired[uid]; !ok {
				m.stopWhere(ctx, uid, func(messages.ProbeKey) bool { return true })
			}
		}
		for uid := range m.statuses {
			if _, ok := msg.Desired[uid]; !ok {
				delete(m.statuses, uid)
			}
		}
	case *messages.PodStatusChanged:
		st := msg.Status
		m.statuses[msg.PodUID] = &st
		for k := range m.pods[msg.PodUID] {
			v := viewFor(&st, k.Container)
			m.env.tell(ctx, m.workers[k], &v)
		}
	case *messages.TriggerReadiness:
		k := messages.ProbeKey{PodUID: msg.PodUID, Container: msg.Container, Type: messages.Readiness}
		if pid, ok := m.workers[k]; ok {
			m.env.tell(ctx, pid, msg)
		}
	case *exitWorker:
		m.stop(ctx, msg.pid)
	case *actor.Terminated:
		m.terminated(ctx, msg.Who)
	case *countWorkers:
		ctx.Respond(len(m.workers))
	case *inspectWorker:
		if pid, ok := m.workers[msg.key]; ok {
			ctx.Forward(pid)
		} else {
			ctx.Respond(&workerInfo{})
		}
	case *actor.Stopping:
		m.strategy.Stop()
	default:
	}
}

// exitWorker is a worker's request to be stopped (its doProbe said "exit"): worker → probeManager,
// which alone stops workers, so no worker is ever told to stop twice (a dead letter once it is gone).
type exitWorker struct{ pid *actor.PID }

// countWorkers asks probeManager for its number of workers (tests, Stats): answered with an int.
type countWorkers struct{}

// inspectWorker asks a worker (through probeManager) for a workerInfo snapshot; a missing worker
// answers the zero workerInfo. Used by tests as a sync point.
type inspectWorker struct{ key messages.ProbeKey }

// workerInfo is a worker's state snapshot.
type workerInfo struct {
	Exists      bool
	Busy        bool // a doProbe run (attempt) is in progress
	ContainerID messages.ContainerID
	ResultRun   int
	OnHold      bool
}

// workerName is the deterministic child name of a key: "<uid>.<container>.<type>" (container names
// are DNS labels and cannot contain dots).
func workerName(k messages.ProbeKey) string {
	return fmt.Sprintf("%s.%s.%s", k.PodUID, k.Container, strings.ToLower(k.Type.String()))
}

// podProbe is one probe of a pod that kubelet's AddPod runs a worker for.
type podProbe struct {
	key       messages.ProbeKey
	container *v1.Container
	spec      *v1.Probe
	sidecar   bool
}

// podProbes lists the probes kubelet's AddPod creates workers for, in its order: regular containers,
// then restartable init containers (sidecars); per container startup, readiness, liveness. Plain
// init containers are never probed.
func podProbes(pod *v1.Pod) []podProbe {
	var out []podProbe
	add := func(c *v1.Container, sidecar bool) {
		for _, t := range messages.ProbeTypes {
			if spec := t.Spec(c); spec != nil {
				out = append(out, podProbe{key: messages.ProbeKey{PodUID: pod.UID, Container: c.Name, Type: t},
					container: c, spec: spec, sidecar: sidecar})
			}
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i], false)
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; podstatus.IsRestartable(c) {
			add(c, true)
		}
	}
	return out
}

// fieldPath is an event's container reference: "spec.containers{name}", or
// "spec.initContainers{name}" for a sidecar.
func fieldPath(container string, sidecar bool) string {
	if sidecar {
		return "spec.initContainers{" + container + "}"
	}
	return "spec.containers{" + container + "}"
}

// addPod spawns a worker for every probe without one. Unlike kubelet 1.30–1.33 it continues past
// keys that already have a worker (kubelet post-1.35 behaviour).
func (m *managerActor) addPod(ctx actor.Context, pod *v1.Pod) {
	added := false
	for _, p := range podProbes(pod) {
		k := p.key
		if _, ok := m.workers[k]; ok {
			continue
		}
		w := newWorkerActor(m.env, k, pod, p.container, p.spec, p.sidecar, viewFor(m.statuses[pod.UID], k.Container))
		m.env.spawning = w
		pid, err := ctx.SpawnNamed(m.env.workerProps, workerName(k))
		m.env.spawning = nil
		if err != nil {
			// A worker of this name is still stopping; the next AddPod creates it (as kubelet).
			m.log.Debug("worker still exiting", "pod_uid", pod.UID, "container", k.Container, "probe", k.Type, "error", err)
			continue
		}
		m.workers[k] = pid
		m.byID[pid.Id] = k
		if m.pods[pod.UID] == nil {
			m.pods[pod.UID] = map[messages.ProbeKey]struct{}{}
		}
		m.pods[pod.UID][k] = struct{}{}
		added = true
	}
	if added {
		m.names[pod.UID] = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		m.notifyWorkers(ctx, pod.UID)
	}
}

// stopWhere stops the pod's workers whose key matches. Stopping is asynchronous: a worker leaves
// the maps when its Terminated arrives (kubelet: workers remove themselves when they exit).
func (m *managerActor) stopWhere(ctx actor.Context, uid types.UID, match func(messages.ProbeKey) bool) {
	for k := range m.pods[uid] {
		if match(k) {
			m.stop(ctx, m.workers[k])
		}
	}
}

// stop stops a worker once; it leaves the maps when its Terminated arrives.
func (m *managerActor) stop(ctx actor.Context, pid *actor.PID) {
	if _, sent := m.stopSent[pid.Id]; sent {
		return
	}
	m.stopSent[pid.Id] = struct{}{}
	ctx.Stop(pid)
}

func (m *managerActor) terminated(ctx actor.Context, who *actor.PID) {
	delete(m.stopSent, who.Id)
	k, ok := m.byID[who.Id]
	if !ok {
		return
	}
	m.strategy.Forget(who)
	delete(m.byID, who.Id)
	delete(m.workers, k)
	delete(m.pods[k.PodUID], k)
	if len(m.pods[k.PodUID]) == 0 {
		delete(m.pods, k.PodUID)
	}
	if reason, ok := m.givenUp[who.Id]; ok {
		delete(m.givenUp, who.Id)
		m.reportGaveUp(ctx, k, reason)
	}
	if _, ok := m.pods[k.PodUID]; !ok {
		delete(m.names, k.PodUID)
	}
	m.notifyWorkers(ctx, k.PodUID)
}

// reportGaveUp publishes Unknown for a key whose worker failed too often. The worker's own cleanup
// (RemoveResult on Stopping) was queued at the cache before its Terminated reached us, so this Set
// lands after it.
func (m *managerActor) reportGaveUp(ctx actor.Context, k messages.ProbeKey, reason any) {
	v := viewFor(m.statuses[k.PodUID], k.Container)
	m.log.Error("probe worker failed too often; reporting Unknown", "pod_uid", k.PodUID, "container", k.Container,
		"probe", k.Type, "reason", fmt.Sprint(reason))
	if v.Found {
		m.env.tell(ctx, m.env.cache, &messages.SetResult{PodUID: k.PodUID, Container: k.Container, ContainerID: v.ContainerID,
			Type: k.Type, Result: messages.Unknown})
	}
	m.env.cfg.sink.Event(messages.Event{
		Time:    m.env.now(),
		Type:    v1.EventTypeWarning,
		Reason:  messages.ReasonProbeWorkerGaveUp,
		Message: fmt.Sprintf("%s probe worker failed too often and was stopped; result is Unknown: %v", k.Type, reason),
		Pod:     m.names[k.PodUID],
		PodUID:  k.PodUID,
	})
}

func (m *managerActor) notifyWorkers(ctx actor.Context, uid types.UID) {
	keys := make([]messages.ProbeKey, 0, len(m.pods[uid]))
	for k := range m.pods[uid] {
		keys = append(keys, k)
	}
	m.env.tell(ctx, m.env.status, &messages.ProbeWorkers{PodUID: uid, Keys: keys})
}

// viewFor is what a worker of container name reads from a pod status (doProbe steps 1–3, 6, 8, 9):
// the status by name in containerStatuses, else (or when its ID is empty) in initContainerStatuses.
func viewFor(st *v1.PodStatus, name string) messages.ContainerView {
	if st == nil {
		return messages.ContainerView{}
	}
	v := messages.ContainerView{PodStatusKnown: true, Phase: st.Phase, PodIP: st.PodIP}
	cs := findStatus(st.ContainerStatuses, name)
	if cs == nil || cs.ContainerID == "" {
		cs = findStatus(st.InitContainerStatuses, name)
	}
	if cs == nil || cs.ContainerID == "" {
		return v
	}
	v.Found = true
	v.ContainerID = messages.ContainerID(cs.ContainerID)
	if r := cs.State.Running; r != nil {
		v.Running = true
		v.StartedAt = r.StartedAt.Time
	}
	v.Terminated = cs.State.Terminated != nil
	v.Started = cs.Started != nil && *cs.Started
	return v
}

func findStatus(ss []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range ss {
		if ss[i].Name == name {
			return &ss[i]
		}
	}
	return nil
}
