package podhost

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// HousekeepingPeriod is kubelet's: how often HandlePodCleanups runs.
const HousekeepingPeriod = 2 * time.Second

// stallPeriods is how many periods may pass without a completed pass before Check fails: a
// minute at HousekeepingPeriod.
const stallPeriods = 30

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
	last   atomic.Int64 // when the last pass completed (or the loop started), in Unix nanoseconds
}

// Housekeeping returns the Host's housekeeping loop, not running yet. retain are the other
// per-pod stores that keep only the pods the runtime runs (the status page's recorder).
func (h *Host) Housekeeping(period time.Duration, retain ...func(desired map[types.UID]struct{})) *Housekeeping {
	return &Housekeeping{h: h, period: period, retain: retain, stop: make(chan struct{}), done: make(chan struct{})}
}

// Start starts the loop on a goroutine of its own that ends with Stop.
func (k *Housekeeping) Start(context.Context) error {
	k.last.Store(time.Now().UnixNano())
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
	k.last.Store(time.Now().UnixNano())
}

// Check is node's "housekeeping" health check (kubelet's "syncloop"): it fails when no pass has
// completed for stallPeriods periods, as when a pass is stuck on the pod host's lock or the
// runtime.
func (k *Housekeeping) Check(context.Context) error {
	last := k.last.Load()
	if last == 0 {
		return fmt.Errorf("housekeeping is not running")
	}
	if since := time.Since(time.Unix(0, last)); since > stallPeriods*k.period {
		return fmt.Errorf("no housekeeping pass completed for %v (one is due every %v)", since.Round(time.Millisecond), k.period)
	}
	return nil
}
