package proc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/probeactor/probeactor/features"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/internal/podspec"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
)

// CrashLoopBackOff defaults kubelet uses.
const (
	DefaultInitialBackoff = 10 * time.Second
	DefaultMaxBackoff     = 5 * time.Minute
)

// EventSink receives the runtime's events (Created, Started, Killing, BackOff, Failed). It must not block.
type EventSink interface{ Event(messages.Event) }

// Options configure a Runtime.
type Options struct {
	RootDir string   // logs go to <RootDir>/pods/<ns>_<name>_<uid>/<container>/<restartCount>.log
	Shim    []string // the command line that runs ShimMain; default: this executable + ShimArg
	Clock   clock.Clock
	Logger  hclog.Logger
	Events  EventSink

	InitialBackoff, MaxBackoff time.Duration // CrashLoopBackOff; defaults 10 s and 5 min

	// Gates are node's feature gates (--feature-gates): ValidatePod refuses a field whose gate is
	// off; RestartAllContainersOnContainerExits off, a pod restarts no other container for a rule
	// (such a rule is refused anyway).
	Gates features.Gates

	// ReattachTimeout is how long a container outlives node: its shim waits that long for a node
	// to connect again once node's connection closed (node died, or Detach), then stops it with
	// its pod's grace period. 0 (the default): containers die with node. Negative is an error.
	ReattachTimeout time.Duration
}

// Runtime runs pods as local processes. It implements actors.Runtime (KillContainer,
// ReportStatus, RunInContainer), actors.PodValidator (ValidatePod) and lifecycle.Component (Start,
// Stop). Each pod has one goroutine that owns its podState and processes; everything else talks to
// it through the podMessage values posted to its inbox. Subscribe publishes every pod's start,
// status changes and removal.
type Runtime struct {
	opts        Options
	log         hclog.Logger
	runner      probes.LocalRunner
	guard       *guard // kills what exec probes forked should node die; ended by Stop
	subscribers subscribers

	// push receives each pod's new status whenever it changes (the tree's SetPodStatus, given by
	// ReportStatus). It is called from the pod's own goroutine, one call at a time per pod; it must
	// not block for long.
	push atomic.Pointer[func(pod *v1.Pod, status v1.PodStatus)]

	mu       sync.Mutex
	pods     map[types.UID]*podRunner
	byID     map[string]containerRef // container ID → where it runs (for exec probes)
	closed   bool
	detached bool
	// lease is node's cluster lease (SetLease) as a CLOCK_MONOTONIC deadline in ns, 0 before
	// the first SetLease. Every shim holds it; once it has passed no container starts.
	lease int64

	// What Start found of an earlier node: pods by UID until Run claims them or StopOrphans stops
	// them; shims to stop (those no valid record claims, and those an earlier StopOrphans could
	// not stop); records that could not be used.
	recovered  map[types.UID]*recoveredPod
	orphans    []orphanShim
	badRecords []string

	// stops ends with Detach: the stops of an earlier node's containers (StopOrphans, a replaced
	// pod) and a pod waiting for them give up then.
	stops     context.Context
	endStops  context.CancelFunc
	shimsDir  string // <RootDir>/shims (0700): every shim's socket
	statesDir string // <RootDir>/state: one record per pod
}

// containerRef is what an exec probe needs to run "in" a container, what SetLease needs to
// renew its shim's lease, and what Running lists.
type containerRef struct {
	env   []string
	dir   string
	proc  *process
	grace time.Duration // of the shim's stop at the lease's end: the pod's grace period
	pod   *v1.Pod
	name  string    // the container's
	start time.Time // the instance's
}

// RunningContainer is one running container instance, as Running lists it.
type RunningContainer struct {
	Pod       *v1.Pod // the pod's object as Run got it: read only
	Container string
	ID        string    // its container ID
	PID       int       // its main process
	ShimPID   int       // its shim's (the subreaper of what it forks); 0 when unknown
	StartedAt time.Time // the instance's start
}

// Running lists the container instances that run now (started or adopted), in no order: what
// node's resource metrics measure.
func (r *Runtime) Running() []RunningContainer {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]RunningContainer, 0, len(r.byID))
	for id, ref := range r.byID {
		if ref.pod == nil {
			continue
		}
		out = append(out, RunningContainer{Pod: ref.pod, Container: ref.name, ID: id, PID: ref.proc.pid, ShimPID: ref.proc.shim, StartedAt: ref.start})
	}
	return out
}

