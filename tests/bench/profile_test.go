package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"
)

// profileDir is where BenchmarkProbeLoop writes heap profiles taken after warm-up and after the
// measurement window and a CPU profile of the window, per sub-benchmark, when
// PROBEACTOR_BENCH_PROFILES names a directory:
//
//	PROBEACTOR_BENCH_PROFILES=/tmp/prof go test -run '^$' -bench 'ProbeLoop' ./tests/bench/
//	go tool pprof -sample_index=inuse_space -top /tmp/prof/heap-actor-10000.pprof
//	go tool pprof -sample_index=alloc_objects -base /tmp/prof/heap-actor-10000.pprof -top /tmp/prof/heap-actor-10000-end.pprof
var profileDir = os.Getenv("PROBEACTOR_BENCH_PROFILES")

func writeHeapProfile(b *testing.B, name string) {
	if profileDir == "" {
		return
	}
	runtime.GC()
	f, err := os.Create(filepath.Join(profileDir, "heap-"+name+".pprof"))
	if err != nil {
		b.Fatalf("heap profile: %v", err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatalf("heap profile: %v", err)
	}
}

// startCPUProfile starts a CPU profile and returns its stop function (a no-op without profileDir).
func startCPUProfile(b *testing.B, name string) func() {
	if profileDir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(profileDir, "cpu-"+name+".pprof"))
	if err != nil {
		b.Fatalf("cpu profile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Fatalf("cpu profile (not with -cpuprofile): %v", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Errorf("cpu profile: %v", err)
		}
	}
}

func profileName(impl string, n int) string { return fmt.Sprintf("%s-%d", impl, n) }

// sizes returns the worker counts a benchmark runs at: the comma-separated list in the environment
// variable env (PROBEACTOR_BENCH_WORKERS=1000000 for BenchmarkProbeLoop), or def. A list that does not
// parse fails the benchmark, naming the variable: a typo must not silently run the default sizes.
func sizes(b *testing.B, env string, def []int) []int {
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want a comma-separated list of positive worker counts", env, v)
		}
		out = append(out, n)
	}
	return out
}

// startMutexProfile samples mutex contention (one event in mutexSampleRate) during the measurement
// window and returns the function that ends it. The runtime's mutex profile is cumulative and
// cannot be reset, so it writes the profile as it stands at the start (mutex-<name>-start.pprof)
// and at the end (mutex-<name>.pprof): the window's contention is the difference,
//
//	go tool pprof -base /tmp/prof/mutex-actor-100000-start.pprof -top /tmp/prof/mutex-actor-100000.pprof
func startMutexProfile(b *testing.B, name string) func() {
	if profileDir == "" {
		return func() {}
	}
	write := func(file string) {
		f, err := os.Create(filepath.Join(profileDir, file))
		if err != nil {
			b.Fatalf("mutex profile: %v", err)
		}
		defer f.Close()
		if err := pprof.Lookup("mutex").WriteTo(f, 0); err != nil {
			b.Fatalf("mutex profile: %v", err)
		}
	}
	write("mutex-" + name + "-start.pprof")
	runtime.SetMutexProfileFraction(mutexSampleRate)
	return func() {
		runtime.SetMutexProfileFraction(0)
		write("mutex-" + name + ".pprof")
	}
}

// mutexSampleRate: one contention event in 10 is recorded (the runtime scales the profile back up).
const mutexSampleRate = 10

// benchShards is the actor core's shard count for BenchmarkProbeLoop: PROBEACTOR_BENCH_SHARDS, or 0
// (actors.WithShards' default, one per two procs).
func benchShards(b *testing.B) int {
	v := os.Getenv("PROBEACTOR_BENCH_SHARDS")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("PROBEACTOR_BENCH_SHARDS=%q: want a positive number of shards", v)
	}
	return n
}

// benchStatusFirst reports the order the set-up hands each pod over in (PROBEACTOR_BENCH_ORDER):
// default (or "kubelet") its status first, then the pod, the order of kubelet's SyncPod
// (statusManager.SetPodStatus, then probeManager.AddPod); "add-first" the pod first, the order of
// every figure measured before 9ecd7ff.
func benchStatusFirst(b *testing.B) bool {
	switch v := os.Getenv("PROBEACTOR_BENCH_ORDER"); v {
	case "", "kubelet":
		return true
	case "add-first":
		return false
	default:
		b.Fatalf("PROBEACTOR_BENCH_ORDER=%q: want kubelet or add-first", v)
		return false
	}
}

// benchJitterWindow is the start-up jitter window both designs get (conformance.Env.JitterWindow):
// PROBEACTOR_BENCH_JITTER_WINDOW, a Go duration, "0" for kubelet's own rule; default jitterAll.
func benchJitterWindow(b *testing.B) time.Duration {
	v := os.Getenv("PROBEACTOR_BENCH_JITTER_WINDOW")
	if v == "" {
		return jitterAll
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		b.Fatalf("PROBEACTOR_BENCH_JITTER_WINDOW=%q: want a duration of 0 or more (0: kubelet's rule)", v)
	}
	return d
}
