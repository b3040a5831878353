#!/usr/bin/env bash
# scaling.sh runs the issue-22 scaling matrix of BenchmarkProbeLoop from a prebuilt test binary, in
# parts ordered by what the targets need most, so that a run cut short by a lent machine's limits (at
# most 10 minutes a command, 15 minutes of device time in all) still holds the targets' figures. The
# times are those measured on a lent 16-core Xeon (ARCHITECTURE.md, "16 cores, measured"):
#
#	part 1 (2 min):    both designs at 100,000 workers at GOMAXPROCS 16, 8, 4 and 2, and the actor
#	                   core at 1,000,000 workers at 16
#	part 2 (4.7 min):  kubelet-style at 1,000,000 workers at 16 (its setup alone is ~260 s, so the
#	                   other procs values would not fit; the plots show it as one point)
#	part 3 (~4 min):   the actor core at 1,000,000 workers at 8, 4 and 2
#	all:               1, 2 and 3 in one command (~11 min: a 10-minute call loses the last run;
#	                   "1" and "2" in one call and "3" and "profiles" in the next fit)
#	profiles (~1 min): the actor core at 1,000,000 workers at the largest procs value again, with
#	                   its CPU profiles (window, setup) and mutex profiles in DIR/prof (four
#	                   files, inside a lent machine's limit on the files that come back) and its
#	                   figures in DIR/profiled.txt, not in the plotted scaling.txt
#
# Usage, from the repository root, with the binary built here (go test -c -o bin/bench.test
# ./tests/bench/) and carried to the machine:
#
#	bash tests/bench/scaling.sh 1 DIR && bash tests/bench/scaling.sh 2 DIR   # appends to DIR/scaling.txt
#	bash tests/bench/scaling.sh 3 DIR && bash tests/bench/scaling.sh profiles DIR
#	go run ./tests/bench/benchplot -scaling -in DIR/scaling.txt -out DIR
#
# Issue 22's targets were measured with it at 74ba271 (ARCHITECTURE.md, "16 cores, measured again":
# parts 1 and 2 under the benchmark's jitter window, part 1 again under kubelet's rule, in one call
# of 8.3 min; part 3 took 3.6 min and the profiles 0.5 min), part 1, the profiles and a shard
# experiment again at 66d17a1 ("16 cores, a third time"), and set-up in each feed order, 100,000
# workers and both designs at 1,000,000 at 9ecd7ff ("16 cores, a fourth time": every target met).
# A later lent 16-core machine has only the plots left to refresh (build with -ldflags='-s -w' to
# carry two binaries, 24 MB each, inside the 64 MiB a call takes along):
#
#	bash tests/bench/scaling.sh 1 "$OUT/s" && bash tests/bench/scaling.sh 2 "$OUT/s"   # ~7 min
#	bash tests/bench/scaling.sh 3 "$OUT/s"                                               # ~4 min
#
# SCALING_CPUS (largest first), SCALING_SMALL and SCALING_LARGE override the procs and the two sizes
# (a quick check of the script itself: SCALING_CPUS=4,2 SCALING_SMALL=1000 SCALING_LARGE=2000; a
# GOMAXPROCS of 1 gives names without the -P suffix, which the plots leave out).
set -euo pipefail

part=${1:?usage: scaling.sh 1|2|3|all|profiles DIR}
out=${2:?usage: scaling.sh 1|2|3|all|profiles DIR}
cpus=${SCALING_CPUS:-16,8,4,2}
most=${cpus%%,*}
rest=${cpus#*,}
small=${SCALING_SMALL:-100000}
large=${SCALING_LARGE:-1000000}
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/bin/bench.test
[[ -x $bin ]] || { echo "scaling.sh: $bin is missing: go test -c -o bin/bench.test ./tests/bench/" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)

log=scaling.txt
run() { # workers, -test.bench pattern, procs; appends to $out/$log
	echo "# $(date -u +%FT%TZ) workers=$1 bench=$2 cpu=$3 nproc=$(nproc) load=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/$log"
	(cd "$root/tests/bench" && PROBEACTOR_BENCH_WORKERS=$1 "$bin" -test.run '^$' -test.bench "$2" \
		-test.cpu "$3" -test.timeout 30m) 2>&1 | tee -a "$out/$log"
}

part1() {
	run "$small" 'BenchmarkProbeLoop$' "$cpus"
	run "$large" 'BenchmarkProbeLoop$/impl=actor' "$most"
}
part2() { run "$large" 'BenchmarkProbeLoop$/impl=kubelet' "$most"; }
part3() { [[ $rest == "$cpus" ]] || run "$large" 'BenchmarkProbeLoop$/impl=actor' "$rest"; }
profiles() {
	local tmp
	tmp=$(mktemp -d)
	log=profiled.txt PROBEACTOR_BENCH_PROFILES=$tmp run "$large" 'BenchmarkProbeLoop$/impl=actor' "$most"
	mkdir -p "$out/prof"
	cp "$tmp"/cpu-actor-"$large".pprof "$tmp"/cpu-actor-"$large"-setup.pprof \
		"$tmp"/mutex-actor-"$large".pprof "$tmp"/mutex-actor-"$large"-start.pprof "$out/prof/"
	rm -rf "$tmp"
}

case $part in
1) part1 ;;
2) part2 ;;
3) part3 ;;
all) part1 && part2 && part3 ;;
profiles) profiles ;;
*)
	echo "scaling.sh: part must be 1, 2, 3, all or profiles, not $part" >&2
	exit 2
	;;
esac
