package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cluster/sharder"
)

// PodOps is what the runner needs of node's pod host (the static pod path's StartPod and
// StopPod).
type PodOps interface {
	// StartPod runs pod here; an error leaves it not running.
	StartPod(pod *v1.Pod) error
	// StopPod stops pod and returns once it stopped (bounded by its grace period).
	StopPod(pod *v1.Pod)
}

// Config configures a Runner.
type Config struct {
	// System is the actor system the sharder runs on.
	System *actor.ActorSystem
	// Membership gives the views; it is started before the runner (with AwaitApplied) and
	// stopped after it.
	Membership sharder.Membership
	// Pods runs this member's share.
	Pods PodOps
	// FilePods are the -f pods: always in the set. Each needs a UID (ClusterUID), unique.
	FilePods []*v1.Pod
	// Logger gets the runner's and the sharder's logs (default: none).
	Logger hclog.Logger
	// Registerer, when set, gets the sharder's probeactor_cluster_pods_* metrics (registered by New).
	Registerer prometheus.Registerer
	// Margin is the sharder's (required: sharder.Margin of the failure timeout).
	Margin func(grace time.Duration) time.Duration
	// Recovered, when set, lists at Start the pods an earlier node on this --root-dir left running
	// here (proc.Runtime.Recovered): they are held — reported to the peers as still stopping, so
	// none starts them — until the sharder starts them here (node's StartPod adopts them: the same
	// containers, under this member's lease) or Sweep stops them, HoldFor after Start.
	Recovered func() []types.UID
	// Sweep stops what an earlier node left and no start claimed (proc.Runtime.StopOrphans); an
	// error means something may still run, and a later call tries again what it did not stop.
	Sweep func(ctx context.Context) error
	// HoldFor is how long held pods wait for the sharder to adopt them (node: the failure timeout;
	// their containers' old lease has run out by then anyway, unless adopted and renewed).
	HoldFor time.Duration
	// Quorum, when set, is told (on the sharder's goroutine: it must not block) whenever this member
	// starts or stops running pods for its quorum lease, with the reason it runs none ("" while it
	// runs its share): node reports it to the fleet as the ClusterQuorum condition.
	Quorum func(reason string)
}

// requestTimeout bounds a request to the sharder when no deadline says otherwise.
const requestTimeout = 10 * time.Second

// stopMargin is what StopTimeout adds to the longest grace period: the release and the sharder's
// own stop, each a message round trip.
const stopMargin = 10 * time.Second

// Runner is the cluster's pod runner: a lifecycle component (internal/lifecycle) that runs the
// sharder and this member's share of the pod set on PodOps. Use it once: Start, then Stop.
type Runner struct {
	cfg   Config
	log   hclog.Logger
	props *actor.Props
	pods  *pods

	leaving atomic.Bool               // Stop began: the set no longer changes
	warning atomic.Pointer[string]    // why this member runs no pods ("" or nil: it runs its share)
	sharder atomic.Pointer[actor.PID] // set by Start

	abandon atomic.Bool // Leave: Stop leaves the pods running (a planned restart)
	sweep   struct {
		cancel context.CancelFunc
		done   chan struct{}
	}

	setMu   sync.Mutex // one pod set change at a time, in order
	static  []*v1.Pod  // the static pods of the set in force (or to give at Start)
	lastSet map[types.UID]struct{}
}

