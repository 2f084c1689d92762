#!/usr/bin/env bash
# bench/routers.sh measures routers' GET /fast under wrk load, plain vs
# built with -toolexec=matrixexec in zero-code mode and run with every
# request a recorded dispatch (MATRIX_REPORT set, the default thresholds):
# chi v5, gin, echo v4 and a Go 1.22 ServeMux (bench/routers), and fiber v2
# on fasthttp's server and hertz on its own server and netpoll when asked
# for (ROUTERS=fiber, ROUTERS=hertz). Per round and
# router, the plain and the instrumented server run in turn (the order
# alternates from round to round), each with 1 s of warm-up and then
# `wrk -t2 -c32` for D seconds on 127.0.0.1. The server's CPU time
# (utime+stime from /proc/PID/stat) over the measured run, divided by the
# requests wrk counted, is its CPU per request. Every ratio is the median of
# per-round ratios: the machine is shared, and a drift in load then hits
# both sides of a ratio alike. On a 2-core machine, where server and wrk
# share the cores, one round's ratio moves by ±10 % and more, even with both
# servers loaded at the same time: many short rounds make a steadier median
# than a few long ones.
#
# Usage: bench/routers.sh [ROUNDS [SECONDS]]   (default 20 rounds of 3 s)
#   ROUTERS="chi gin" bench/routers.sh          only some routers (of chi,
#                                               gin, echo, mux, fiber and
#                                               hertz)
#   MX=/path/to/matrixexec bench/routers.sh     an already built matrixexec
#   OUT=/some/dir bench/routers.sh              where raw outputs go
#   PLAIN=bin INSTR=bin bench/routers.sh        measure these two builds of
#                                               bench/routers instead
#   PIN=1 bench/routers.sh                      server on CPU 0, wrk on CPU 1
#   NICE=-20 bench/routers.sh                   server and wrk at this nice
#                                               value (root): on a machine
#                                               busy with other work, the
#                                               side with more threads gets
#                                               more CPU, not the faster one
# Needs: go, wrk (apt-get install wrk). Network: the module proxy for the
# first build, 127.0.0.1 for the load.
set -euo pipefail
# The benchmark modules are not in the repository's go.work (the product
# and its test module): each go command here runs in its own module.
export GOWORK=off

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
ROUNDS=${1:-20}
D=${2:-3}
ROUTERS=${ROUTERS:-"chi gin echo mux"}
OUT=${OUT:-$(mktemp -d /tmp/matrix-routers.XXXXXX)}
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/matrix-routers-work.XXXXXX)
SERVER_PID=
cleanup() {
	if [[ -n $SERVER_PID ]]; then kill "$SERVER_PID" 2>/dev/null || true; fi
	rm -rf "$TMP"
}
trap cleanup EXIT
command -v wrk >/dev/null || {
	echo "needs wrk: apt-get install -y wrk" >&2
	exit 1
}
unset MATRIX_REPORT MATRIX_EVIL_THRESHOLD_MS MATRIX_DEBUG_HOOKS MATRIX_LOG MATRIX_MAP MATRIX_BLACKLIST GOFLAGS
export GOFLAGS=-buildvcs=false
SRV_PRE=() WRK_PRE=()
if [[ ${NICE:-} ]]; then SRV_PRE+=(nice -n "$NICE") WRK_PRE+=(nice -n "$NICE"); fi
if [[ ${PIN:-0} == 1 ]]; then SRV_PRE+=(taskset -c 0) WRK_PRE+=(taskset -c 1); fi
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

if [[ -z ${MX:-} && -z ${INSTR:-} ]]; then
	MX=$TMP/matrixexec
	(cd "$ROOT" && go build -o "$MX" ./cmd/matrixexec)
fi
if [[ -n ${PLAIN:-} && -n ${INSTR:-} ]]; then
	cp "$PLAIN" "$TMP/srv-plain"
	cp "$INSTR" "$TMP/srv-instr"
else
	log "building bench/routers plain and instrumented (zero-code mode)"
	(cd "$BENCH/routers" && go build -o "$TMP/srv-plain" .)
	# MATRIX_ZEROCODE=on: a tracer that cannot be linked fails the build
	# instead of measuring a server that records nothing.
	(cd "$BENCH/routers" && MATRIX_ZEROCODE=on go build -o "$TMP/srv-instr" -toolexec="$MX" .)
