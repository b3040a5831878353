// Package bench holds the architecture study's benchmarks: the actor core (package actors) against
// the kubelet-style baseline (tests/kubeletstyle), both driven through tests/conformance's Driver
// with the same prober, so the only difference is the architecture.
//
//	make bench   # go test -run '^$' -bench . -benchmem ./tests/bench/ | tee docs/bench/bench.txt
//	make plots   # go run ./tests/bench/benchplot: the charts of that run, as PNGs in docs/bench
//
// BenchmarkProbeLoop/impl=…/workers=N — N liveness workers (one per pod), period 1 s, start-up jitter
// on, an instant prober, each pod handed over as kubelet's SyncPod does (its status, then the pod).
// Once every worker has probed (setup-ns/worker: from the first pod handed over to then;
// feed-ns/worker: from then to the return of the last call, the caller's own stage, so that setup
// minus feed is what the pipeline behind the caller and the last workers' jitter, up to one period,
// add),
// a forced GC (setup's garbage) and a further 2 s warm-up, it measures a fixed window (5 s) and reports
// cpu-ns/probe (process user+sys CPU from getrusage over the window / probes in the window),
// allocs/probe (heap allocations in the window / probes), go-starts/probe (goroutines started in the
// window / probes: the actor core starts one only when its pools grow), go-runs/probe (times a
// goroutine was scheduled to run after being runnable, woken or preempted, in the window / probes:
// the runtime's scheduling-latency histogram samples every 8th scheduling of each goroutine, so
// its count times 8 is an estimate, close but not exact; a wake-up is what a sparse schedule
// costs, and this counts them without the CPU noise of a shared machine),
// B/worker ((heap alloc + stack in use) after GC minus the same before Start, / N; also split into
// heap-B/worker and stack-B/worker; the pods and statuses the harness hands over are allocated before
// the baseline, so only what an implementation keeps counts; the actor core's ActorSystem is
// counted), lateness-p50/p99-ms (per worker, actual probe start minus its 1 s grid anchored at its
// first probe; a probe more than half a period late reads as early, so the metric saturates just
// below 500 ms), probes/s and in-order (the fraction of workers whose next-created worker probes
// within 1 ms after them: how much of the schedule walks memory in creation order, ~0.001 for a
// random order).
//
// Start-up jitter: every worker waits rand × period before its first probe, however long the
// set-up takes (conformance.Env.JitterWindow, jitterAll; PROBEACTOR_BENCH_JITTER_WINDOW below). Under kubelet's own rule only the workers
// created within one period of the start wait, the later ones probe in creation order, and a
// schedule in creation order is cheaper (memory is walked in order): the design that set up more
// slowly got the cheaper schedule (ARCHITECTURE.md, "Set-up since the 16-core run").
//
// BenchmarkProbeLoopHTTP/impl=actor|kubelet|bare/workers=500|2000 — the same measurement (over a
// 15 s window) with real HTTP probes: probes.Prober GETs (period 1 s, timeout 1 s) against a target that runs in a child
// process (the test binary re-executed with PROBEACTOR_BENCH_HTTP_TARGET=1), so getrusage counts only
// the prober. impl=bare is the physical floor of a Go prober: one goroutine and one ticker per worker
// doing the same GET (kubelet's User-Agent and Accept, a fresh connection reset on close, the 1 s
// timeout, the 10 KiB body limit) with one net/http client and nothing else. failed-probes counts
// probes that did not succeed (the target always answers 200: non-zero means the machine could not
// keep up, and the run's figures are suspect).
//
// BenchmarkFanout/impl=…/workers=10000 — 10,000 readiness workers probe in the same instant (no
// jitter); once the subscriber has seen all of them Success, every probe starts failing, while the
// subscriber takes 100 µs per change. Reports update-p99-us (the failing probe returned → the
// subscriber saw Failure for that container), blocked-ms (Σ over workers of the time a worker's next
// probe was held up beyond 1.5 periods, i.e. time it spent stuck instead of probing; measured the same
// way for both), send-blocked-ms (kubelet only: time workers spent inside the blocking channel send,
// measured directly), status-p99-ms (failing probe returned → the pod's Ready condition reads False,
// polled every 5 ms on 200 sampled pods during the window; the window length if never), lost
// (containers whose last observed value is still not Failure once the
// subscriber has caught up, waiting at most 60 s after the 10 s window) and subscriber-us/change (the
// subscriber's achieved slowness: a 100 µs sleep costs more on a busy VM).
//
// Parameters (environment variables, so that a run on another machine is one command on a prebuilt
// test binary, go test -c -o bench.test ./tests/bench/):
//
//	PROBEACTOR_BENCH_WORKERS=100000,1000000   BenchmarkProbeLoop's sizes (default 1000,10000,100000)
//	PROBEACTOR_BENCH_HTTP_WORKERS=500         BenchmarkProbeLoopHTTP's sizes (default 500,2000)
//	PROBEACTOR_BENCH_SHARDS=8                 the actor core's executor shards (actors.WithShards;
//	                                          default one per two procs)
//	PROBEACTOR_BENCH_JITTER_WINDOW=0          the start-up jitter window of both designs (a Go
//	                                          duration; default 1h, every worker jittered; 0 is
//	                                          kubelet's own rule, the schedule of the figures
//	                                          measured before the window)
//	PROBEACTOR_BENCH_ORDER=add-first          ProbeLoop and ProbeLoopHTTP hand each pod over before
//	                                          its status, the order of the figures measured before
//	                                          9ecd7ff; default kubelet: the status first, as
//	                                          kubelet's SyncPod does (SetPodStatus, then AddPod)
//	-test.cpu 2,4,8,16                        GOMAXPROCS: each benchmark runs once per value, its
//	                                          name suffixed -P (make bench-scaling does this;
//	                                          scaling.sh runs the same matrix, what the targets
//	                                          need first, to fit a lent machine's time)
//
// A list that does not parse fails the benchmark, naming the variable.
//
// Profiles: with PROBEACTOR_BENCH_PROFILES=<dir>, BenchmarkProbeLoop writes heap-<impl>-<n>.pprof
// (after warm-up), cpu-<impl>-<n>.pprof (the measurement window), cpu-<impl>-<n>-setup.pprof (setup:
// from the first AddPod until every worker has probed) and mutex-<impl>-<n>.pprof with
// mutex-<impl>-<n>-start.pprof (contention in the window: pprof -base the start one) there, and
// BenchmarkProbeLoopHTTP the same as heap-http-<impl>-<n>.pprof and cpu-http-<impl>-<n>.pprof.
// The actor core's goroutines carry profiler labels (actors/internal/exec): actor=probeManager,
// statusManager, resultsCache or syncLoop on the tree's stages, exec=mailboxes or attempts on the
// shards' pools. `go tool pprof -tags FILE` gives each stage's whole CPU (its mailbox and its
// collector assists included), and -tagfocus one stage's profile; the unlabelled rest is the
// caller (the benchmark), the root's activations, the shards' timers and the collector.
//
// BenchmarkChurn/impl=… — per iteration 1,000 fresh pods (liveness + readiness) are added, reported
// running, probed at least once (the last pod's readiness is Success) and removed (the last pod's
// results are gone), after one unmeasured warm-up round; reports ns/pod and leaked-goroutines (after
// Stop).
//
// Benchmark bodies run once whatever b.N is (they run for a fixed wall time, longer than -benchtime);
// the custom metrics are the result. The figures and their analysis are in ARCHITECTURE.md.
package bench
