package fleetbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/fleet/aggregator"
	"github.com/probeactor/probeactor/fleet/uplink"
	"github.com/probeactor/probeactor/internal/fleettest"
	"github.com/probeactor/probeactor/internal/freeport"
	"github.com/probeactor/probeactor/internal/lifecycle"
	"github.com/probeactor/probeactor/internal/racecheck"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/remotesec"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

func TestMain(m *testing.M) {
	fleettest.Register("measured-aggregator", measuredAggregator)
	fleettest.Main()
	goleak.VerifyTestMain(m)
}

// measuredAggregator is an aggregator process (an aggregator.Aggregator, as `node fleet` runs)
// that, on SIGUSR1, collects garbage and prints its live heap ("heap_alloc=<bytes>") on stdout, so
// the benchmark can measure the memory the aggregator holds per key. It runs until SIGTERM. args:
// api and remote addresses. FLEETBENCH_AGGREGATOR_CPUPROFILE=file writes its CPU profile.
func measuredAggregator(args []string) int {
	if path := os.Getenv("FLEETBENCH_AGGREGATOR_CPUPROFILE"); path != "" { // profile the aggregator
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	agg, err := aggregator.New(aggregator.Config{Listen: args[0], RemoteListen: args[1], GracePeriod: 40 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "fleet", Level: hclog.Warn, Output: os.Stderr})})
	if err == nil {
		err = agg.Start(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	fmt.Println("ready") // only now may the benchmark signal
	// The collector goroutine ends with the process.
	go func() {
		for range usr1 {
			runtime.GC()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Printf("heap_alloc=%d\n", ms.HeapAlloc)
		}
	}()
	var failed error
	select {
	case <-ctx.Done():
	case failed = <-agg.Failed():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), lifecycle.DefaultStopTimeout)
	defer cancel()
	if err := errors.Join(failed, agg.Stop(stopCtx)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// simNode is one simulated node: its own actor system and remote endpoint, an uplink and a
// Coalescer whose keys flip. A change's container ID carries the time it was made, so the
// latency to the aggregator's acknowledgement is measured where the source is acknowledged.
type simNode struct {
	name   string
	sys    *actor.ActorSystem
	r      *remote.Remote
	pid    *actor.PID
	source *uplink.Coalescer
	keys   int
	pods   int
	// keyNames[k] = pod UID and container name of key k (built on first use, flipper-goroutine only).
	keyNames [][2]string

	mu        sync.Mutex
	latencies []time.Duration
	// waits[i] and trips[i] split latencies[i]: from the change to the Coalescer's delivery of
	// the batch carrying it (waiting for the batches ahead), and from that delivery to the
	// aggregator's acknowledgement at the node (the batch's round trip).
	waits, trips []time.Duration
	delivered    int
	measuring    bool
}

// measured wraps the Coalescer: every acknowledged batch records its changes' latencies.
type measured struct{ n *simNode }

func (m measured) Subscribe(window int, deliver func(uplink.Batch, func())) func() {
	return m.n.source.Subscribe(window, func(b uplink.Batch, ack func()) {
		sent := time.Now().UnixNano()
		deliver(b, func() {
			now := time.Now().UnixNano()
			m.n.mu.Lock()
			if m.n.measuring {
				for _, r := range b.Results {
					if at, err := strconv.ParseInt(strings.TrimPrefix(string(r.ContainerID), "proc://"), 10, 64); err == nil {
						m.n.latencies = append(m.n.latencies, time.Duration(now-at))
						m.n.waits = append(m.n.waits, time.Duration(sent-at))
						m.n.trips = append(m.n.trips, time.Duration(now-sent))
					}
				}
				m.n.delivered += len(b.Results)
			}
			m.n.mu.Unlock()
			ack()
		})
	})
}

func startSimNode(tb testing.TB, name, agg string, keys, pods, window int) *simNode {
	tb.Helper()
	sys := actor.NewActorSystem(logging.SystemOption(hclog.NewNullLogger()), actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
	r, err := remotesec.Start(sys, remotesec.Config{Listen: "127.0.0.1:0", Accept: fleetv1.ToNode(), Targets: []string{uplink.ActorName}, Futures: true})
	if err != nil {
		tb.Fatal(err)
	}
	n := &simNode{name: name, sys: sys, r: r, source: uplink.NewCoalescer(), keys: keys, pods: pods}
	now := time.Now()
	for p := range pods {
		n.source.SetPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-%d", name, p), UID: n.podUID(p), CreationTimestamp: metav1.NewTime(now)},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "example/app:1"}}},
			Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "127.0.0.1", StartTime: &metav1.Time{Time: now},
				Conditions:        []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}},
				ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: true, ContainerID: "proc://1", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}}}}})
	}
	for k := range keys {
		n.flip(k, 0)
	}
	props, err := uplink.Props(uplink.Config{Aggregator: agg, Node: name, Incarnation: uint64(now.UnixNano()), Source: measured{n},
		RequestTimeout: 10 * time.Second, Heartbeat: 5 * time.Second, Window: window})
	if err != nil {
		tb.Fatal(err)
	}
	if n.pid, err = sys.Root.SpawnNamed(props, uplink.ActorName); err != nil {
		tb.Fatal(err)
	}
	return n
}

