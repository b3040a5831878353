#!/usr/bin/env bash
# scaling.sh runs the issue-22 scaling matrix of BenchmarkProbeLoop from a prebuilt test binary, in
# two parts that each fit one call to a lent machine (at most 10 minutes a command, 15 minutes of
# device time in all; the estimates are for a 16-core machine, from the issue's own 16-core figures):
#
#	part 1 (~5 min): both designs at 100,000 workers and the actor core at 1,000,000 workers, each
#	                 at GOMAXPROCS 2, 4, 8 and 16
#	part 2 (~4 min): kubelet-style at 1,000,000 workers at GOMAXPROCS 16 (its setup alone is ~200 s,
#	                 so the other procs values would not fit; the plots show it as one point)
#
# Usage, from the repository root, with the binary built here (go test -c -o bin/bench.test
# ./tests/bench/) and carried to the machine:
#
#	bash tests/bench/scaling.sh 1 DIR    # appends to DIR/scaling.txt
#	bash tests/bench/scaling.sh 2 DIR
#	go run ./tests/bench/benchplot -scaling -in DIR/scaling.txt -out DIR
#
# SCALING_CPUS, SCALING_SMALL and SCALING_LARGE override the procs and the two sizes (a quick check
# of the script itself: SCALING_CPUS=1,2 SCALING_SMALL=1000 SCALING_LARGE=2000).
set -euo pipefail

part=${1:?usage: scaling.sh 1|2 DIR}
out=${2:?usage: scaling.sh 1|2 DIR}
cpus=${SCALING_CPUS:-2,4,8,16}
small=${SCALING_SMALL:-100000}
large=${SCALING_LARGE:-1000000}
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/bin/bench.test
[[ -x $bin ]] || { echo "scaling.sh: $bin is missing: go test -c -o bin/bench.test ./tests/bench/" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)

run() { # workers, -test.bench pattern, procs
	echo "# $(date -u +%FT%TZ) workers=$1 bench=$2 cpu=$3 nproc=$(nproc) load=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/scaling.txt"
	(cd "$root/tests/bench" && PROBEACTOR_BENCH_WORKERS=$1 "$bin" -test.run '^$' -test.bench "$2" \
		-test.cpu "$3" -test.timeout 30m) 2>&1 | tee -a "$out/scaling.txt"
}

case $part in
1)
	run "$small" 'BenchmarkProbeLoop$' "$cpus"
	run "$large" 'BenchmarkProbeLoop$/impl=actor' "$cpus"
	;;
2)
	run "$large" 'BenchmarkProbeLoop$/impl=kubelet' "${cpus##*,}"
	;;
*)
	echo "scaling.sh: part must be 1 or 2, not $part" >&2
	exit 2
	;;
esac
