package conformance

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors"
	"github.com/probeactor/probeactor/messages"
)

// ActorDriver drives the actor core: its own ActorSystem, the tree, and (with Env.OnChange) one
// subscriber actor that acknowledges every batch after handing its changes to OnChange.
type ActorDriver struct {
	sys  *actor.ActorSystem
	tree *actors.Tree
	sub  *actor.PID
}

var _ Driver = (*ActorDriver)(nil)

// NewActor starts the actor core with env (no jitter unless env.Rand is set).
func NewActor(env Env) (Driver, error) {
	sys := actor.NewActorSystem(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }),
		actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
	rnd := env.Rand
	if rnd == nil {
		rnd = func() float64 { return 0 }
	}
	tree, err := actors.Start(sys.Root, actors.WithRuntime(env.Runtime), actors.WithProber(env.Prober), actors.WithRand(rnd),
		actors.WithShards(env.Shards), actors.WithStartupJitterWindow(env.JitterWindow))
	if err != nil {
		sys.Shutdown()
		return nil, fmt.Errorf("start actor core: %w", err)
	}
	d := &ActorDriver{sys: sys, tree: tree}
	if env.OnChange != nil {
		onChange := env.OnChange
		d.sub = sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
			if b, ok := c.Message().(*messages.ResultChanges); ok {
				for _, ch := range b.Changes {
					onChange(Change{PodUID: ch.PodUID, ContainerID: ch.ContainerID, Type: ch.Type, Result: ch.Result})
				}
				c.Respond(&messages.AckResults{Seq: b.Seq})
			}
		}))
		tree.Subscribe(d.sub)
	}
	return d, nil
}

// AddPod implements Driver.
func (d *ActorDriver) AddPod(pod *v1.Pod) error { return d.tree.AddPod(pod) }

// RemovePod implements Driver.
func (d *ActorDriver) RemovePod(pod *v1.Pod) { d.tree.RemovePod(pod) }

// CleanupPods implements Driver.
func (d *ActorDriver) CleanupPods(desired map[types.UID]struct{}) { d.tree.CleanupPods(desired) }

// StopLivenessAndStartup implements Driver.
func (d *ActorDriver) StopLivenessAndStartup(pod *v1.Pod) { d.tree.StopLivenessAndStartup(pod) }

// SetPodStatus implements Driver.
func (d *ActorDriver) SetPodStatus(pod *v1.Pod, status v1.PodStatus) {
	d.tree.SetPodStatus(pod, status)
}

// Result implements Driver; a failed query panics (it means the tree is gone or wedged).
func (d *ActorDriver) Result(id messages.ContainerID, pt messages.ProbeType) (messages.Result, bool) {
	r, ok, err := d.tree.Result(context.Background(), id, pt)
	if err != nil {
		panic(fmt.Sprintf("conformance: actor Result(%s, %s): %v", id, pt, err))
	}
	return r, ok
}

// PodStatus implements Driver; a failed query panics.
func (d *ActorDriver) PodStatus(uid types.UID) (v1.PodStatus, bool) {
	st, ok, err := d.tree.PodStatus(context.Background(), uid)
	if err != nil {
		panic(fmt.Sprintf("conformance: actor PodStatus(%s): %v", uid, err))
	}
	return st, ok
}

// Stop stops the tree, then the subscriber, then the system.
func (d *ActorDriver) Stop() {
	if err := d.tree.Stop(context.Background()); err != nil {
		panic(fmt.Sprintf("conformance: stop actor tree: %v", err))
	}
	if d.sub != nil {
		_ = d.sys.Root.PoisonFuture(d.sub).Wait()
	}
	d.sys.Shutdown()
}
