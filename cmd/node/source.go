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
	specs := n.rt.Pods()
	out := make([]v1.Pod, 0, len(specs))
	for _, spec := range specs {
		pod, err := n.podWithStatus(ctx, spec)
		if err != nil {
			return nil, err
		}
		out = append(out, pod)
	}
	return out, nil
}

// podWithStatus is one pod as /pods serves it: a copy of spec with the merged status and, with
// --node-name, spec.nodeName (the fleet uplink sends the same).
func (n *node) podWithStatus(ctx context.Context, spec *v1.Pod) (v1.Pod, error) {
	pod := *spec.DeepCopy()
	pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	if n.nodeName != "" {
		pod.Spec.NodeName = n.nodeName
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	st, ok, err := n.tree.PodStatus(qctx, pod.UID)
	cancel()
	if err != nil {
		return v1.Pod{}, fmt.Errorf("pod status of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if !ok {
		st, _ = n.rt.Status(pod.UID)
	}
	if st.Phase == "" {
		st.Phase = v1.PodPending // accepted, nothing started yet
	}
	pod.Status = st
	return pod, nil
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
