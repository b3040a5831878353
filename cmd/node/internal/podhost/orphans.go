package podhost

import (
	"context"
	"sync"
	"time"
)

// Orphans is the sweep of what an earlier node left behind: once every pod source had its first
// say (the parts before it in node's list started: the -f pods, the static pods' first read) and
// read successfully (seen: kubelet's sourcesReady), the runtime stops every container of a pod it
// recovered from --root-dir that no source claims (its manifest was removed or changed while node
// was down, or its record is corrupt), each with its grace period. Until the sources are seen, a
// pod none has given yet may be one whose source could not be read (a --manifest-url that does not
// answer): its containers keep running (logged once, when there are such pods), and the source
// adopts them once it can be read. The sweep
// runs on a goroutine of its own, so node serves meanwhile; Stop ends the wait, and waits for the
// sweep within its deadline.
type Orphans struct {
	h    *Host
	seen <-chan struct{}
	quit chan struct{}
	done chan struct{}
	stop sync.Once
}

// Orphans returns the sweep, not started: it sweeps once seen is closed (nil: at once).
func (h *Host) Orphans(seen <-chan struct{}) *Orphans {
	return &Orphans{h: h, seen: seen, quit: make(chan struct{}), done: make(chan struct{})}
}

// orphanSweepTimeout bounds the sweep: the grace periods it waits for, and then some.
const orphanSweepTimeout = 5 * time.Minute

// Start starts the sweep.
func (o *Orphans) Start(context.Context) error {
	go func() { // ends when every orphan stopped, or at orphanSweepTimeout, or at Stop before the sources were seen
		defer close(o.done)
		if left := o.h.opts.Runtime.Recovered(); o.seen != nil && len(left) > 0 { // nothing left unclaimed: nothing to keep
			select {
			case <-o.seen:
			default:
				o.h.log.Warn("a pod source could not be read yet: what an earlier node left running is kept until every source has been read once", "pods", len(left))
				select {
				case <-o.seen:
					o.h.log.Info("every pod source has been read: stopping what an earlier node left that none claims")
				case <-o.quit:
					return
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), orphanSweepTimeout)
		defer cancel()
		if err := o.h.opts.Runtime.StopOrphans(ctx); err != nil {
			o.h.log.Error("containers left by an earlier node did not all stop", "error", err)
		}
	}()
	return nil
}

// Stop ends the wait for the sources, and waits for the sweep to end.
func (o *Orphans) Stop(ctx context.Context) error {
	o.stop.Do(func() { close(o.quit) })
	select {
	case <-o.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
