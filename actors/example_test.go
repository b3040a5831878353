package actors_test

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/actors"
	"github.com/probeactor/probeactor/actors/fakeruntime"
	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/messages"
)

// Subscribe an actor of yours to readiness changes: it acknowledges each batch to get the next one.
func ExampleTree_Subscribe() {
	log := hclog.NewNullLogger() // your logger
	// logging.SystemOption routes protoactor's own slog output into the same hclog logger.
	sys := actor.NewActorSystem(logging.SystemOption(log))
	defer sys.Shutdown()

	rt := fakeruntime.New(nil) // the wall clock; exec probes exit 0 unless scripted
	tree, err := actors.Start(sys.Root,
		actors.WithRuntime(rt),
		actors.WithLogger(log),
		// kubelet delays the first probe of workers created right after start by rand×period;
		// a constant 0 turns that restart jitter off for this example.
		actors.WithRand(func() float64 { return 0 }))
	if err != nil {
		panic(err)
	}

	// A subscriber is any actor: it acknowledges each batch to get the next one.
	isReady := make(chan struct{})
	sub := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if b, ok := ctx.Message().(*messages.ResultChanges); ok {
			ready := false
			for _, c := range b.Changes {
				fmt.Printf("%s %s: %s\n", c.Container, c.Type, c.Result)
				ready = ready || c.Result == messages.Success
			}
			ctx.Respond(&messages.AckResults{Seq: b.Seq})
			if ready {
				close(isReady)
			}
		}
	}))
	tree.Subscribe(sub, actors.OfTypes(messages.Readiness))

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app",
			ReadinessProbe: &v1.Probe{
				ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
				PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
			},
		}}},
	}
	rt.RunPod(pod)
	if err := tree.AddPod(pod); err != nil {
		panic(err)
	}
	<-isReady

	if err := tree.Stop(context.Background()); err != nil {
		panic(err)
	}
	sys.Root.Stop(sub)
	// Output:
	// app Readiness: Failure
	// app Readiness: Success
}
