#!/usr/bin/env bash
# bench/routers-callgrind.sh BIN ROUTER [recorded] counts the instructions
# a build of bench/routers executes per GET /fast under callgrind: the
# program's total, and for a recorded run (MATRIX_REPORT set) those of the
# recorder's entry points per request (the dispatch's begin and end, the
# request's method and host, the status code, the route hooks, the hooks
# of instrumented functions). Load: wrk -t1 -c4 on 127.0.0.1, counted from
# 3 s after the start for D seconds (default 6). Needs valgrind and wrk.
set -euo pipefail
# The benchmark modules are not in the repository's go.work (the product
# and its test module): each go command here runs in its own module.
export GOWORK=off
BIN=$1 ROUTER=$2 REC=${3:-}
D=${D:-6}
TMP=$(mktemp -d /tmp/matrix-routers-cg.XXXXXX)
PID=
cleanup() {
	if [[ -n $PID ]]; then kill "$PID" 2>/dev/null || true; fi
	rm -rf "$TMP"
}
trap cleanup EXIT
envs=(GODEBUG=asyncpreemptoff=1) # callgrind and Go's preemption signals do not mix
[[ -n $REC ]] && envs+=(MATRIX_REPORT="$TMP/reports.jsonl")
env "${envs[@]}" valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" "$BIN" -router "$ROUTER" >"$TMP/srv.out" 2>&1 &
PID=$!
ADDR=
for _ in $(seq 600); do
	ADDR=$(sed -n 's/^listening on //p' "$TMP/srv.out")
	[[ -n $ADDR ]] && break
	sleep 0.1
done
[[ -n $ADDR ]] || { cat "$TMP/srv.out" >&2; exit 1; }
wrk -t1 -c4 -d3s "http://$ADDR/fast" >/dev/null
callgrind_control -z "$PID" >/dev/null 2>&1
req=$(wrk -t1 -c4 -d"${D}s" "http://$ADDR/fast" | awk '/requests in/ {print $1}')
callgrind_control -d "$PID" >/dev/null 2>&1
sleep 0.5
f=$TMP/cg.out.1 # the dump: from the zeroing to here
callgrind_annotate --tree=none --inclusive=yes --threshold=100 "$f" 2>/dev/null | awk -v R="$req" -v B="$(basename "$BIN")" -v RT="$ROUTER" '
	/PROGRAM TOTALS/ { x = $1; gsub(",", "", x); total = x / R }
	/:runtime\.matrix(DispatchBeginRequest|DispatchBegin|DispatchEnd|DispatchRequest|DispatchStatus|Enter|Exit) \[/ || /__matrix_rt_route \[/ {
		x = $1; gsub(",", "", x); n = $0; sub(/ \[.*/, "", n); sub(/.*[.:]/, "", n); v[n] = x / R; s += x / R
	}
	# The ANR watchdog ticks at a fixed rate: counted apart, per request.
	/tracer\/anr.go:.*ANRTracer\)\.run \[/ { x = $1; gsub(",", "", x); anr = x / R }
	END {
		printf "%s %s: %d requests, %.0f instructions per request (%.0f in the watchdog'"'"'s ticks); recorder %.0f:", B, RT, R, total, anr, s
		for (k in v) printf " %s=%.0f", k, v[k]
		print ""
	}'
