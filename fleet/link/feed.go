package link

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/fleet/uplink"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/messages"
)

const (
	// feedName is the feed actor's name, below the system's root.
	feedName = "fleet-feed"
	// fleetRefreshDelay batches the dirty pods' status reads: a probe result reaches the
	// statusManager and the feed independently, so the feed reads a little later (and coalesces
	// bursts).
	fleetRefreshDelay = 100 * time.Millisecond
	// fleetFullSync is how often every pod's status is read again, whatever was marked dirty.
	fleetFullSync = 10 * time.Second
	// viewTimeout bounds one read of the pods' statuses (Config.View), so a stuck read never
	// holds the feed, and with it the flush and Stop, for longer.
	viewTimeout = 5 * time.Second
)

// Messages the feed receives besides the probe tree's *messages.ResultChanges (which it answers
// with *messages.AckResults at once).
type (
	// podDirty: Link.PodChanged → feed. A pod started, stopped or changed status.
	podDirty struct{ uid types.UID }
	// refreshDue: the feed's refresh timer → feed. Read the dirty pods now.
	refreshDue struct{}
	// fullSyncDue: the feed's full-sync timer → feed. Read every pod now.
	fullSyncDue struct{}
	// flushRequest: Link.Stop → feed. Read every pod now, then close done.
	flushRequest struct{ done chan<- struct{} }
)

// feedDeps is what a feed reads and writes; the Link builds it once and every incarnation of the
// feed shares it.
type feedDeps struct {
	src   *uplink.Coalescer
	pods  func() []*v1.Pod
	view  func(context.Context, []*v1.Pod) ([]v1.Pod, error)
	clock clock.Clock
	log   hclog.Logger
}

// feed turns the tree's results and the node's pods into the Coalescer's state. Its decisions are
// podSync's; Receive routes and performs them. Its state lives for one incarnation: a restarted feed
// reads every pod again at once.
type feed struct {
	feedDeps
	sync *podSync

	refresh clock.Timer // the pending refreshDue, nil when none
	full    clock.Timer // the pending fullSyncDue, nil when none
	stopped bool        // Stopping or Restarting seen: arm no timer any more
}

func newFeed(d feedDeps) *feed { return &feed{feedDeps: d, sync: newPodSync()} }

func (f *feed) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		f.sync.MarkAll()
		f.read()
		f.armFullSync(ctx)
	case *messages.ResultChanges:
		schedule := false
		for _, c := range m.Changes {
			f.src.SetResult(c)
			schedule = f.sync.Mark(c.PodUID) || schedule
		}
		ctx.Respond(&messages.AckResults{Seq: m.Seq})
		if schedule {
			f.armRefresh(ctx)
		}
	case podDirty:
		if f.sync.Mark(m.uid) {
			f.armRefresh(ctx)
		}
	case refreshDue:
		f.refresh = nil
		f.sync.Due()
		f.read()
	case fullSyncDue:
		f.sync.MarkAll()
		f.read()
		f.armFullSync(ctx)
	case flushRequest:
		f.sync.MarkAll()
		f.read()
		close(m.done)
	case *actor.Stopping, *actor.Restarting:
		f.stopTimers()
	case *actor.Stopped:
	default:
		f.log.Warn("fleet feed: unexpected message", "type", fmt.Sprintf("%T", m))
	}
}

// read reads the pods podSync plans and hands the changed ones to the Coalescer, the removed ones
// as removals.
func (f *feed) read() {
	read, removed := f.sync.PlanPods(f.pods())
	for _, uid := range removed {
		f.src.RemovePod(uid)
	}
	if len(read) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), viewTimeout)
	pods, err := f.view(ctx, read)
	cancel()
	if err != nil {
		f.log.Warn("cannot read the pods' statuses for the fleet; retried", "pods", len(read), "error", err)
		f.sync.Failed(read)
		return
	}
	for i := range pods {
		if f.sync.Changed(&pods[i]) {
			f.src.SetPod(&pods[i])
		}
	}
}

func (f *feed) armRefresh(ctx actor.Context) {
	if f.stopped {
		return
	}
	f.refresh = f.after(ctx, fleetRefreshDelay, refreshDue{})
}

func (f *feed) armFullSync(ctx actor.Context) {
	if f.stopped {
		return
	}
	f.full = f.after(ctx, fleetFullSync, fullSyncDue{})
}

// after sends msg to the feed once d has passed; the timer ends when it fires or at stopTimers.
func (f *feed) after(ctx actor.Context, d time.Duration, msg any) clock.Timer {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	return f.clock.AfterFunc(d, func() { root.Send(self, msg) })
}

func (f *feed) stopTimers() {
	f.stopped = true
	for _, t := range []clock.Timer{f.refresh, f.full} {
		if t != nil {
			t.Stop()
		}
	}
	f.refresh, f.full = nil, nil
}
