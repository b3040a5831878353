package main

import (
	"context"
	"errors"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/podapi"
)

// httpShutdownTimeout bounds waiting for in-flight API requests (follows end at once).
const httpShutdownTimeout = 5 * time.Second

// shutdown takes the node down in dependency order, each step after the previous one finished:
//
//  0. the static pod watcher: no more reads of --pod-manifest-path; the static pods it was
//     stopping are gone, the ones it runs join the started pods (none with --cluster); then the
//     cluster (cluster.go): this member's pods stop, then it leaves; then housekeeping;
//  1. the started pods: liveness and startup probes stop, every container is killed with its grace
//     period (readiness goes on probing, and the API keeps answering meanwhile);
//  2. the HTTP API (in-flight log follows end), then the fleet uplink, feed and remote (fleet.go);
//  3. the probe tree: every worker, timer and in-flight probe;
//  4. the runtime's exec-probe guard (nothing probes any more);
//  5. the actor system, then the event recorder (it prints what is still queued).
//
// It takes down only what was built, so buildNode uses it on failure too.
func (n *node) shutdown(started []*v1.Pod) {
	if n.static != nil { // first: with --cluster it hands the sharder the pod set, which leaveCluster stops
		started = append(started, n.static.Close()...)
	}
	n.leaveCluster()
	if n.housekeepingDone != nil {
		close(n.housekeepingStop)
		<-n.housekeepingDone
	}
	if n.rt != nil && n.tree != nil {
		n.terminatePods(started)
	}
	if n.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
		if err := n.http.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Warn("http server shutdown", "error", err)
		}
		cancel()
	}
	n.stopFleet()
	if n.tree != nil {
		if err := n.tree.Stop(); err != nil {
			n.log.Error("probe tree did not stop cleanly", "error", err)
		}
	}
	if n.rt != nil {
		n.rt.Close()
	}
	if n.sys != nil {
		n.sys.Shutdown()
	}
	if n.rec != nil {
		n.rec.Close()
	}
	if n.ln != nil {
		_ = n.ln.Close() // already closed by the HTTP server's Shutdown if it served
	}
}

// StopPod implements staticpod.Runner: terminatePods for one pod, which the runtime then forgets
// (with its logs) once every process of it is gone. A pod that does not stop in time stays with the
// runtime, whose shutdown takes it down.
func (n *node) StopPod(pod *v1.Pod) {
	n.tree.StopLivenessAndStartup(pod)
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout(podapi.GracePeriod(pod)))
	defer cancel()
	if err := n.rt.Remove(ctx, pod.UID); err != nil {
		n.log.Error("static pod did not stop in time; it is left to node's shutdown", "pod", pod.Namespace+"/"+pod.Name, "error", err)
		return
	}
	n.tree.RemovePod(pod)
	n.tries.Forget(pod.UID)
	n.fleetPodChanged(pod.UID)
}

// stopTimeout bounds waiting for pods to stop: apps and then sidecars each get their grace period;
// allow for both and some slack.
func stopTimeout(grace time.Duration) time.Duration { return 2*grace + 10*time.Second }

// terminatePods is kubelet's SyncTerminatingPod for every pod: liveness and startup probes stop,
// containers are killed with their grace periods (readiness keeps probing meanwhile), then the pod's
// workers are removed.
func (n *node) terminatePods(pods []*v1.Pod) {
	maxGrace := podapi.DefaultGracePeriod
	for _, pod := range pods {
		n.tree.StopLivenessAndStartup(pod)
		maxGrace = max(maxGrace, podapi.GracePeriod(pod))
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout(maxGrace))
	defer cancel()
	if err := n.rt.Shutdown(ctx); err != nil {
		n.log.Error("containers did not stop in time", "error", err)
	}
	for _, pod := range pods {
		n.tree.RemovePod(pod)
		n.tries.Forget(pod.UID)
	}
}
