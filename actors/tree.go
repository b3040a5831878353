package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/probeactor/probeactor/actors/internal/exec"
	"github.com/probeactor/probeactor/actors/internal/podrecord"
	"github.com/probeactor/probeactor/actors/internal/protocol"
	"github.com/probeactor/probeactor/actors/internal/supervision"
	"github.com/probeactor/probeactor/internal/podspec"
	"github.com/probeactor/probeactor/messages"
)

// defaultQueryTimeout bounds a query whose ctx has no deadline.
const defaultQueryTimeout = 10 * time.Second

// Tree is a running probe tree: root → probeManager (workers), resultsCache, statusManager,
// syncLoop. Its methods are safe for concurrent use and never block on the actors, except the
// queries (PodStatus, Result), which wait for the answer, and Stop.
type Tree struct {
	env *env

	// edge serialises the commands that copy pods, and added lists the pods AddPod gave the tree
	// (until CleanupPods drops them): statusManager reads their spec from that one copy, so
	// SetPodStatus does not copy them again.
	edge  sync.Mutex
	added map[types.UID]struct{}

	parent actor.SpawnerContext
	cfg    *config

	startOnce sync.Once
	startErr  error
	stopOnce  sync.Once
	stopErr   error
}

// Start spawns the tree under parent, which is the caller's sys.Root or an actor's Context: NewTree
// and Tree.Start in one call. The tree is stopped with Tree.Stop (or by stopping its parent actor).
func Start(parent actor.SpawnerContext, opts ...Option) (*Tree, error) {
	t, err := NewTree(parent, opts...)
	if err != nil {
		return nil, err
	}
	if err := t.Start(context.Background()); err != nil {
		return nil, err
	}
	return t, nil
}

// NewTree validates the options and returns a tree that runs nothing until Start: the form for a
// program that starts its parts in order (internal/lifecycle's contract: Start, then Stop). Every
// other method needs a started tree.
func NewTree(parent actor.SpawnerContext, opts ...Option) (*Tree, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Tree{parent: parent, cfg: cfg, added: map[types.UID]struct{}{}}, nil
}

// Start spawns the tree and returns once its root runs; it hands the runtime the tree's
// SetPodStatus (Runtime.ReportStatus). A second call returns the first one's result.
func (t *Tree) Start(context.Context) error {
	t.startOnce.Do(func() { t.startErr = t.start() })
	return t.startErr
}

func (t *Tree) start() error {
	parent, cfg := t.parent, t.cfg
	x := exec.New(exec.Config{Clock: cfg.clock, Shards: cfg.shards})
	q := new(queued)
	m, err := newMetrics(cfg.reg, func() float64 { return float64(x.Pending()) }, q)
	if err != nil {
		x.Stop()
		return err
	}
	var bm *budgetMetrics
	if cfg.budget != nil {
		if bm, err = newBudgetMetrics(cfg.reg); err != nil {
			x.Stop()
			m.unregister(cfg.reg)
			return err
		}
	}
	e := &env{
		cfg:     cfg,
		sys:     parent.ActorSystem(),
		log:     cfg.log.Named("probeactor"),
		slots:   newSlotPool(),
		queued:  q,
		metrics: m,
		start:   cfg.clock.Now(),

		budgetMetrics: bm,
		done:          make(chan struct{}),
	}
	cfg.exec = x
	ready := make(chan struct{})
	root := &rootActor{env: e, ready: ready}
	infraPolicy := cfg.policy
	infraPolicy.MaxFailures, infraPolicy.Window = 0, 0 // never give up on the tree's own actors
	infra, err := supervision.New(infraPolicy,
		supervision.WithClock(cfg.clock),
		supervision.WithRand(cfg.rand),
		supervision.WithLogger(e.log.Named("supervision")))
	if err != nil {
		return err
	}
	e.infra = infra
	props := e.props(nameRoot, func() actor.Actor { return root }, actor.WithSupervisor(infra))
	pid, err := parent.SpawnNamed(props, "probeactor"+e.sys.ProcessRegistry.NextId())
	if err != nil { // only if the registry already held the unique name
		x.Stop()
		m.unregister(cfg.reg)
		bm.unregister(cfg.reg)
		return fmt.Errorf("actors.Start: spawn root %s: %w", pid, err)
	}
	// The root's Started is the first message its mailbox handles (protoactor queues it at spawn,
	// before anything can stop the root), so this wait needs no timer.
	<-ready
	t.env = e
	cfg.runtime.ReportStatus(t.SetPodStatus)
	return nil
}

