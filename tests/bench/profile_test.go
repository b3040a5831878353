package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
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
