package main

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"

	"github.com/probeactor/probeactor/actors/logging"
)

// registryFill measures what `soak -registry-fill` prints: the heap protoactor's process registry
// keeps after n futures have come and gone (each one is a PID added and removed). The registry is
// 1,024 buckets of 32-shard concurrent maps; a Go map keeps its storage once used, so the heap
// grows with every shard a new PID lands in, up to the point where all 32,768 have storage — a
// bounded cost (~9 MiB) that a soak sees as growth until then.
func registryFill(out io.Writer) error {
	sys := actor.NewActorSystem(logging.SystemOption(hclog.NewNullLogger()))
	defer sys.Shutdown()
	echo := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(string); ok {
			c.Respond("ok")
		}
	}))
	heap := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc)
	}
	base := heap()
	done := 0
	for _, n := range []int{1000, 5000, 10000, 20000, 40000, 80000, 160000, 320000} {
		for ; done < n; done++ {
			if _, err := sys.Root.RequestFuture(echo, "ping", 10*time.Second).Result(); err != nil {
				return fmt.Errorf("future %d: %w", done, err)
			}
		}
		fmt.Fprintf(out, "futures=%-6d registry heap=+%.2f MiB\n", n, (heap()-base)/(1<<20))
	}
	return nil
}