// New checks cfg and prepares the sharder (registering its metrics); nothing runs yet. Errors
// name the field.
func New(cfg Config) (*Runner, error) {
	switch {
	case cfg.System == nil:
		return nil, errors.New("runner: Config.System is required")
	case cfg.Membership == nil:
		return nil, errors.New("runner: Config.Membership is required")
	case cfg.Pods == nil:
		return nil, errors.New("runner: Config.Pods is required")
	case cfg.Margin == nil:
		return nil, errors.New("runner: Config.Margin is required (sharder.Margin of the failure timeout)")
	}
	seen := make(map[types.UID]*v1.Pod, len(cfg.FilePods))
	for i, p := range cfg.FilePods {
		switch {
		case p == nil:
			return nil, fmt.Errorf("runner: Config.FilePods[%d]: nil", i)
		case p.UID == "":
			return nil, fmt.Errorf("runner: Config.FilePods[%d] (%s/%s): metadata.uid: required (the cluster places pods by UID)", i, p.Namespace, p.Name)
		case seen[p.UID] != nil:
			return nil, fmt.Errorf("runner: Config.FilePods[%d] (%s/%s): metadata.uid: Duplicate value: %q is also the UID of %s/%s", i, p.Namespace, p.Name, p.UID, seen[p.UID].Namespace, seen[p.UID].Name)
		default:
			seen[p.UID] = p
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	cfg.FilePods = slices.Clip(cfg.FilePods)
	r := &Runner{cfg: cfg, log: cfg.Logger, pods: newPods(cfg.Pods, cfg.Logger, cfg.Membership.SetStopping)}
	props, err := sharder.Props(sharder.Config{Membership: cfg.Membership, Runner: r.pods, Logger: cfg.Logger, Registerer: cfg.Registerer,
		Margin: cfg.Margin, Quorum: func(reason string) {
			r.warning.Store(&reason)
			if cfg.Quorum != nil {
				cfg.Quorum(reason)
			}
		}})
	if err != nil {
		return nil, err
	}
	r.props = props
	return r, nil
}

// Warning says why this member runs no pods (its quorum lease ran out: "QuorumLost: ..."), ""
// while it runs its share. node's /pods sends it as a Warning header.
func (r *Runner) Warning() string {
	if w := r.warning.Load(); w != nil {
		return *w
	}
	return ""
}

// Start spawns the sharder (sharder.ActorName) and gives it the -f pods, with the static pods
// given to SetStaticPods before, if any. On error it undoes what it began (the sharder stopped,
// any pod it started stopped) and the runner is spent.
func (r *Runner) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.cfg.Recovered != nil {
		if held := r.cfg.Recovered(); len(held) > 0 {
			// Told before the sharder runs: the membership reports no view of this member until the
			// sharder applied one, so no peer acts on this member's view without these.
			r.pods.hold(held)
			r.log.Info("holding the pods an earlier node left here until the cluster gives them to this member or they are swept",
				"pods", len(held), "hold_for", r.cfg.HoldFor)
		}
	}
	pid, err := r.cfg.System.Root.SpawnNamed(r.props, sharder.ActorName)
	if err != nil {
		r.leaving.Store(true)
		<-r.pods.close() // nothing ran: closed at once
		return fmt.Errorf("start the sharder: %w", err)
	}
	r.startSweep()
	r.setMu.Lock()
	r.sharder.Store(pid)
	err = r.setLocked(timeoutOf(ctx), r.static)
	r.setMu.Unlock()
	if err != nil {
		undo, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.StopTimeout())
		defer cancel()
		return errors.Join(err, r.Stop(undo))
	}
	return nil
}