// New returns an empty Runtime.
func New(opts Options) (*Runtime, error) {
	if opts.RootDir == "" {
		return nil, errors.New("proc: RootDir is required")
	}
	if len(opts.Shim) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable for the container shim: %w", err)
		}
		opts.Shim = []string{exe, ShimArg}
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.InitialBackoff <= 0 {
		opts.InitialBackoff = DefaultInitialBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.ReattachTimeout < 0 {
		return nil, fmt.Errorf("proc: ReattachTimeout %s is negative", opts.ReattachTimeout)
	}
	r := &Runtime{opts: opts, log: opts.Logger.Named("runtime"), pods: map[types.UID]*podRunner{}, byID: map[string]containerRef{},
		recovered: map[types.UID]*recoveredPod{},
		shimsDir:  filepath.Join(opts.RootDir, "shims"), statesDir: filepath.Join(opts.RootDir, "state")}
	r.stops, r.endStops = context.WithCancel(context.Background())
	r.guard = &guard{exe: opts.Shim[0], log: r.log}
	r.runner = probes.LocalRunner{Resolve: r.resolve}
	return r, nil
}

// ReportStatus implements actors.Runtime: push receives every pod's status change from now on (nil:
// nobody).
func (r *Runtime) ReportStatus(push func(pod *v1.Pod, status v1.PodStatus)) {
	if push == nil {
		r.push.Store(nil)
		return
	}
	r.push.Store(&push)
}

// ValidatePod implements actors.PodValidator: the process runtime's limits (Validate).
func (r *Runtime) ValidatePod(pod *v1.Pod) field.ErrorList {
	return append(podspec.ValidateGates(pod, r.opts.Gates), Validate(pod)...)
}

// StartupSucceeded tells the runtime that the startup probe of container (instance containerID) of
// pod uid passed: a sidecar waiting for it counts as started, and the containers after it may
// start. node calls it from its subscription to the tree's startup results; nothing else makes a
// sidecar with a startup probe start. Unknown pods, containers and stale instances are ignored.
func (r *Runtime) StartupSucceeded(uid types.UID, container, containerID string) {
	r.mu.Lock()
	pr, ok := r.pods[uid]
	r.mu.Unlock()
	if ok {
		pr.post(startupSucceeded{name: container, id: containerID})
	}
}

// ErrUnknownPod is returned for a pod the runtime does not run.
var ErrUnknownPod = errors.New("unknown pod")

// ErrClosed is returned by Run after Shutdown or Detach began, and by Terminate and Remove after
// Detach.
var ErrClosed = errors.New("runtime is shutting down")

// ProbeResult tells the runtime the latest readiness or startup result (probe; liveness is
// ignored) of container (instance containerID) of pod uid. The runtime keeps it in the pod's
// record, so that the next node reports an instance it adopts as ready and started as this node
// last saw it (kubelet 1.35+, KEP-4781). node calls it from its subscription to the tree's
// results. Unknown pods, containers and stale instances are ignored.
func (r *Runtime) ProbeResult(uid types.UID, container, containerID string, probe messages.ProbeType, success bool) {
	r.mu.Lock()
	pr, ok := r.pods[uid]
	r.mu.Unlock()
	if ok {
		pr.post(probeResult{name: container, id: containerID, probe: probe, success: success})
	}
}

// Run starts pod's containers. The pod must be valid (see Validate) and have a UID. Subscribers
// hear PodStarted before Run returns, and before any status of the pod.
//
// A pod an earlier node ran (Start found its record) is adopted when its spec is the same: its
// running containers are taken over as they are (same container IDs, start times, restart counts,
// back-off and logs; no new process, no Started event), the ones that ended meanwhile are handled
// as any exit. With another spec it is replaced: the old containers are stopped with the recorded
// grace period, then the pod starts afresh.
func (r *Runtime) Run(pod *v1.Pod) error {
	pr, err := r.add(pod.DeepCopy())
	if err != nil {
		return err
	}
	// The pod's goroutine starts only now, so its first status follows PodStarted. Meanwhile
	// messages for it (Terminate, ...) wait in its inbox.
	r.subscribers.publish(PodEvent{Kind: PodStarted, Pod: pr.pod})
	go pr.loop() // ends once the pod was terminated and every process reaped
	return nil
}

