package proc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/internal/podapi"
)

// recoveredPod is a pod an earlier node ran, as Start found its record.
type recoveredPod struct {
	rec  podRecord
	path string
	// stopped is set once StopOrphans began stopping its containers, and closed when it is done
	// (the record is deleted then): a Run of the same UID meanwhile waits for it, then starts
	// afresh.
	stopped chan struct{}
}

// Start implements lifecycle.Component: it reads what an earlier node left under RootDir — one
// record per pod it ran (state/<uid>.json) and the sockets of the shims still running
// (shims/*.sock) — so that Run adopts those pods and StopOrphans stops what no Run claims. A
// record that cannot be used (partial, corrupt, of another format) is logged once, at error, with
// its path and why; the containers it described become orphans (their sockets are claimed by no
// record). Start never fails for what it finds; call it once, before the first Run.
func (r *Runtime) Start(context.Context) error {
	good, bad, err := loadRecords(r.statesDir)
	if err != nil {
		r.log.Error("pod records not read: the containers an earlier node left are stopped as orphans", "error", err)
	}
	claimed := map[string]bool{}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range good {
		r.recovered[rec.UID] = &recoveredPod{rec: rec, path: recordPath(r.statesDir, rec.UID)}
		for _, c := range rec.Containers {
			if c.Socket != "" {
				claimed[c.Socket] = true
			}
		}
	}
	for _, b := range bad {
		r.log.Error("pod record unusable: its containers are stopped as orphans", "path", b.path, "reason", b.err)
		r.badRecords = append(r.badRecords, b.path)
	}
	entries, err := os.ReadDir(r.shimsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log.Error("container shims not listed: an earlier node's containers without a record are left to their re-attach timeout", "path", r.shimsDir, "error", err)
	}
	for _, e := range entries {
		path := filepath.Join(r.shimsDir, e.Name())
		if strings.HasSuffix(e.Name(), ".sock") && !claimed[path] {
			r.orphans = append(r.orphans, orphanShim{socket: path, grace: podapi.DefaultGracePeriod})
		}
	}
	if len(good)+len(r.orphans) > 0 {
		r.log.Info("found an earlier node's pods", "pods", len(good), "unrecorded_shims", len(r.orphans))
	}
	return nil
}

// Recovered returns the UIDs of the pods Start recovered that no Run has claimed and StopOrphans
// has not begun to stop, in no order: the containers an earlier node left running here. A cluster
// member reports them to its peers as still stopping until it adopts (Run) or sweeps them
// (StopOrphans), so no peer starts them meanwhile.
func (r *Runtime) Recovered() []types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]types.UID, 0, len(r.recovered))
	for uid, rc := range r.recovered {
		if rc.stopped == nil {
			out = append(out, uid)
		}
	}
	return out
}

// claim decides, for a pod Run adds, what becomes of an earlier node's pod of the same UID. Called
// with r.mu held.
func (r *Runtime) claim(pr *podRunner) {
	rc, ok := r.recovered[pr.pod.UID]
	if !ok {
		return
	}
	if rc.stopped != nil {
		pr.after = rc.stopped // StopOrphans is stopping it: start afresh once it is done
		return
	}
	delete(r.recovered, pr.pod.UID)
	if rc.rec.SpecHash != specHash(pr.pod) {
		pr.replace = &rc.rec
		return
	}
	state, err := restore(pr.pod, rc.rec, r.opts.InitialBackoff, r.opts.MaxBackoff)
	if err != nil {
		pr.log.Error("pod record not adopted: the pod is replaced", "path", rc.path, "reason", err)
		pr.replace = &rc.rec
		return
	}
	pr.state, pr.adopt = state, &rc.rec
	// Until the pod's goroutine has attached and published, the runtime reports the pod as the
	// record left it (its containers running, ready and started as last seen): a reader in that
	// instant (the fleet link, /pods) must not see an adopted pod as new.
	pr.last = initialStatus(state, r.opts.Clock.Now())
}

// initialStatus is what publish would report first for state, condition transitions at now.
func initialStatus(state *podState, now time.Time) v1.PodStatus {
	st := state.status()
	stampTransitions(&st, nil, now)
	return st
}

// prepare runs first in the pod's goroutine: it waits for, replaces or adopts an earlier node's
// instances of the pod. It reports false when Detach came first.
func (pr *podRunner) prepare() bool {
	stops := pr.rt.stops
	if pr.after != nil {
		select {
		case <-pr.after:
		case <-stops.Done():
			return false
		}
	}
	if pr.replace != nil {
		pr.log.Info("pod spec changed while node was down: stopping its old containers, then starting it afresh")
		if _, err := pr.rt.stopRecorded(stops, *pr.replace); stops.Err() != nil {
			return false // Detach: the old containers and their record are left to the next node
		} else if err != nil {
			pr.log.Error("old containers of a replaced pod not all stopped; their re-attach timeout ends them", "error", err)
		}
		pr.rt.deleteRecord(pr.pod.UID)
	}
	if pr.adopt != nil {
		pr.adoptInstances(*pr.adopt)
	}
	return true
}

