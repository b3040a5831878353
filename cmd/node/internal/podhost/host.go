package podhost

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors"
	"github.com/probeactor/probeactor/cmd/node/internal/proc"
	"github.com/probeactor/probeactor/internal/podapi"
)

// Options configure a Host.
type Options struct {
	Tree    *actors.Tree
	Runtime *proc.Runtime
	// Events lists the node's events (the API's /events).
	Events func() v1.EventList
	// NodeName, when set, is every served pod's spec.nodeName (--node-name).
	NodeName string
	// Initial are the pods Start runs, all or none (node's -f pods; none with --cluster, whose
	// runner starts this member's share).
	Initial []*v1.Pod
	Logger  hclog.Logger
}

// Host runs pods over the tree and the runtime. Its methods other than Start and Stop need a
// started tree.
type Host struct {
	opts Options
	log  hclog.Logger

	mu    sync.Mutex            // a pod's start, and housekeeping's look at which pods exist
	pods  map[types.UID]*v1.Pod // the pods started here and not stopped: Stop terminates them
	leave bool                  // Leave was called: Stop leaves the pods running for the next node
}

// New returns a Host that runs nothing yet.
func New(opts Options) *Host {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Events == nil {
		opts.Events = func() v1.EventList { return v1.EventList{} }
	}
	return &Host{opts: opts, log: opts.Logger, pods: map[types.UID]*v1.Pod{}}
}

// Start runs the initial pods, all or none: a pod that cannot start ends Start with its error, and
// the pods already started are terminated again first.
func (h *Host) Start(context.Context) error {
	for _, pod := range h.opts.Initial {
		if err := h.StartPod(pod); err != nil { // validated when loaded: a refusal here is a bug or the OS
			err = fmt.Errorf("start pod %s/%s: %w", pod.Namespace, pod.Name, err)
			h.log.Error("stopping the pods already started", "error", err)
			ctx, cancel := context.WithTimeout(context.Background(), h.StopTimeout())
			defer cancel()
			_ = h.Stop(ctx)
			return err
		}
	}
	return nil
}

// StartPod starts a valid pod: the probe tree learns it before its containers start. An error
// means nothing of it runs. It implements staticpod.Runner and the cluster runner's PodOps.
func (h *Host) StartPod(pod *v1.Pod) error {
	if h.opts.NodeName != "" && pod.Spec.NodeName == "" {
		// As kubelet's pods have it: a container's fieldRef spec.nodeName reads the member's name.
		named := *pod
		named.Spec.NodeName = h.opts.NodeName
		pod = &named
	}
	h.mu.Lock() // housekeeping must not see the pod in the tree but not yet in the runtime
	defer h.mu.Unlock()
	if err := h.opts.Tree.AddPod(pod); err != nil {
		return err
	}
	if err := h.opts.Runtime.Run(pod); err != nil {
		h.opts.Tree.RemovePod(pod)
		return err
	}
	h.pods[pod.UID] = pod
	return nil
}

// StopPod stops a pod StartPod started, as kubelet's SyncTerminatingPod does for one pod, and the
// runtime then forgets it (with its logs) once every process of it is gone. A pod that does not
// stop in time stays with the runtime, and Stop takes it down.
func (h *Host) StopPod(pod *v1.Pod) {
	h.opts.Tree.StopLivenessAndStartup(pod)
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout(podapi.GracePeriod(pod)))
	defer cancel()
	if err := h.opts.Runtime.Remove(ctx, pod.UID); err != nil {
		h.log.Error("pod did not stop in time; it is left to node's shutdown", "pod", pod.Namespace+"/"+pod.Name, "error", err)
		return
	}
	h.opts.Tree.RemovePod(pod)
	h.mu.Lock()
	delete(h.pods, pod.UID)
	h.mu.Unlock()
}

