package main

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cmd/node/internal/staticpod"
)

// serve starts the HTTP API, then the pods — all or none: a pod that cannot start ends serving with
// its error, and the pods already started are returned to be shut down —, then the static pod
// watcher (--pod-manifest-path; its pods come and go on their own), and waits until ctx ends
// (SIGINT/SIGTERM) or the API fails. It returns the pods it started.
func (n *node) serve(ctx context.Context, pods []*v1.Pod) (started []*v1.Pod, err error) {
	go func() { n.serveErr <- n.http.Serve(n.ln) }() // ends with shutdown's http.Shutdown
	reserved := pods                                 // the -f pods: static pods may not take their names or UIDs
	if n.cluster != nil {                            // the sharder runs this member's share of the pods (cluster.go)
		if err := n.joinCluster(pods); err != nil {
			return nil, err
		}
		pods = nil
	}
	for _, pod := range pods {
		if err := n.tree.AddPod(pod); err != nil { // validated when loaded: a refusal here is a bug
			return started, fmt.Errorf("start pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		started = append(started, pod)
		if err := n.rt.Run(pod); err != nil {
			err = fmt.Errorf("start pod %s/%s: %w", pod.Namespace, pod.Name, err)
			n.log.Error("stopping the pods already started", "error", err)
			return started, err
		}
	}
	if n.manifestPath != "" {
		opts := staticpod.Options{Path: n.manifestPath, Period: n.fileCheck, Runner: n, Logger: n.log, Reserved: reserved}
		if n.cluster != nil { // the watcher only reads; the sharder runs this member's share (cluster.go)
			opts.Set, opts.Cluster = n.setStaticPods, n.cluster.cfg.name
		}
		n.static = staticpod.New(opts)
		n.static.Start()               // reads the path at once; ended by shutdown
		if n.housekeepingDone == nil { // joinCluster started it already
			n.housekeepingDone = make(chan struct{})
			go n.housekeeping() // ends when shutdown closes housekeepingStop
		}
	}
	n.log.Info("node is running", "pods", len(pods), "api", "http://"+n.ln.Addr().String(), "root_dir", n.rootDir, "pod_manifest_path", n.manifestPath)
	select {
	case <-ctx.Done():
		n.log.Info("shutting down: stopping liveness and startup probes, killing containers with their grace periods")
		return started, nil
	case err := <-n.serveErr:
		return started, fmt.Errorf("http server: %w", err)
	}
}

// StartPod implements staticpod.Runner: the probe tree learns the pod before its containers start
// (as serve does for -f pods).
func (n *node) StartPod(pod *v1.Pod) error {
	n.podsMu.Lock() // housekeeping must not see the pod in the tree but not yet in the runtime
	defer n.podsMu.Unlock()
	if err := n.tree.AddPod(pod); err != nil {
		return err
	}
	if err := n.rt.Run(pod); err != nil {
		n.tree.RemovePod(pod)
		n.tries.Forget(pod.UID)
		return err
	}
	n.fleetPodChanged(pod.UID)
	return nil
}

// housekeepingPeriod is kubelet's: how often HandlePodCleanups runs.
const housekeepingPeriod = 2 * time.Second

// housekeeping is kubelet's housekeeping loop for a node whose pods come and go (static pods): every
// housekeepingPeriod the probe tree forgets every pod the runtime no longer runs. Tree.RemovePod
// stops a pod's workers, but statusManager and probeManager keep the pod's last statuses until
// CleanupPods, as kubelet's prober and status manager keep theirs until HandlePodCleanups (the
// soak measured ~10 KB per removed pod before this). Ends when shutdown closes housekeepingStop.
func (n *node) housekeeping() {
	defer close(n.housekeepingDone)
	t := time.NewTicker(housekeepingPeriod)
	defer t.Stop()
	for {
		select {
		case <-n.housekeepingStop:
			return
		case <-t.C:
			n.cleanupPods()
		}
	}
}

// cleanupPods tells the tree which pods exist: the runtime's (a static pod being started is in both
// or neither, see StartPod).
func (n *node) cleanupPods() {
	n.podsMu.Lock()
	defer n.podsMu.Unlock()
	desired := map[types.UID]struct{}{}
	for _, p := range n.rt.Pods() {
		desired[p.UID] = struct{}{}
	}
	n.tree.CleanupPods(desired)
	n.tries.Retain(desired)
}