// adoptInstances takes over the instances the record says run: the shim's hello says the
// container still runs (it is the pod's now, as if this node had started it), or how it ended
// meanwhile; a shim that cannot be reached ended unseen (exit 137, ContainerStatusUnknown).
func (pr *podRunner) adoptInstances(rec podRecord) {
	for _, cr := range rec.Containers {
		c := pr.state.byName[cr.Name]
		if !c.running() {
			continue
		}
		id := c.current.id
		proc, hello, err := attachProcess(cr.Socket)
		now := pr.rt.opts.Clock.Now()
		switch {
		case err != nil:
			if errors.Is(err, syscall.ECONNREFUSED) {
				_ = os.Remove(cr.Socket) // its shim is gone
			}
			pr.log.Warn("container ended while no node watched it", "container", cr.Name, "container_id", id, "error", err)
			pr.state.exited(cr.Name, id, exitStatus{Code: 137, Reason: ReasonContainerStatusUnknown,
				Message: "the container's shim was gone when node came back: the container ended while no node watched it", FinishedAt: now})
		case hello.Exited:
			pr.log.Info("container exited while no node watched it", "container", cr.Name, "container_id", id, "exit_code", hello.ExitCode)
			pr.state.exited(cr.Name, id, exitOf(hello, now))
		default:
			pr.track(cr.Name, id, proc, cr.Socket)
			pr.log.Info("container adopted", "container", cr.Name, "container_id", id, "pid", proc.pid)
		}
	}
}

// ensureShimsDir creates <RootDir>/shims, where only node's user may reach a shim.
func (r *Runtime) ensureShimsDir() error {
	if err := os.MkdirAll(r.shimsDir, 0o700); err != nil {
		return fmt.Errorf("container shim directory: %w", err)
	}
	return nil
}

// persist writes the pod's record when it changed: after every start, exit, restart and back-off
// decision, and every probe result kept. A failure is logged (once until it changes) and the pod
// runs on: only a later node's adoption needs the record.
func (pr *podRunner) persist() {
	sockets := make(map[string]string, len(pr.procs))
	for _, r := range pr.procs {
		sockets[r.id] = r.socket
	}
	b, err := json.MarshalIndent(snapshot(pr.state, podapi.GracePeriod(pr.pod), sockets), "", "  ")
	if err != nil || bytes.Equal(b, pr.written) {
		return
	}
	if err = os.MkdirAll(pr.rt.statesDir, 0o700); err == nil {
		err = writeFileAtomic(recordPath(pr.rt.statesDir, pr.pod.UID), b)
	}
	if err != nil {
		if err.Error() != pr.writeErr {
			pr.writeErr = err.Error()
			pr.log.Error("pod record not written: a node restarted now would not adopt the pod", "error", err)
		}
		return
	}
	pr.written, pr.writeErr = b, ""
}

// forget deletes the pod's record: it has terminated completely.
func (pr *podRunner) forget() {
	pr.rt.deleteRecord(pr.pod.UID)
	pr.written = nil
}

func (r *Runtime) deleteRecord(uid types.UID) {
	path := recordPath(r.statesDir, uid)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log.Error("pod record not deleted", "path", path, "error", err)
		return
	}
	_ = syncDir(r.statesDir)
}

// detach leaves every container running to the next node: connections closed without a KILL,
// timers stopped. The record stays.
func (pr *podRunner) detach() {
	pr.detached = true
	pr.stopWake()
	for _, r := range pr.procs {
		if r.timer != nil {
			r.timer.Stop()
		}
		r.endHooks()
		r.proc.detach()
	}
}

// Detach is node's planned restart: it refuses new pods, closes every shim connection without a
// KILL — the containers run on, each shim waiting ReattachTimeout for the next node (with
// ReattachTimeout 0 they die at once) — ends every pod goroutine and timer, and leaves the pod
// records for the next node. Stops of an earlier node's containers under way (StopOrphans, a
// replaced pod) are abandoned; their records stay too. Afterwards Terminate and Remove return
// ErrClosed and Shutdown does nothing; Stop still ends the exec-probe guard. A shim this runtime
// started is still reaped when it exits.
func (r *Runtime) Detach() {
	r.mu.Lock()
	r.closed, r.detached = true, true
	prs := make([]*podRunner, 0, len(r.pods))
	for _, pr := range r.pods {
		prs = append(prs, pr)
	}
	r.mu.Unlock()
	r.endStops()
	for _, pr := range prs {
		pr.post(detachPod{})
		<-pr.done
	}
}

