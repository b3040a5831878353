package membership_test

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/probeactor/probeactor/cluster/membership"
	"github.com/probeactor/probeactor/remotesec"
)

// A process runs one remote, with what the membership needs added to its own settings, and the
// member on it: the remote starts first and stops last (node's lifecycle list does the same).
func Example() {
	self, peers := "127.0.0.1:7101", []string{"127.0.0.1:7101", "127.0.0.1:7102"}
	sys := actor.NewActorSystem()
	m, err := membership.New(sys, membership.Config{Cluster: "demo", Self: self, Peers: peers})
	if err != nil {
		fmt.Println(err)
		return
	}
	cancel := m.Subscribe(func(v membership.View) { fmt.Println("members:", v.Members) })
	defer cancel()

	r, err := remotesec.Start(sys, membership.RemoteConfig(remotesec.Config{Listen: self}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer remotesec.Stop(r)
	if err := m.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if err := m.Stop(ctx); err != nil { // before the remote's Stop (deferred above)
		fmt.Println(err)
	}
}
