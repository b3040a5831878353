package main

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/internal/podapi"
)

// What node answers from its runtime and tree: the HTTP API's Source.

// Pods implements server.Source: every pod with the statusManager's probe-adjusted status (the
// runtime's own view until the statusManager has one).
func (n *node) Pods(ctx context.Context) ([]v1.Pod, error) {
	return n.podsWithStatus(ctx, n.rt.Pods())
}

// podsWithStatus is each of specs as /pods serves it: a copy with the merged status and, with
// --node-name, spec.nodeName (the fleet uplink sends the same). The tree is asked once for all of
// them (one query, one reply process in protoactor's registry, however many pods).
func (n *node) podsWithStatus(ctx context.Context, specs []*v1.Pod) ([]v1.Pod, error) {
	if len(specs) == 0 {
		// No query: with --cluster, /pods is served (empty) while the remote starts, and protoactor's
		// remote.Start sets the process registry's address that a query's future reads.
		return []v1.Pod{}, nil
	}
	uids := make([]types.UID, len(specs))
	for i, spec := range specs {
		uids[i] = spec.UID
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	statuses, err := n.tree.PodStatuses(qctx, uids...)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("pod statuses: %w", err)
	}
	out := make([]v1.Pod, 0, len(specs))
	for _, spec := range specs {
		pod := *spec.DeepCopy()
		pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
		if n.nodeName != "" {
			pod.Spec.NodeName = n.nodeName
		}
		st, ok := statuses[pod.UID]
		if !ok {
			st, _ = n.rt.Status(pod.UID)
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
func (n *node) LogPath(uid types.UID, container string, previous bool) (string, bool, error) {
	path, err := n.rt.LogPath(uid, container, previous)
	if err != nil || previous {
		return path, false, err
	}
	st, _ := n.rt.Status(uid)
	cs, ok := podapi.ContainerStatus(&st, container)
	return path, ok && cs.State.Running != nil, nil
}

// Events implements server.Source.
func (n *node) Events() v1.EventList { return n.rec.List() }

// observeStatus sees each status the runtime reports, before the tree does: the status page's
// attempt recorder learns the pod's container IDs first, so it can attribute every attempt the
// tree then makes, and the fleet feed learns the pod changed.
func (n *node) observeStatus(pod *v1.Pod, st v1.PodStatus) {
	n.tries.Observe(pod, st)
	n.fleetPodChanged(pod.UID)
}
