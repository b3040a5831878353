package podhost

import (
	"context"
	"time"
)

// Orphans is the sweep of what an earlier node left behind: once every pod source had its first
// say (the parts before it in node's list started: the -f pods, the static pods' first read), the
// runtime stops every container of a pod it recovered from --root-dir that no source claims
// (its manifest was removed or changed while node was down, or its record is corrupt), each with
// its grace period. The sweep runs on a goroutine of its own, so node serves meanwhile; Stop waits
// for it, within its deadline.
type Orphans struct {
	h    *Host
	done chan struct{}
}

// Orphans returns the sweep, not started.
func (h *Host) Orphans() *Orphans { return &Orphans{h: h, done: make(chan struct{})} }

// orphanSweepTimeout bounds the sweep: the grace periods it waits for, and then some.
const orphanSweepTimeout = 5 * time.Minute

// Start starts the sweep.
func (o *Orphans) Start(context.Context) error {
	go func() { // ends when every orphan stopped, or at orphanSweepTimeout
		defer close(o.done)
		ctx, cancel := context.WithTimeout(context.Background(), orphanSweepTimeout)
		defer cancel()
		if err := o.h.opts.Runtime.StopOrphans(ctx); err != nil {
			o.h.log.Error("containers left by an earlier node did not all stop", "error", err)
		}
	}()
	return nil
}

// Stop waits for the sweep to end.
func (o *Orphans) Stop(ctx context.Context) error {
	select {
	case <-o.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
