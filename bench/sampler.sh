#!/usr/bin/env bash
# bench/sampler.sh: what the CPU sampler costs a slow request
# (BENCHMARKS.md group 3, "The sampler"). bench/sampler (a ~150 ms
# encoding/json route and a fast one, served in process) is built with
# -toolexec=matrixexec and run with every request a recorded dispatch
# (MATRIX_REPORT set, the slow-call threshold out of reach so that no
# report is written), the sampler on (its default floor, 20 ms) and off
# (MATRIX_SAMPLE_AFTER_MS=0), the order alternating from round to round.
# Each ratio is the median of the per-round ratios of the median latency
# and of the CPU time per request.
#
# Usage: bench/sampler.sh [ROUNDS]   (default 9 rounds of 20 requests a route)
set -euo pipefail
export GOWORK=off
BENCH=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${1:-9}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$BENCH/.." && go build -o "$work/matrixexec" ./cmd/matrixexec)
(cd "$BENCH" && go build -toolexec="$work/matrixexec" -o "$work/sampler" ./sampler)
run() { # after_ms
	MATRIX_REPORT="$work/r.jsonl" MATRIX_EVIL_THRESHOLD_MS=86400000 MATRIX_SAMPLE_AFTER_MS=$1 "$work/sampler"
}
: >"$work/ratios"
for i in $(seq "$ROUNDS"); do
	if ((i % 2)); then on=$(run 20); off=$(run 0); else off=$(run 0); on=$(run 20); fi
	for route in /decode /fast; do
		read -r _ lon con < <(grep "^$route " <<<"$on" | tr '=' ' ' | awk '{print $1, $3, $5}')
		read -r _ loff coff < <(grep "^$route " <<<"$off" | tr '=' ' ' | awk '{print $1, $3, $5}')
		echo "$route $lon $loff $con $coff" >>"$work/ratios"
	done
done
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for route in /decode /fast; do
	lat=$(grep "^$route " "$work/ratios" | awk '{ print $2 / $3 }' | median)
	cpu=$(grep "^$route " "$work/ratios" | awk '{ print $4 / $5 }' | median)
	grep "^$route " "$work/ratios" | awk -v r="$route" -v lat="$lat" -v cpu="$cpu" '
		{ on += $2; off += $3 }
		END { printf "| %s | %.1f ms | %.1f ms | **%.3f×** | %.3f× |\n", r, off / NR / 1000, on / NR / 1000, lat, cpu }'
done