// StopTimeout implements lifecycle.Budgeted: apps and then sidecars each get the longest grace
// period of the pods running here (kubelet's default when there are none), plus some slack.
func (h *Host) StopTimeout() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	maxGrace := podapi.DefaultGracePeriod
	for _, pod := range h.pods {
		maxGrace = max(maxGrace, podapi.GracePeriod(pod))
	}
	return stopTimeout(maxGrace)
}

// stopTimeout bounds waiting for pods to stop: apps and then sidecars each get their grace period;
// allow for both and some slack.
func stopTimeout(grace time.Duration) time.Duration { return 2*grace + 10*time.Second }

// Leave makes Stop leave every pod running for the next node on the same root directory (a
// planned restart: the runtime detaches from its containers, which wait for that node within the
// re-attach timeout) instead of terminating them.
func (h *Host) Leave() {
	h.mu.Lock()
	h.leave = true
	h.mu.Unlock()
}

// Stop is kubelet's SyncTerminatingPod for every pod: liveness and startup probes stop, containers
// are killed with their grace periods (readiness keeps probing meanwhile), then the pods' workers
// are removed. The runtime refuses new pods from then on. After Leave, the runtime detaches from
// the containers instead (they keep running) and the workers are removed.
func (h *Host) Stop(ctx context.Context) error {
	h.mu.Lock()
	pods := make([]*v1.Pod, 0, len(h.pods))
	for _, pod := range h.pods {
		pods = append(pods, pod)
	}
	leave := h.leave
	h.mu.Unlock()
	var err error
	if leave {
		h.opts.Runtime.Detach()
	} else {
		for _, pod := range pods {
			h.opts.Tree.StopLivenessAndStartup(pod)
		}
		if err = h.opts.Runtime.Shutdown(ctx); err != nil {
			err = fmt.Errorf("containers did not stop in time: %w", err)
		}
	}
	h.mu.Lock()
	for _, pod := range pods {
		h.opts.Tree.RemovePod(pod)
		delete(h.pods, pod.UID)
	}
	h.mu.Unlock()
	return err
}

// Pods implements server.Source: every pod with the statusManager's probe-adjusted status (the
// runtime's own view until the statusManager has one).
func (h *Host) Pods(ctx context.Context) ([]v1.Pod, error) {
	return h.View(ctx, h.opts.Runtime.Pods())
}

// View is each of specs as /pods serves it: a copy with the merged status and, with a node name,
// spec.nodeName (the fleet link sends the same). The tree is asked once for all of them (one
// query, one reply process in protoactor's registry, however many pods).
func (h *Host) View(ctx context.Context, specs []*v1.Pod) ([]v1.Pod, error) {
	if len(specs) == 0 {
		return []v1.Pod{}, nil
	}
	uids := make([]types.UID, len(specs))
	for i, spec := range specs {
		uids[i] = spec.UID
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	statuses, err := h.opts.Tree.PodStatuses(qctx, uids...)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("pod statuses: %w", err)
	}
	out := make([]v1.Pod, 0, len(specs))
	for _, spec := range specs {
		pod := *spec.DeepCopy()
		pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
		if h.opts.NodeName != "" {
			pod.Spec.NodeName = h.opts.NodeName
		}
		st, ok := statuses[pod.UID]
		if !ok {
			st, _ = h.opts.Runtime.Status(pod.UID)
		}
		if st.Phase == "" {
			st.Phase = v1.PodPending // accepted, nothing started yet
		}
		pod.Status = st
		out = append(out, pod)
	}
	return out, nil
}

// LogPath implements server.Source: the runtime's log file, running while that is the container's
// current instance and it runs.
func (h *Host) LogPath(uid types.UID, container string, previous bool) (string, bool, error) {
	path, err := h.opts.Runtime.LogPath(uid, container, previous)
	if err != nil || previous {
		return path, false, err
	}
	st, _ := h.opts.Runtime.Status(uid)
	cs, ok := podapi.ContainerStatus(&st, container)
	return path, ok && cs.State.Running != nil, nil
}

// Events implements server.Source.
func (h *Host) Events() v1.EventList { return h.opts.Events() }