// add lists a new pod and prepares its runner, whose loop the caller starts.
func (r *Runtime) add(pod *v1.Pod) (*podRunner, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if _, ok := r.pods[pod.UID]; ok {
		return nil, fmt.Errorf("pod %s/%s (%s) already runs", pod.Namespace, pod.Name, pod.UID)
	}
	dir := filepath.Join(r.opts.RootDir, "pods", PodDirName(pod))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pod log directory: %w", err)
	}
	pr := &podRunner{
		rt:    r,
		pod:   pod,
		dir:   dir,
		log:   r.log.With("pod", pod.Namespace+"/"+pod.Name),
		state: newPodState(pod, r.opts.Clock.Now(), r.opts.InitialBackoff, r.opts.MaxBackoff),
		inbox: make(chan podMessage, 16),
		procs: map[string]*running{},
		done:  make(chan struct{}),
	}
	r.claim(pr)
	r.pods[pod.UID] = pr
	return pr, nil
}

// PodDirName is "<namespace>_<name>_<uid>", the pod's directory under <root>/pods.
func PodDirName(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)
}

// Pods returns the specs of every pod, sorted by namespace and name.
func (r *Runtime) Pods() []*v1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*v1.Pod, 0, len(r.pods))
	for _, pr := range r.pods {
		out = append(out, pr.pod)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Status returns the runtime's last status of a pod (without the prober's Ready/Started overlay).