func (n *simNode) podUID(p int) types.UID { return types.UID(fmt.Sprintf("%s-pod-%04d", n.name, p)) }

// flip sets key k to its i-th value; the strings are built once per key so the load generator
// leaves the two cores to what is measured.
func (n *simNode) flip(k, i int) {
	if n.keyNames == nil {
		n.keyNames = make([][2]string, n.keys)
		for j := range n.keyNames {
			n.keyNames[j] = [2]string{string(n.podUID(j % n.pods)), fmt.Sprintf("c%d", j/n.pods)}
		}
	}
	var buf [32]byte
	id := strconv.AppendInt(append(buf[:0], "proc://"...), time.Now().UnixNano(), 10)
	n.source.SetResult(messages.ResultChanged{PodUID: types.UID(n.keyNames[k][0]), Container: n.keyNames[k][1],
		ContainerID: messages.ContainerID(id), Type: messages.Readiness, Result: messages.Result(i % 2)})
}

func (n *simNode) stop() {
	_ = n.sys.Root.PoisonFuture(n.pid).Wait()
	remotesec.Stop(n.r)
	n.sys.Shutdown()
}

// result is one run's figures.
type result struct {
	offered, delivered float64 // changes/s made at the nodes, and acknowledged by the aggregator
	p50, p99           time.Duration
	waitP99, tripP99   time.Duration // p99 of the two parts of the latency (see simNode.waits)
	// CPU used while measuring, in cores: by the aggregator process, and by this process (the
	// simulated nodes, their load generators and the measuring).
	aggCores, nodeCores float64
	// perBatch is the changes the aggregator applied per batch it answered while measuring.
	perBatch     float64
	bytesPerKey  float64
	bytesPerNode float64
	keys         int
}

// runFleet runs nodes simulated nodes × keys flipping keys through one aggregator process for
// measure (after warmup). Each node flips rate keys per second in bursts every 10 ms; its uplink
// has window batches in flight at most (0: uplink.DefaultWindow).
func runFleet(tb testing.TB, nodes, keys, pods, rate, window int, warmup, measure time.Duration) result {
	api := freeport.Addr(tb)
	remote := freeport.Addr(tb)
	agg := fleettest.StartRole(tb, "measured-aggregator", api, remote)
	heap := heapReader(tb, agg)
	base := heap()

	sims := make([]*simNode, nodes)
	for i := range sims {
		sims[i] = startSimNode(tb, fmt.Sprintf("n%03d", i), remote, keys, pods, window)
	}
	defer func() {
		for _, n := range sims {
			n.stop()
		}
	}()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var flips sync.Map
	for _, n := range sims {
		wg.Add(1)
		go func() { // ends when stop is closed
			defer wg.Done()
			burst := max(1, rate/100)
			tk := time.NewTicker(10 * time.Millisecond)
			defer tk.Stop()
			i, made := 0, 0
			for {
				select {
				case <-stop:
					flips.Store(n.name, made)
					return
				case <-tk.C:
					for range burst {
						n.flip(i%n.keys, i/n.keys+1)
						i++
						made++
					}
				}
			}
		}()
	}
	time.Sleep(warmup) // the benchmark's own pacing, not a wait for an actor
	for _, n := range sims {
		n.mu.Lock()
		n.measuring, n.latencies, n.waits, n.trips, n.delivered = true, n.latencies[:0], n.waits[:0], n.trips[:0], 0
		n.mu.Unlock()
	}
	aggCPU := func() float64 { return fleettest.Metric(tb, "http://"+api, "process_cpu_seconds_total", "") }
	batches := func() (changes, batches float64) {
		return fleettest.Metric(tb, "http://"+api, "probeactor_fleet_changes_applied_total", ""), fleettest.Metric(tb, "http://"+api, "probeactor_fleet_batches_total", "")
	}
	changes0, batches0 := batches()
	agg0, self0 := aggCPU(), selfCPU()
	start := time.Now()
	time.Sleep(measure)
	var lat, waits, trips []time.Duration
	delivered := 0
	for _, n := range sims {
		n.mu.Lock()
		n.measuring = false
		lat = append(lat, n.latencies...)
		waits = append(waits, n.waits...)
		trips = append(trips, n.trips...)
		delivered += n.delivered
		n.mu.Unlock()
	}
	elapsed := time.Since(start)
	agg1, self1 := aggCPU(), selfCPU()
	changes1, batches1 := batches()
	close(stop)
	wg.Wait()
	loaded := heap()
	var res result
	flips.Range(func(_, v any) bool { res.offered += float64(v.(int)); return true })
	res.offered /= (warmup + elapsed).Seconds()
	res.delivered = float64(delivered) / elapsed.Seconds()
	slices.Sort(lat)
	slices.Sort(waits)
	slices.Sort(trips)
	if len(lat) > 0 {
		res.p50, res.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
		res.waitP99, res.tripP99 = waits[len(waits)*99/100], trips[len(trips)*99/100]
	}
	res.aggCores = (agg1 - agg0) / elapsed.Seconds()
	if batches1 > batches0 {
		res.perBatch = (changes1 - changes0) / (batches1 - batches0)
	}
	res.nodeCores = (self1 - self0).Seconds() / elapsed.Seconds()
	res.keys = nodes * keys
	res.bytesPerKey = float64(loaded-base) / float64(res.keys)
	res.bytesPerNode = float64(loaded-base) / float64(nodes)
	return res
}