// StopOrphans stops what an earlier node left and no Run claimed: every pod Start recovered that
// was not Run (with its recorded grace period: SIGTERM, then SIGKILL), whose record is then
// deleted, and every shim no valid record claims (with the default grace period, 30 s), after
// which the unusable records are deleted. node calls it once every pod source had its first say.
// The pods are stopped concurrently; it returns once all are, or when ctx ends (or Detach): the
// records of what was not stopped stay. A shim it could not stop for another reason (one that
// does not answer as a shim) is its error, and the next call tries it again, with its pod's grace
// period: a cluster member keeps such pods held until a call succeeds. The record of a pod whose
// shim is stopped only by such a later call stays until the next node's start, which finds the
// shim gone and deletes it.
func (r *Runtime) StopOrphans(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopOnDetach := context.AfterFunc(r.stops, cancel)
	defer stopOnDetach()

	r.mu.Lock()
	var pods []*recoveredPod
	for _, rc := range r.recovered {
		if rc.stopped == nil {
			rc.stopped = make(chan struct{})
			pods = append(pods, rc)
		}
	}
	shims, bad := r.orphans, r.badRecords
	r.orphans, r.badRecords = nil, nil
	r.mu.Unlock()
	// again keeps a shim that could not be stopped for the next call (not one that ctx ended).
	again := func(left []orphanShim) {
		if len(left) == 0 || ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		r.orphans = append(r.orphans, left...)
		r.mu.Unlock()
	}

	var wg sync.WaitGroup
	errs := make(chan error, len(pods)+len(shims))
	for _, rc := range pods {
		wg.Go(func() {
			r.log.Info("pod no longer given: stopping the containers an earlier node left", "pod", rc.rec.Namespace+"/"+rc.rec.Name, "uid", rc.rec.UID)
			left, err := r.stopRecorded(ctx, rc.rec)
			if err == nil {
				r.deleteRecord(rc.rec.UID)
			}
			again(left)
			errs <- err
			r.mu.Lock()
			delete(r.recovered, rc.rec.UID)
			r.mu.Unlock()
			close(rc.stopped)
		})
	}
	var stopping sync.WaitGroup
	for _, o := range shims {
		stopping.Go(func() {
			if o.pod == "" {
				r.log.Warn("stopping a container no pod record describes", "socket", o.socket)
			} else {
				r.log.Warn("stopping again a container an earlier stop could not reach", "pod", o.pod, "socket", o.socket)
			}
			err := r.stopShim(ctx, o.socket, o.grace)
			if err != nil {
				again([]orphanShim{o})
			}
			errs <- err
		})
	}
	stopping.Wait()
	if ctx.Err() == nil {
		for _, path := range bad {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs <- fmt.Errorf("delete unusable pod record: %w", err)
			}
		}
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		if err != nil {
			all = append(all, err)
		}
	}
	return errors.Join(all...)
}

// orphanShim is a shim StopOrphans stops: its socket, the grace period its container gets, and the
// pod it ran ("" when no record says).
type orphanShim struct {
	socket string
	grace  time.Duration
	pod    string
}

// stopRecorded stops every instance rec says runs, concurrently, with rec's grace period. It
// returns the shims it did not stop, with why.
func (r *Runtime) stopRecorded(ctx context.Context, rec podRecord) ([]orphanShim, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(rec.Containers))
	for i, c := range rec.Containers {
		if c.Current == nil || c.Current.Exited || c.Socket == "" {
			continue
		}
		wg.Go(func() { errs[i] = r.stopShim(ctx, c.Socket, rec.Grace) })
	}
	wg.Wait()
	var left []orphanShim
	for i, err := range errs {
		if err != nil {
			left = append(left, orphanShim{socket: rec.Containers[i].Socket, grace: rec.Grace, pod: rec.Namespace + "/" + rec.Name})
		}
	}
	return left, errors.Join(errs...)
}

// stopShim stops the container of the shim at socket: SIGTERM, SIGKILL after grace (at least
// kubelet's 2 s floor). It returns once the container has exited, or is known gone (no shim
// there), or when ctx ends: the shim is then left to its own re-attach window.
func (r *Runtime) stopShim(ctx context.Context, socket string, grace time.Duration) error {
	p, hello, err := attachProcess(socket)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		_ = os.Remove(socket) // the shim is gone; its socket file stayed
		return nil
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("stop container of shim %s: %w", socket, err)
	case hello.Exited:
		<-p.done
		return nil
	}
	grace = max(grace, podapi.MinimumGracePeriod)
	p.terminate(grace)
	kill := r.opts.Clock.AfterFunc(grace, p.kill)
	defer kill.Stop()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		p.detach()
		<-p.done
		return fmt.Errorf("stop container of shim %s: %w", socket, ctx.Err())
	}
}