fi
log "raw output in $OUT"
{
	echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "go: $(go version)"
	echo "matrix: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "rounds: $ROUNDS of ${D}s, wrk -t2 -c32; nice: ${NICE:-0}; pinned: ${PIN:-0}"
} >"$OUT/env.txt"
cat "$OUT/env.txt" >&2

start_server() { # kind router
	local env=()
	[[ $1 == instr ]] && env=(MATRIX_REPORT="$TMP/reports-$2.jsonl")
	rm -f "$TMP/srv.out"
	: >"$TMP/srv.out"
	env "${env[@]}" "${SRV_PRE[@]}" "$TMP/srv-$1" -router "$2" >>"$TMP/srv.out" 2>&1 &
	SERVER_PID=$!
	for _ in $(seq 100); do
		ADDR=$(sed -n 's/^listening on //p' "$TMP/srv.out")
		[[ -n $ADDR ]] && return 0
		sleep 0.05
	done
	echo "server did not start" >&2
	cat "$TMP/srv.out" >&2
	exit 1
}
stop_server() {
	kill "$SERVER_PID" 2>/dev/null || true
	wait "$SERVER_PID" 2>/dev/null || true
	SERVER_PID=
}
cputicks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# raw.txt: round router kind req/s requests cpu-ticks
: >"$OUT/raw.txt"
for r in $(seq "$ROUNDS"); do
	for router in $ROUTERS; do
		kinds="plain instr"
		((r % 2 == 0)) && kinds="instr plain"
		for kind in $kinds; do
			start_server "$kind" "$router"
			"${WRK_PRE[@]}" wrk -t2 -c32 -d1s "http://$ADDR/fast" >/dev/null # warm-up
			t0=$(cputicks "$SERVER_PID")
			"${WRK_PRE[@]}" wrk -t2 -c32 -d"${D}s" "http://$ADDR/fast" >"$TMP/wrk.txt"
			t1=$(cputicks "$SERVER_PID")
			rps=$(awk '/^Requests\/sec:/ {print $2}' "$TMP/wrk.txt")
			reqs=$(awk '/requests in/ {print $1}' "$TMP/wrk.txt")
			if grep -q 'Non-2xx' "$TMP/wrk.txt"; then
				echo "$router $kind: non-2xx answers" >&2
				cat "$TMP/wrk.txt" >&2
				exit 1
			fi
			stop_server
			echo "$r $router $kind $rps $reqs $((t1 - t0))" >>"$OUT/raw.txt"
			log "round $r/$ROUNDS $router $kind: $rps req/s, $((t1 - t0)) ticks for $reqs requests"
		done
	done
done

# The table: per router, the medians of plain's req/s and of the per-round
# ratios (instrumented ÷ plain) of req/s and of CPU per request.
{
	echo "| router | plain req/s | recorded ÷ plain, req/s | recorded ÷ plain, CPU per request | plain CPU per request |"
	echo "| --- | ---: | ---: | ---: | ---: |"
	for router in $ROUTERS; do
		awk -v R="$router" -v tck="$(getconf CLK_TCK)" '
			function median(a, n,   i, j, t) {
				for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
				return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
			}
			$2 == R { rps[$1, $3] = $4; cpu[$1, $3] = $6 / $5; if ($1 > n) n = $1 }
			END {
				for (i = 1; i <= n; i++) {
					p[i] = rps[i, "plain"]; q[i] = rps[i, "instr"] / rps[i, "plain"]
					c[i] = cpu[i, "instr"] / cpu[i, "plain"]; pc[i] = cpu[i, "plain"] * 1e6 / tck
					lo = (i == 1 || q[i] < lo) ? q[i] : lo; hi = (i == 1 || q[i] > hi) ? q[i] : hi
				}
				printf "| %s | %.1fk | **%.2f×** (%.2f×–%.2f×) | **%.2f×** | %.1f µs |\n", R, median(p, n) / 1000, median(q, n), lo, hi, median(c, n), median(pc, n)
			}' "$OUT/raw.txt"
	done
} >"$OUT/table.md"
cat "$OUT/table.md"
