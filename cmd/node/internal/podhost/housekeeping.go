package podhost

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// HousekeepingPeriod is kubelet's: how often HandlePodCleanups runs.
const HousekeepingPeriod = 2 * time.Second

// Housekeeping is kubelet's housekeeping loop for a node whose pods come and go (static pods, a
// cluster's share): every period the probe tree, and each of the Host's forgetters, forget every
// pod the runtime no longer runs. Tree.RemovePod stops a pod's workers, but statusManager and
// probeManager keep the pod's last statuses until CleanupPods, as kubelet's prober and status
// manager keep theirs until HandlePodCleanups (the soak measured ~10 KB per removed pod before
// this).
type Housekeeping struct {
	h      *Host
	period time.Duration
	retain []func(desired map[types.UID]struct{})
	stop   chan struct{}
	done   chan struct{}
}

// Housekeeping returns the Host's housekeeping loop, not running yet. retain are the other
// per-pod stores that keep only the pods the runtime runs (the status page's recorder).
func (h *Host) Housekeeping(period time.Duration, retain ...func(desired map[types.UID]struct{})) *Housekeeping {
	return &Housekeeping{h: h, period: period, retain: retain, stop: make(chan struct{}), done: make(chan struct{})}
}

// Start starts the loop on a goroutine of its own that ends with Stop.
func (k *Housekeeping) Start(context.Context) error {
	go k.loop()
	return nil
}

// Stop ends the loop and waits for it (a cleanup in progress finishes first).
func (k *Housekeeping) Stop(ctx context.Context) error {
	close(k.stop)
	select {
	case <-k.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (k *Housekeeping) loop() {
	defer close(k.done)
	t := time.NewTicker(k.period)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
			k.Cleanup()
		}
	}
}

// Cleanup tells the tree and the other stores which pods exist: the runtime's (a pod being
// started is in both or neither, see StartPod).
func (k *Housekeeping) Cleanup() {
	h := k.h
	h.mu.Lock()
	defer h.mu.Unlock()
	desired := map[types.UID]struct{}{}
	for _, p := range h.opts.Runtime.Pods() {
		desired[p.UID] = struct{}{}
	}
	h.opts.Tree.CleanupPods(desired)
	for _, retain := range k.retain {
		retain(desired)
	}
}