// AddPod starts probing a pod (kubelet's SyncPod → AddPod). Idempotent. It applies the API
// server's defaults and validation first, as node validate does (package internal/podspec: probe
// fields, restart policy, grace period, namespace; names, container names, env entries, every
// probe), then the runtime's own limits (PodValidator); a pod they refuse gets an error naming
// every offending field path (e.g. "spec.containers[0].livenessProbe.periodSeconds: Invalid value:
// -1: must be greater than or equal to 1") and nothing of it is started. The pod is not modified:
// the defaults go into the tree's copy, made here once and shared read-only by every actor. A pod
// needs a UID (every later call names the pod by it).
func (t *Tree) AddPod(pod *v1.Pod) error {
	if pod == nil {
		return errors.New("actors.AddPod: pod is nil")
	}
	rec := podrecord.New(pod)
	if errs := t.admit(rec, pod); len(errs) > 0 {
		return fmt.Errorf("actors.AddPod %s/%s: %w", pod.Namespace, pod.Name, errs.ToAggregate())
	}
	// The pod's workers are built here, on the caller's goroutine, and probeManager only spawns
	// them: every worker's spawn passes through probeManager's one goroutine, and that stage bounds
	// a large tree's set-up (ARCHITECTURE.md, "16 cores, measured again").
	probes := podrecord.Probes(rec)
	ws := make([]*workerActor, len(probes))
	for i, p := range probes {
		ws[i] = newWorkerActor(t.env, p.Key, rec, p.Container, p.Spec, p.Sidecar)
	}
	t.edge.Lock()
	defer t.edge.Unlock()
	t.env.send(t.env.root, &addPodCmd{pod: rec, probes: probes, workers: ws})
	t.added[pod.UID] = struct{}{}
	return nil
}

// admit defaults the tree's copy of pod and validates it: the API's rules, then the runtime's.
//
// The view is a value on the caller's stack (Validate keeps no pointer to it), copied to the heap
// only for a runtime's own validator, which may keep it. On the heap it cost every AddPod a
// 1,240-byte allocation on the caller's goroutine, one of the serial stages that bound a tree's
// set-up.
func (t *Tree) admit(rec *podrecord.Record, pod *v1.Pod) field.ErrorList {
	view := *rec.Pod() // shares rec's containers: the probe defaults land in rec
	podspec.SetDefaults(&view)
	rec.Namespace, rec.RestartPolicy = view.Namespace, view.Spec.RestartPolicy
	rec.TerminationGracePeriodSeconds = view.Spec.TerminationGracePeriodSeconds
	view.Spec.EphemeralContainers = pod.Spec.EphemeralContainers // validated, never probed nor kept
	errs := podspec.Validate(&view)
	if v, ok := t.env.cfg.runtime.(PodValidator); ok {
		kept := view
		errs = podspec.Unique(append(errs, v.ValidatePod(&kept)...))
	}
	return errs
}

// RemovePod stops every worker of a pod (kubelet's SyncTerminatingPod after the kill). Only the
// pod's identity (UID, name, namespace) is used.
func (t *Tree) RemovePod(pod *v1.Pod) {
	t.env.send(t.env.root, &removePod{uid: pod.UID})
}

// CleanupPods stops the workers of, and forgets, every pod not in desired.
func (t *Tree) CleanupPods(desired map[types.UID]struct{}) {
	d := make(map[types.UID]struct{}, len(desired))
	for k := range desired {
		d[k] = struct{}{}
	}
	t.edge.Lock()
	defer t.edge.Unlock()
	t.env.send(t.env.root, &protocol.CleanupPods{Desired: d})
	for uid := range t.added {
		if _, ok := d[uid]; !ok {
			delete(t.added, uid)
		}
	}
}

// StopLivenessAndStartup stops a terminating pod's liveness and startup workers (containers and
// sidecars); readiness keeps running. Only the pod's identity is used.
func (t *Tree) StopLivenessAndStartup(pod *v1.Pod) {
	t.env.send(t.env.root, &stopLivenessAndStartup{uid: pod.UID})
}