func (r *Runtime) Status(uid types.UID) (v1.PodStatus, bool) {
	r.mu.Lock()
	pr, ok := r.pods[uid]
	r.mu.Unlock()
	if !ok {
		return v1.PodStatus{}, false
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return *pr.last.DeepCopy(), true
}

// LogPath returns the log file of a container's current run (or, with previous, the run before).
func (r *Runtime) LogPath(uid types.UID, container string, previous bool) (string, error) {
	st, ok := r.Status(uid)
	if !ok {
		return "", ErrUnknownPod
	}
	r.mu.Lock()
	pr := r.pods[uid]
	r.mu.Unlock()
	cs, ok := podapi.ContainerStatus(&st, container)
	if !ok {
		return "", fmt.Errorf("container %q is not valid for pod %s/%s", container, pr.pod.Namespace, pr.pod.Name)
	}
	n, err := logRun(&cs, previous)
	switch {
	case errors.Is(err, errWaiting) && cs.State.Waiting != nil:
		return "", fmt.Errorf("container %q in pod %s/%s is waiting to start: %s", container, pr.pod.Namespace, pr.pod.Name, cs.State.Waiting.Reason)
	case errors.Is(err, errWaiting):
		return "", fmt.Errorf("container %q in pod %s/%s is waiting to start - no logs yet", container, pr.pod.Namespace, pr.pod.Name)
	case errors.Is(err, errNoPrevious):
		return "", fmt.Errorf("previous terminated container %q in pod %s/%s not found", container, pr.pod.Namespace, pr.pod.Name)
	}
	return filepath.Join(pr.dir, container, strconv.Itoa(n)+".log"), nil
}

var (
	errWaiting    = errors.New("waiting to start")
	errNoPrevious = errors.New("no previous run")
)

// logRun is the run whose log a read of cs's logs returns, by kubelet's rule
// (validateContainerLogStatus), as the number of its file (<n>.log: the run's restart count,
// podState.nextRun): with previous, lastState's run; else the current run, running or
// terminated, or while the container waits lastState's. lastState shows either the current
// instance's own exit (CrashLoopBackOff, fenced: the same container ID, run n) or the run before
// it (n-1): after a RestartAllContainers restart that is the run the restart removed, its restart
// counted already. errNoPrevious: no lastState; errWaiting: waiting with none.
func logRun(cs *v1.ContainerStatus, previous bool) (int, error) {
	n := int(cs.RestartCount)
	last := cs.LastTerminationState.Terminated
	hasLast := last != nil && last.ContainerID != ""
	lastRun := n - 1
	if hasLast && last.ContainerID == cs.ContainerID {
		lastRun = n
	}
	switch {
	case previous && (!hasLast || lastRun < 0):
		return 0, errNoPrevious
	case previous:
		return lastRun, nil
	case cs.State.Running != nil || cs.State.Terminated != nil:
		return n, nil
	case hasLast && lastRun >= 0:
		return lastRun, nil
	}
	return 0, errWaiting
}

// KillContainer kills a container whose liveness or startup probe failed (SIGTERM to its process
// group, SIGKILL after the grace period) and, with req.Restart, has it started again (through
// CrashLoopBackOff). It returns once the container has exited, or when ctx ends.
func (r *Runtime) KillContainer(ctx context.Context, req messages.KillContainer) error {
	r.mu.Lock()
	pr, ok := r.pods[req.Pod.UID]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("kill container %q: %w %s", req.Container, ErrUnknownPod, req.Pod.UID)
	}
	done := make(chan (<-chan struct{}), 1)
	if !pr.post(killContainer{req: req, reply: done}) {
		return nil // the pod is gone, and so is the container
	}
	var exited <-chan struct{}
	select {
	case exited = <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if exited == nil {
		return nil // not running (any more)
	}
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RunInContainer runs an exec probe's command locally with the container's environment and working
// directory (probes.RunLocal: own process group, killed on timeout).
func (r *Runtime) RunInContainer(ctx context.Context, containerID string, cmd []string, out io.Writer) error {
	return r.runner.RunInContainer(ctx, containerID, cmd, out)
}

func (r *Runtime) resolve(containerID string) (probes.LocalOptions, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref, ok := r.byID[containerID]
	if !ok {
		return probes.LocalOptions{}, errors.New("container not found")
	}
	return probes.LocalOptions{Env: ref.env, Dir: ref.dir, Guard: r.guard.watch}, nil
}

// Stop implements lifecycle.Component: it ends the exec-probe guard process (which kills any exec
// probe still running) and returns once it is reaped, or when ctx ends (the guard, told to end,
// is then reaped in the background). Stop it once nothing probes any more (after the probe tree
// stopped); later exec probes run unguarded. Stop leaves the pods alone: terminate them first
// (Shutdown, Remove).
func (r *Runtime) Stop(ctx context.Context) error {
	return r.guard.close(ctx)
}

// Terminate stops a pod: no more restarts; app containers are sent SIGTERM, then SIGKILL after the
// pod's grace period, then its sidecars the same way. It returns once every process is reaped (or
// when ctx ends; the pod keeps terminating in the background).
func (r *Runtime) Terminate(ctx context.Context, uid types.UID) error {
	r.mu.Lock()
	pr, ok := r.pods[uid]
	detached := r.detached
	r.mu.Unlock()
	if detached {
		return ErrClosed // its containers were left to the next node
	}
	if !ok {
		return ErrUnknownPod
	}
	pr.post(terminatePod{})
	select {
	case <-pr.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Remove terminates a pod as Terminate does, waits until every process of it is reaped, deletes
// its log directory, as kubelet garbage-collects a deleted pod's logs, then forgets it — it is no
// longer listed, its UID may run again. In that order, a pod that is no longer listed has no logs
// left, and a new instance of its UID cannot have started writing where the old logs are deleted.
// If the logs cannot be deleted the pod is forgotten all the same and the error says so. If ctx
// ends first the pod keeps terminating, stays listed and ctx's error is returned; Remove may be
// called again. Subscribers hear PodRemoved, after every status of the pod, before Remove returns.
func (r *Runtime) Remove(ctx context.Context, uid types.UID) error {
	if err := r.Terminate(ctx, uid); err != nil {
		return err
	}
	r.mu.Lock()
	pr, ok := r.pods[uid]
	r.mu.Unlock()
	if !ok {
		return nil // removed concurrently
	}
	rmErr := os.RemoveAll(pr.dir)
	r.mu.Lock()
	forgot := r.pods[uid] == pr
	if forgot {
		delete(r.pods, uid)
	}
	r.mu.Unlock()
	if forgot { // not removed concurrently either: one PodRemoved
		r.subscribers.publish(PodEvent{Kind: PodRemoved, Pod: pr.pod})
	}
	if rmErr != nil {
		return fmt.Errorf("pod %s/%s removed, but not its logs: %w", pr.pod.Namespace, pr.pod.Name, rmErr)
	}
	return nil
}

// Shutdown terminates every pod concurrently, refuses new ones and waits for every process. After
// Detach it does nothing.
func (r *Runtime) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	if r.detached {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	uids := make([]types.UID, 0, len(r.pods))
	for uid := range r.pods {
		uids = append(uids, uid)
	}
	r.mu.Unlock()
	errs := make(chan error, len(uids))
	for _, uid := range uids {
		go func() { errs <- r.Terminate(ctx, uid) }()
	}
	var all []error
	for range uids {
		if err := <-errs; err != nil {
			all = append(all, err)
		}
	}
	return errors.Join(all...)
}

func newContainerID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "proc://" + hex.EncodeToString(b[:])
}

// running is one live container instance.
type running struct {
	name    string
	id      string
	proc    *process
	socket  string      // its shim's
	killing bool        // a kill has begun: its preStop hook, then SIGTERM, then SIGKILL
	timer   clock.Timer // the SIGKILL after the grace period, once SIGTERM was sent
	// Lifecycle hooks (hooks.go): hook cancels the one under way; postStart says it is the
	// postStart hook (no container of the pod starts meanwhile); preStop is a kill waiting for it.
	hook      context.CancelFunc
	postStart bool
	preStop   *preStopRun
	// message is what its terminationMessagePath held when it started (nil: adopted, unknown).
	message *fileMark
}

// podRunner owns one pod: its state, its processes and its timer. Only loop() touches them.
type podRunner struct {
	leaseLost bool // node's cluster lease ran out while this pod ran: it starts no container again
	rt        *Runtime
	pod       *v1.Pod
	dir       string
	log       hclog.Logger
	inbox     chan podMessage
	done      chan struct{} // closed when the loop has ended (pod terminated, all reaped)

	// owned by loop()
	state       *podState
	procs       map[string]*running
	wake        clock.Timer
	wakeAt      time.Time
	terminating bool
	stopping    bool   // sidecar phase of a termination has begun
	detached    bool   // Detach: the loop ends, the containers run on
	written     []byte // the record last written
	writeErr    string // the last error writing it (logged once)

	// Before its first decision (set by Runtime.claim, then read by loop only): wait for an
	// earlier node's stop of this UID (after), stop the instances of an old spec (replace), or
	// take over the recorded instances (adopt).
	after   <-chan struct{}
	replace *podRecord
	adopt   *podRecord

	mu     sync.Mutex
	last   v1.PodStatus // last pushed status (read by Status); an adopted pod's record until then
	pushed bool         // publish has pushed a status (the first one always goes out)
}

// post hands m to the pod's goroutine; false if the pod has finished.
func (pr *podRunner) post(m podMessage) bool {
	select {
	case pr.inbox <- m:
		return true
	case <-pr.done:
		return false
	}
}

// loop is the pod's goroutine: it handles one message at a time, then (unless terminating) runs
// the core's decision again.
func (pr *podRunner) loop() {
	defer close(pr.done)
	if !pr.prepare() {
		return // detached meanwhile
	}
	pr.sync()
	for m := range pr.inbox {
		pr.handle(m)
		if pr.detached {
			return
		}
		if pr.terminating && len(pr.procs) == 0 {
			pr.stopWake()
			pr.publish()
			pr.forget() // terminated completely: nothing for a next node to adopt
			return
		}
		pr.persist()
		if pr.terminating {
			pr.maybeStopSidecars()
			pr.publish()
			continue
		}
		pr.sync()
	}
}

// handle carries out one message.
func (pr *podRunner) handle(m podMessage) {
	switch m := m.(type) {
	case killContainer:
		m.reply <- pr.kill(m.req)
	case terminatePod:
		pr.terminate()
	case containerExited:
		pr.exited(m.name, m.id, m.exit)
	case wakeUp:
		pr.wakeAt = time.Time{}
	case startupSucceeded:
		pr.state.sidecarStarted(m.name, m.id)
	case probeResult:
		pr.state.probeResult(m.name, m.id, m.probe, m.success)
	case detachPod:
		pr.detach()
	case hookDone:
		pr.hookEnded(m)
	case preStopTimedOut:
		if r, ok := pr.procs[m.name]; ok && r.id == m.id {
			pr.preStopOver(r)
		}
	default:
		pr.log.Error("pod goroutine ignores an unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// sync runs the core's decision and carries it out, then publishes the status.
func (pr *podRunner) sync() {
	// Starting one container can let the next start (a sidecar without a startup probe, then the
	// first init container, ...): decide again until nothing more is started.
	for range len(pr.state.containers) + 1 {
		now := pr.rt.opts.Clock.Now()
		// Sticky: once the lease ran out, nothing of this pod starts again, renewal or not (see
		// Runtime.SetLease); the cluster stops the pod and places it anew.
		pr.leaseLost = pr.leaseLost || pr.rt.leaseRanOut()
		pl := pr.state.decide(now, pr.leaseLost, pr.postStartRunning())
		for _, ev := range pl.Events {
			pr.event(ev.Kind, ev.Container, ev.Type, ev.Reason, ev.Message)
		}
		for _, name := range pl.Start {
			pr.start(name)
		}
		for _, name := range pl.Stop {
			if r, ok := pr.procs[name]; ok && !r.killing {
				pr.event(pr.state.byName[name].kind, name, v1.EventTypeNormal, messages.ReasonKilling, "Stopping container "+name)
				pr.beginKill(r, podapi.GracePeriod(pr.pod))
			}
		}
		for _, name := range pl.Kill {
			if r, ok := pr.procs[name]; ok && !r.killing {
				// kubelet's RestartAllContainers kill: grace 0 (its 2 s floor), event text "killing".
				pr.event(pr.state.byName[name].kind, name, v1.EventTypeNormal, messages.ReasonKilling, "killing")
				pr.beginKill(r, 0)
			}
		}
		pr.setWake(pl.WakeAt)
		if len(pl.Start) == 0 {
			break
		}
	}
	pr.persist()
	pr.publish()
}

func (pr *podRunner) setWake(at time.Time) {
	if at.IsZero() || (!pr.wakeAt.IsZero() && !at.Before(pr.wakeAt)) {
		return
	}
	pr.stopWake()
	pr.wakeAt = at
	pr.wake = clock.AfterFuncAt(pr.rt.opts.Clock, at, func() { pr.post(wakeUp{}) })
}

func (pr *podRunner) stopWake() {
	if pr.wake != nil {
		pr.wake.Stop()
		pr.wake = nil
	}
	pr.wakeAt = time.Time{}
}

// publish pushes the status when it changed, keeping condition transition times: to the
// subscribers first, then to the tree.
func (pr *podRunner) publish() {
	st := pr.state.status()
	pr.mu.Lock()
	prev := pr.last
	stampTransitions(&st, prev.Conditions, pr.rt.opts.Clock.Now())
	changed := !pr.pushed || !equality.Semantic.DeepEqual(prev, st)
	if changed {
		pr.last, pr.pushed = st, true
	}
	pr.mu.Unlock()
	if !changed {
		return
	}
	pr.rt.subscribers.publish(PodEvent{Kind: PodStatusChanged, Pod: pr.pod, Status: *st.DeepCopy()})
	if push := pr.rt.push.Load(); push != nil {
		(*push)(pr.pod, *st.DeepCopy())
	}
}

// start launches one instance of a container.
func (pr *podRunner) start(name string) {
	c := pr.state.byName[name]
	now := pr.rt.opts.Clock.Now()
	id := newContainerID()
	restartCount := pr.state.nextRun(name)
	env := containerEnv(pr.pod, &c.spec)
	dir := c.spec.WorkingDir
	argv := containerArgv(pr.pod, &c.spec)
	var proc *process
	socket := filepath.Join(pr.rt.shimsDir, strings.TrimPrefix(id, "proc://")+".sock")
	// The shim holds the lease from its start (and refuses to start the container once it has
	// run out, should it run out meanwhile); track sends it any renewal since.
	leaseDeadline := pr.rt.currentLease()
	if leaseDeadline != 0 && monoNow() >= leaseDeadline {
		pr.state.fence(name)
		return
	}
	mark := markOf(terminationPath(&c.spec)) // before the process can write it
	// Opening the log is part of starting the container, as with containerd ("failed to create
	// container loggers"): if it cannot be opened the start fails (StartError, retried with
	// back-off); no running container is touched.
	logFile, err := openLog(filepath.Join(pr.dir, name), restartCount)
	if err == nil {
		err = pr.rt.ensureShimsDir()
		if err == nil {
			proc, err = startProcess(pr.rt.opts.Shim, processSpec{Path: argv[0], Args: argv[1:], Env: env, Dir: dir, Log: logFile,
				Socket: socket, ReattachTimeout: pr.rt.opts.ReattachTimeout, Grace: pr.shimGrace(), LeaseDeadline: leaseDeadline})
		}
		logFile.Close() // the shim has its own copy
	}
	if errors.Is(err, errFenced) {
		pr.state.fence(name) // not started: it waits for the lease, as decide would have it
		return
	}
	if err != nil {
		pr.log.Warn("container failed to start", "container", name, "error", err)
		pr.state.startFailed(name, id, err, now)
		pr.event(c.kind, name, v1.EventTypeWarning, "Failed", "Error: "+err.Error())
		return
	}
	pr.state.started(name, id, now)
	pr.track(name, id, proc, socket)
	pr.procs[name].message = &mark
	pr.log.Debug("container started", "container", name, "container_id", id, "pid", proc.pid)
	// kubelet 1.37's pair for a new container (kuberuntime's startContainer): a process is created
	// and started in one step here, so both follow a successful start.
	pr.event(c.kind, name, v1.EventTypeNormal, "Created", "Container created")
	pr.event(c.kind, name, v1.EventTypeNormal, "Started", "Container started")
	// kubelet runs the postStart hook next and starts nothing else of the pod until it ends
	// (decide holds the starts while postStartRunning).
	if h := lifecycleOf(&c.spec).PostStart; h != nil {
		r := pr.procs[name]
		r.postStart = true
		pr.startHook(r, hookPostStart, h)
	}
}

// shimGrace is the grace period a shim stops the container with on its own (the re-attach
// window's end, the lease's): the pod's, at least kubelet's floor.
func (pr *podRunner) shimGrace() time.Duration {
	return max(podapi.GracePeriod(pr.pod), podapi.MinimumGracePeriod)
}

// track makes a running instance (started or adopted) the pod's: exec probes can run in it, its
// exit reaches the pod, and its shim holds node's cluster lease (the one it started with may be
// older, an adopted one's an earlier node's or none); SetLease renews it from now on.
func (pr *podRunner) track(name, id string, proc *process, socket string) {
	pr.procs[name] = &running{name: name, id: id, proc: proc, socket: socket}
	c := pr.state.byName[name]
	grace := pr.shimGrace()
	pr.rt.mu.Lock()
	start := time.Time{}
	if c.current != nil {
		start = c.current.startedAt
	}
	pr.rt.byID[id] = containerRef{env: containerEnv(pr.pod, &c.spec), dir: c.spec.WorkingDir, proc: proc, grace: grace,
		pod: pr.pod, name: name, start: start}
	deadline := pr.rt.lease
	pr.rt.mu.Unlock()
	if deadline != 0 {
		proc.renewLease(lease{deadline: deadline, grace: grace})
	}
	go func() { // ends when the instance has exited and the pod heard about it (or has finished), or at Detach
		<-proc.done
		if proc.exit.Event != "detached" {
			pr.post(containerExited{name: name, id: id, exit: proc.exit})
		}
	}()
}

// openLog creates (or truncates) the log of a container's run restartCount in dir.
func openLog(dir string, restartCount int) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open container log: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(restartCount)+".log"), os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open container log: %w", err)
	}
	return f, nil
}

// exited records the end of an instance, with its termination message (kubelet's: what it wrote
// to its terminationMessagePath, else the tail of its log for FallbackToLogsOnError), after the
// message the exit itself has, if any.
func (pr *podRunner) exited(name, id string, m shimMessage) {
	var mark *fileMark
	if r, ok := pr.procs[name]; ok && r.id == id {
		if r.timer != nil {
			r.timer.Stop()
		}
		r.endHooks()
		mark = r.message
		delete(pr.procs, name)
	}
	st := exitOf(m, pr.rt.opts.Clock.Now())
	if c := pr.state.byName[name]; c != nil && c.current != nil && c.current.id == id && !c.current.exited {
		log := filepath.Join(pr.dir, name, strconv.Itoa(int(c.restarts))+".log")
		if msg := terminationMessage(&c.spec, mark, st.Code, st.Reason, log); msg != "" {
			if st.Message != "" {
				st.Message += ": "
			}
			st.Message += msg
		}
	}
	pr.rt.mu.Lock()
	delete(pr.rt.byID, id)
	pr.rt.mu.Unlock()
	pr.log.Debug("container exited", "container", name, "container_id", id, "exit_code", m.ExitCode, "fenced", m.Fenced)
	pr.state.exited(name, id, st)
}

// kill starts killing a container for a failed probe; it returns the instance's done channel, or nil
// when req.ContainerID is not the running instance.
func (pr *podRunner) kill(req messages.KillContainer) <-chan struct{} {
	r, ok := pr.procs[req.Container]
	if !ok || r.id != string(req.ContainerID) {
		return nil
	}
	if req.Restart && !pr.terminating {
		pr.state.killedForRestart(req.Container, r.id)
	}
	if !r.killing {
		// The caller (the actor core's syncLoop) records kubelet's Killing event itself.
		grace := req.GracePeriod
		if grace <= 0 {
			grace = podapi.GracePeriod(pr.pod)
		}
		pr.beginKill(r, grace)
	}
	return r.proc.done
}

// beginKill kills r as kubelet's killContainer: a postStart hook under way is cancelled; with a
// preStop hook and a grace period, the hook runs first, for at most the grace period; then SIGTERM,
// and SIGKILL after what is left of the grace period (at least kubelet's 2 s floor).
func (pr *podRunner) beginKill(r *running, grace time.Duration) {
	if r.killing {
		return
	}
	r.killing = true
	if r.postStart {
		r.endHooks()
	}
	if h := lifecycleOf(&pr.state.byName[r.name].spec).PreStop; h != nil && grace > 0 {
		name, id := r.name, r.id
		r.preStop = &preStopRun{grace: grace, start: pr.rt.opts.Clock.Now(),
			timer: pr.rt.opts.Clock.AfterFunc(grace, func() { pr.post(preStopTimedOut{name: name, id: id}) })}
		pr.startHook(r, hookPreStop, h)
		return
	}
	pr.signalTerm(r, grace)
}

// signalTerm sends SIGTERM now and SIGKILL after grace (at least kubelet's 2 s floor).
func (pr *podRunner) signalTerm(r *running, grace time.Duration) {
	grace = max(grace, podapi.MinimumGracePeriod)
	r.proc.terminate(grace)
	proc := r.proc
	r.timer = pr.rt.opts.Clock.AfterFunc(grace, proc.kill)
}

// terminate begins the pod's termination: app (and regular init) containers first.
func (pr *podRunner) terminate() {
	if pr.terminating {
		return
	}
	pr.terminating = true
	pr.state.terminating = true
	pr.stopWake()
	for name, r := range pr.procs {
		if pr.state.byName[name].kind != kindSidecar && !r.killing {
			pr.event(pr.state.byName[name].kind, name, v1.EventTypeNormal, messages.ReasonKilling, "Stopping container "+name)
			pr.beginKill(r, podapi.GracePeriod(pr.pod))
		}
	}
	pr.maybeStopSidecars()
}

// maybeStopSidecars kills the sidecars once no other container of a terminating pod runs.
func (pr *podRunner) maybeStopSidecars() {
	if pr.stopping {
		return
	}
	for name := range pr.procs {
		if pr.state.byName[name].kind != kindSidecar {
			return
		}
	}
	pr.stopping = true
	for name, r := range pr.procs {
		if !r.killing {
			pr.event(kindSidecar, name, v1.EventTypeNormal, messages.ReasonKilling, "Stopping container "+name)
			pr.beginKill(r, podapi.GracePeriod(pr.pod))
		}
	}
}

func (pr *podRunner) event(k kind, container, typ, reason, msg string) {
	if pr.rt.opts.Events == nil {
		return
	}
	fieldPath := "" // the pod's own event
	if container != "" {
		fieldPath = podapi.FieldPath(container, k != kindApp)
	}
	pr.rt.opts.Events.Event(messages.Event{
		Time:      pr.rt.opts.Clock.Now(),
		Type:      typ,
		Reason:    reason,
		Message:   msg,
		Pod:       types.NamespacedName{Namespace: pr.pod.Namespace, Name: pr.pod.Name},
		PodUID:    pr.pod.UID,
		FieldPath: fieldPath,
	})
}