// startSweep stops, HoldFor after Start, what an earlier node left and the sharder did not adopt,
// then releases the held pods. A sweep that did not stop everything keeps them held — reported
// to the peers as still stopping, so none starts them while an old container may still run here
// — and is tried again every HoldFor (a second at least) until one does. Stop cancels it and
// waits.
func (r *Runner) startSweep() {
	done := make(chan struct{})
	r.sweep.done = done
	if r.cfg.Sweep == nil {
		close(done)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.sweep.cancel = cancel
	go func() { // ends when a sweep succeeded, or at once when Stop cancels it
		defer close(done)
		for wait := r.cfg.HoldFor; ; wait = max(r.cfg.HoldFor, minSweepRetry) {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
			err := r.cfg.Sweep(ctx)
			switch {
			case ctx.Err() != nil:
				return
			case err == nil:
				r.pods.releaseHeld()
				return
			}
			r.log.Error("containers an earlier node left did not all stop: their pods stay held (reported to the peers as stopping) and the sweep is tried again",
				"error", err, "retry_in", max(r.cfg.HoldFor, minSweepRetry))
		}
	}()
}

// minSweepRetry bounds how often a failing sweep is tried again, whatever HoldFor.
const minSweepRetry = time.Second

// Leave makes Stop leave this member's pods running: node's planned restart (SIGUSR2) in a
// cluster. The membership leaves without a word (Member.Abandon): the peers see a silent member,
// and start its pods only after the fencing bound, by when the containers' lease (not renewed by
// a node that left) has stopped them, unless the next node on this --root-dir rejoined within the
// lease and adopted them.
func (r *Runner) Leave() { r.abandon.Store(true) }

// SetStaticPods is the static pod watcher's Set in cluster mode (called on its goroutine after
// every read of --pod-manifest-path): the set becomes the -f pods and these. A refusal (the
// sharder checks every UID is there once) keeps the previous set and is logged. Before Start the
// pods are kept for Start; once Stop began they are ignored.
func (r *Runner) SetStaticPods(static []*v1.Pod) {
	r.setMu.Lock()
	defer r.setMu.Unlock()
	switch {
	case r.leaving.Load():
		r.log.Debug("the cluster is being left; the static pods are not given to the sharder", "static_pods", len(static))
	case r.sharder.Load() == nil:
		r.static = slices.Clone(static)
	default:
		if err := r.setLocked(requestTimeout, static); err != nil {
			r.log.Error("the cluster's pod set was not updated; the previous one stands", "error", err)
		}
	}
}

// setLocked gives the sharder the -f pods and static as the whole set and logs the change. r.setMu
// is held.
func (r *Runner) setLocked(timeout time.Duration, static []*v1.Pod) error {
	set := append(slices.Clip(r.cfg.FilePods), static...)
	res, err := r.cfg.System.Root.RequestFuture(r.sharder.Load(), &sharder.SetPods{Pods: set}, timeout).Result()
	if err != nil {
		return fmt.Errorf("give the pods to the sharder: %w", err)
	}
	switch res := res.(type) {
	case *sharder.SetPodsResult:
		if res.Err != nil {
			return fmt.Errorf("give the pods to the sharder: %w", res.Err)
		}
	default:
		return fmt.Errorf("give the pods to the sharder: unexpected answer %T", res)
	}
	uids := make(map[types.UID]struct{}, len(set))
	added := 0
	for _, p := range set {
		uids[p.UID] = struct{}{}
		if _, ok := r.lastSet[p.UID]; !ok {
			added++
		}
	}
	if removed := len(r.lastSet) + added - len(uids); r.lastSet != nil && added+removed > 0 {
		r.log.Info("the cluster's pod set changed", "pods_in_set", len(uids), "added", added, "removed", removed)
	}
	r.static, r.lastSet = slices.Clone(static), uids
	return nil
}

// Stop leaves the cluster's pods: the sharder releases them (it stops every pod here and starts
// nothing again), the runner refuses every later start and stops what the sharder did not
// release, waits until every stop finished (or ctx ended), then stops the sharder. Call it once,
// before stopping the membership: peers take the pods over once this member leaves, and by then
// none of them runs here.
//
// A release that fails is logged (the runner stops the pods itself). An error says the stops
// did not all finish within ctx (they go on, each bounded by its pod's grace period) or the
// sharder did not stop.
func (r *Runner) Stop(ctx context.Context) error {
	r.leaving.Store(true)
	if r.sweep.cancel != nil {
		r.sweep.cancel()
	}
	if r.sweep.done != nil {
		<-r.sweep.done
	}
	pid := r.sharder.Load()
	if r.abandon.Load() {
		r.pods.abandon()
		var err error
		stopped := make(chan struct{})
		go func() { r.pods.stops.Wait(); close(stopped) }() // ends with the stops under way, each bounded by its grace period
		if !waitFor(ctx, stopped) {
			err = fmt.Errorf("leave the cluster's pods: %d stops still in progress: %w", r.pods.inProgress(), ctx.Err())
		}
		if pid != nil {
			if perr := r.cfg.System.Root.PoisonFuture(pid).Wait(); perr != nil {
				err = errors.Join(err, fmt.Errorf("the sharder did not stop cleanly: %w", perr))
			}
		}
		r.log.Info("left the cluster's pods running for the next node on this --root-dir (a planned restart)")
		return err
	}
	if pid != nil {
		if _, err := r.cfg.System.Root.RequestFuture(pid, &sharder.Release{}, min(timeoutOf(ctx), requestTimeout)).Result(); err != nil {
			r.log.Error("could not release the cluster's pods", "error", err)
		}
	}
	var errs []error
	if drained := r.pods.close(); waitFor(ctx, drained) {
		r.pods.stops.Wait() // each stop's goroutine returns right after it finished
	} else {
		errs = append(errs, fmt.Errorf("stop the cluster's pods: %d stops still in progress: %w", r.pods.inProgress(), ctx.Err()))
	}
	if pid != nil {
		if err := r.cfg.System.Root.PoisonFuture(pid).Wait(); err != nil {
			errs = append(errs, fmt.Errorf("the sharder did not stop cleanly: %w", err))
		}
	}
	return errors.Join(errs...)
}

// StopTimeout implements lifecycle.Budgeted: the longest grace period of the pods here, plus a
// margin for the release and the sharder's stop.
func (r *Runner) StopTimeout() time.Duration {
	return r.pods.longestGrace() + stopMargin
}

// waitFor reports whether done is closed before ctx ends (done first when both are).
func waitFor(ctx context.Context, done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-ctx.Done():
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
}

// timeoutOf is what remains of ctx's deadline (at least a millisecond), or requestTimeout.
func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return requestTimeout
}