// SetPodStatus pushes the runtime's view of a pod (runtime → statusManager). The status is
// deep-copied, here, once; statusManager keeps that copy (and derives the workers' views from it).
// statusManager reads the pod's spec from the AddPod copy (kubelet's pod manager), so the pod is
// copied only when AddPod has not given it yet. As kubelet 1.37's statusManager, it sets the status's
// observedGeneration to the pod's generation; the ContainersReady and Ready conditions it derives
// carry it too.
func (t *Tree) SetPodStatus(pod *v1.Pod, status v1.PodStatus) {
	st := status.DeepCopy()
	st.ObservedGeneration = pod.Generation // kubelet 1.37's statusManager (PodObservedGenerationTracking, GA)
	t.edge.Lock()
	defer t.edge.Unlock()
	var p *podrecord.Record
	if _, ok := t.added[pod.UID]; !ok {
		p = podrecord.New(pod)
	}
	t.env.send(t.env.root, &setStatus{uid: pod.UID, pod: p, status: st})
}

// PodStatus returns statusManager's probe-adjusted status of a pod (Ready/Started overlaid,
// ContainersReady and Ready conditions recomputed); false when the pod has no status.
func (t *Tree) PodStatus(ctx context.Context, uid types.UID) (v1.PodStatus, bool, error) {
	res, err := t.request(ctx, &protocol.GetPodStatus{PodUID: uid})
	if err != nil {
		return v1.PodStatus{}, false, err
	}
	r, ok := res.(*protocol.PodStatusResponse)
	if !ok {
		return v1.PodStatus{}, false, fmt.Errorf("pod status query: unexpected answer %T", res)
	}
	return r.Status, r.Found, nil
}

// PodStatuses returns the probe-adjusted statuses of the given pods in one query (cheaper than a
// PodStatus per pod for a whole pod list); pods without a status are absent from the map.
func (t *Tree) PodStatuses(ctx context.Context, uids ...types.UID) (map[types.UID]v1.PodStatus, error) {
	res, err := t.request(ctx, &protocol.GetPodStatuses{PodUIDs: uids})
	if err != nil {
		return nil, err
	}
	r, ok := res.(*protocol.PodStatusesResponse)
	if !ok {
		return nil, fmt.Errorf("pod statuses query: unexpected answer %T", res)
	}
	return r.Statuses, nil
}

// Result returns the cached result of a container's probe.
func (t *Tree) Result(ctx context.Context, id messages.ContainerID, pt messages.ProbeType) (messages.Result, bool, error) {
	res, err := t.request(ctx, &protocol.GetResult{ContainerID: id, Type: pt})
	if err != nil {
		return messages.Unknown, false, err
	}
	r, ok := res.(*protocol.ResultResponse)
	if !ok {
		return messages.Unknown, false, fmt.Errorf("result query: unexpected answer %T", res)
	}
	return r.Result, r.Found, nil
}

// ContainerStartups returns, for each given pod that has any, how long each of its running
// container instances took from its start to Started and to Ready (the first time each, after
// that start): what probeactor_container_time_to_started_seconds and ..._ready_seconds observe,
// per container (node's status page). One query for all of them.
func (t *Tree) ContainerStartups(ctx context.Context, uids ...types.UID) (map[types.UID][]messages.ContainerStartup, error) {
	res, err := t.request(ctx, &protocol.GetContainerStartups{PodUIDs: uids})
	if err != nil {
		return nil, err
	}
	r, ok := res.(*protocol.ContainerStartupsResponse)
	if !ok {
		return nil, fmt.Errorf("container startups query: unexpected answer %T", res)
	}
	return r.Startups, nil
}

// ProbeStates returns the state of each probe worker of a pod (node describe's streaks, last
// attempts, holds and next runs), sorted by container and probe type; none when the pod has no
// workers. Each worker answers for itself, so the states are not one snapshot: a probe may
// advance between two of them.
func (t *Tree) ProbeStates(ctx context.Context, uid types.UID) ([]messages.ProbeState, error) {
	res, err := t.request(ctx, &protocol.GetProbeKeys{PodUID: uid})
	if err != nil {
		return nil, err
	}
	keys, ok := res.(*protocol.ProbeKeysResponse)
	if !ok {
		return nil, fmt.Errorf("probe keys query: unexpected answer %T", res)
	}
	out := make([]messages.ProbeState, 0, len(keys.Keys))
	for _, k := range keys.Keys {
		res, err := t.request(ctx, &protocol.GetProbeState{Key: k})
		if err != nil {
			return nil, err
		}
		r, ok := res.(*protocol.ProbeStateResponse)
		if !ok {
			return nil, fmt.Errorf("probe state query: unexpected answer %T", res)
		}
		if r.Found { // else the worker stopped since
			out = append(out, r.State)
		}
	}
	slices.SortFunc(out, func(a, b messages.ProbeState) int {
		if c := strings.Compare(a.Key.Container, b.Key.Container); c != 0 {
			return c
		}
		return int(a.Key.Type) - int(b.Key.Type)
	})
	return out, nil
}

