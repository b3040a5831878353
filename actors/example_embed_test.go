package actors_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/actors"
	"github.com/probeactor/probeactor/actors/fakeruntime"
	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/messages"
)

// The README's embedding program: start an actor system, start a tree with a runtime, add a
// validated pod, follow its readiness with a func, stop. (README_test checks the README shows
// exactly this body as its main.)
func Example() {
	log := hclog.New(&hclog.LoggerOptions{Name: "embed", Level: hclog.Warn})
	sys := actor.NewActorSystem(logging.SystemOption(log)) // protoactor's own logs go to log too
	defer sys.Shutdown()

	// Your container runtime: it kills containers whose liveness fails and runs exec probes. This
	// one runs pods in memory (exec probes exit 0). Start hands it the tree's SetPodStatus.
	rt := fakeruntime.New(nil)
	tree, err := actors.Start(sys.Root, actors.WithRuntime(rt), actors.WithLogger(log))
	if err != nil {
		panic(err)
	}

	// A func subscriber: probeactor acknowledges each batch when fn returns; a slow fn only makes
	// changes coalesce. WithSnapshot starts with the current results.
	ctx, cancel := context.WithCancel(context.Background())
	var ready sync.WaitGroup
	ready.Add(1)
	err = tree.SubscribeFunc(ctx, func(b messages.ResultChanges) {
		for _, c := range b.Changes {
			fmt.Printf("%s %s: %s\n", c.Container, c.Type, c.Result)
			if c.Result == messages.Success {
				ready.Done()
			}
		}
	}, actors.OfTypes(messages.Readiness), actors.WithSnapshot())
	if err != nil {
		panic(err)
	}

	probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", ReadinessProbe: probe}}},
	}
	probe.PeriodSeconds = -1
	fmt.Println(tree.AddPod(pod)) // refused as the API server would: nothing starts
	probe.PeriodSeconds = 1       // the other fields get the API's defaults
	if err := tree.AddPod(pod); err != nil {
		panic(err)
	}
	rt.RunPod(pod) // the runtime starts the containers and reports their states

	ready.Wait()
	cancel() // ends the subscription
	if err := tree.Stop(context.Background()); err != nil {
		panic(err)
	}
	// Output:
	// actors.AddPod default/web: spec.containers[0].readinessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0
	// app Readiness: Failure
	// app Readiness: Success
}
