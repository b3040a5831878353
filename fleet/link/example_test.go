package link_test

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/actors"
	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/fleet/link"
)

// noTree stands in for the probe tree (*actors.Tree in node).
type noTree struct{}

func (noTree) Subscribe(*actor.PID, ...actors.SubscribeOption) {}
func (noTree) Unsubscribe(*actor.PID)                          {}

// Node builds the link from its flags, starts it after the remote and before it adds any pod,
// subscribes PodChanged to the runtime's pod events, and stops it before the remote.
func Example() {
	log := hclog.NewNullLogger()
	sys := actor.NewActorSystem(logging.SystemOption(log), actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
	defer sys.Shutdown()

	l, err := link.New(link.Config{
		System:     sys,
		Results:    noTree{},
		Pods:       func() []*v1.Pod { return nil },                                        // proc.Runtime.Pods
		View:       func(context.Context, []*v1.Pod) ([]v1.Pod, error) { return nil, nil }, // /pods' merged statuses
		Aggregator: "127.0.0.1:10257", Node: "n1", Heartbeat: 10 * time.Second,             // --fleet, --node-name, --node-status-update-frequency
		Logger: log.Named("fleet"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("start:", l.Start(context.Background()))
	l.PodChanged("pod-uid")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println("stop:", l.Stop(ctx))

	_, err = link.New(link.Config{System: sys})
	fmt.Println(err)
	// Output:
	// start: <nil>
	// stop: <nil>
	// link: Config.Results: required
}