// selfCPU returns the CPU time (user and system) this process used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapReader returns a function that makes the aggregator collect garbage and report its heap.
func heapReader(tb testing.TB, agg *fleettest.Proc) func() int64 {
	lines := func(prefix string) []string {
		var out []string
		for _, l := range strings.Split(agg.Stdout(), "\n") {
			if strings.HasPrefix(l, prefix) {
				out = append(out, l)
			}
		}
		return out
	}
	wait := func(prefix string, n int) string {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if agg.Exited() {
				tb.Fatalf("the aggregator exited: %v\n%s", agg.Err(), agg.Stderr())
			}
			if l := lines(prefix); len(l) >= n {
				return l[n-1]
			}
			time.Sleep(10 * time.Millisecond)
		}
		tb.Fatalf("no %q from the aggregator; stderr:\n%s", prefix, agg.Stderr())
		return ""
	}
	wait("ready", 1)
	reads := 0
	return func() int64 {
		reads++
		agg.Signal(syscall.SIGUSR1)
		n, _ := strconv.ParseInt(strings.TrimPrefix(wait("heap_alloc=", reads), "heap_alloc="), 10, 64)
		return n
	}
}

// BenchmarkFleet: simulated nodes × 1,000 flipping keys (100 pods × 10 probes) through one
// aggregator process. Reports changes/s acknowledged by the aggregator, the p50/p99 latency from
// a change at a node to the aggregator's acknowledgement of the batch carrying it, and the
// aggregator's live heap per key and per node. Targets on 2 cores: ≥ 50,000 changes/s, p99 ≤
// 100 ms, ≤ 2 KiB per key.
func BenchmarkFleet(b *testing.B) {
	for _, c := range []struct{ nodes, offered, window int }{{10, 100_000, 0}, {50, 100_000, 0}, {50, 50_000, 0}, {50, 100_000, 4}} {
		name := fmt.Sprintf("nodes=%d/keys=1000/offered=%d", c.nodes, c.offered)
		if c.window != 0 {
			name += fmt.Sprintf("/window=%d", c.window)
		}
		b.Run(name, func(b *testing.B) {
			r := runFleet(b, c.nodes, 1000, 100, c.offered/c.nodes, c.window, 3*time.Second, 10*time.Second)
			b.ReportMetric(r.offered, "offered-changes/s")
			b.ReportMetric(r.delivered, "changes/s")
			b.ReportMetric(float64(r.p50.Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(r.p99.Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(r.waitP99.Microseconds())/1000, "wait-p99-ms")
			b.ReportMetric(float64(r.tripP99.Microseconds())/1000, "trip-p99-ms")
			b.ReportMetric(r.perBatch, "changes/batch")
			b.ReportMetric(r.aggCores, "agg-cores")
			b.ReportMetric(r.nodeCores, "nodes-cores")
			b.ReportMetric(r.bytesPerKey, "B/key")
			b.ReportMetric(r.bytesPerNode, "B/node")
		})
	}
}

// TestFleetHarness runs the benchmark's harness small (3 nodes × 100 keys, 2 s) under the race
// detector; many remotes in one process hit protoactor's known races, hence the child process.
func TestFleetHarness(t *testing.T) {
	racecheck.InChild(t, racecheck.KnownProtoactorRaces, func(t testing.TB) {
		r := runFleet(t, 3, 100, 10, 2000, 2, time.Second, 2*time.Second)
		t.Logf("harness: %.0f changes/s offered, %.0f delivered, p50 %v, p99 %v, %.0f B/key", r.offered, r.delivered, r.p50, r.p99, r.bytesPerKey)
		if r.delivered <= 0 || r.p99 <= 0 {
			t.Fatalf("nothing went through the aggregator: %+v", r)
		}
		if r.bytesPerKey <= 0 {
			t.Errorf("the aggregator's heap did not grow with 300 keys: %+v", r)
		}
	})
}