// Stop stops the whole tree and waits until every actor, attempt goroutine, kill goroutine and
// timer of it is gone, or until ctx ends (the tree then goes on stopping; protoactor's stop future
// gives up after 10 s). Calling it again returns the first call's result at once (without
// poisoning a root that is gone, which would be a dead letter). A tree never started has nothing
// to stop.
func (t *Tree) Stop(ctx context.Context) error {
	t.stopOnce.Do(func() {
		if t.env == nil {
			return
		}
		t.env.cfg.runtime.ReportStatus(nil) // statuses pushed while the tree stops would be dead letters
		done := make(chan error, 1)
		go func() { // ends within protoactor's 10 s stop future, and once the subscriptions ended
			if err := t.env.sys.Root.PoisonFuture(t.env.root).Wait(); err != nil {
				done <- fmt.Errorf("stop probe tree: %w", err)
				return
			}
			t.env.subs.Wait() // SubscribeFunc's goroutines end with the tree's done
			done <- nil
		}()
		select {
		case t.stopErr = <-done:
		case <-ctx.Done():
			t.stopErr = fmt.Errorf("stop probe tree: %w", ctx.Err())
		}
	})
	return t.stopErr
}

// Check reports whether the tree's own actors handle their messages: it sends each of them in turn
// (root, resultsCache, probeManager, statusManager, syncLoop) protoactor's Touch, which an actor
// answers once it has handled what its mailbox held before, and returns an error naming the first
// that does not answer within ctx (defaultQueryTimeout without a deadline): a handler that is
// stuck, a mailbox that does not drain, a tree that stopped or never started. Workers are not
// asked: they can number a million, and each is supervised by probeManager, which is. It is
// node's /healthz/probe-tree and what its systemd watchdog waits for, as kubelet's syncloop check.
func (t *Tree) Check(ctx context.Context) error {
	if t.env == nil || t.env.root == nil {
		return errors.New("probe tree: not started")
	}
	for _, a := range []struct {
		name string
		pid  *actor.PID
	}{{nameRoot, t.env.root}, {nameCache, t.env.cache}, {nameManager, t.env.manager}, {nameStatus, t.env.status}, {nameSync, t.env.sync}} {
		if _, err := t.requestTo(ctx, a.pid, &actor.Touch{}); err != nil {
			return fmt.Errorf("%s did not answer: %w", a.name, err)
		}
	}
	return nil
}

// request sends msg to the root on behalf of a one-shot reply process and waits for the answer,
// ctx's end, or defaultQueryTimeout when ctx has no deadline. Nothing outlives the call: the reply
// process is unregistered on return (a late answer becomes a dead letter) and no goroutine or timer
// is left waiting, unlike a protoactor Future, whose Result blocks until its own timeout.
func (t *Tree) request(ctx context.Context, msg any) (any, error) {
	return t.requestTo(ctx, t.env.root, msg)
}

// requestTo is request to the actor at to.
func (t *Tree) requestTo(ctx context.Context, to *actor.PID, msg any) (any, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultQueryTimeout)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("probe tree query %T: %w", msg, err)
	}
	reg := t.env.sys.ProcessRegistry
	reply := &replyProcess{ch: make(chan any, 1)}
	pid, ok := reg.Add(reply, "probeactor-query"+reg.NextId())
	if !ok {
		return nil, fmt.Errorf("probe tree query %T: reply process %s already registered", msg, pid)
	}
	defer reg.Remove(pid)
	t.env.sys.Root.RequestWithCustomSender(to, msg, pid)
	select {
	case res := <-reply.ch:
		if _, dead := res.(*actor.DeadLetterResponse); dead {
			return nil, fmt.Errorf("probe tree query %T: tree stopped: %w", msg, actor.ErrDeadLetter)
		}
		return res, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("probe tree query %T: %w", msg, ctx.Err())
	}
}

// replyProcess receives the one answer to a Tree query. It never blocks: a second message (there is
// none in the protocol) is dropped.
type replyProcess struct{ ch chan any }

func (r *replyProcess) SendUserMessage(_ *actor.PID, message any) {
	select {
	case r.ch <- actor.UnwrapEnvelopeMessage(message):
	default:
	}
}

func (r *replyProcess) SendSystemMessage(*actor.PID, any) {}

func (r *replyProcess) Stop(*actor.PID) {}
