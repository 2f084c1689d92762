#!/usr/bin/env bash
# bench/idle.sh measures what an idle server costs: bench/routers (gin),
# plain and built with -toolexec=matrixexec in zero-code mode and run with
# MATRIX_REPORT set, each left without a request for D seconds (default 10)
# after 2 s of start-up. Per build it prints the server's CPU time over
# those seconds (utime+stime from /proc/PID/stat) and its context switches
# a second, in all its threads and in the busiest one (voluntary and not,
# from /proc/PID/task/*/status).
#
# Usage: bench/idle.sh [SECONDS]
#   MX=/path/to/matrixexec bench/idle.sh     an already built matrixexec
#   PLAIN=bin INSTR=bin bench/idle.sh        measure these builds instead
# Needs: go. Network: the module proxy for the first build.
set -euo pipefail
# The benchmark modules are not in the repository's go.work (the product
# and its test module): each go command here runs in its own module.
export GOWORK=off

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
D=${1:-10}
TMP=$(mktemp -d /tmp/matrix-idle.XXXXXX)
PID=
cleanup() {
	if [[ -n $PID ]]; then kill "$PID" 2>/dev/null || true; fi
	rm -rf "$TMP"
}
trap cleanup EXIT
unset MATRIX_REPORT MATRIX_EVIL_THRESHOLD_MS GOFLAGS
export GOFLAGS=-buildvcs=false

if [[ -n ${PLAIN:-} && -n ${INSTR:-} ]]; then
	cp "$PLAIN" "$TMP/srv-plain"
	cp "$INSTR" "$TMP/srv-instr"
else
	if [[ -z ${MX:-} ]]; then
		MX=$TMP/matrixexec
		(cd "$ROOT" && go build -o "$MX" ./cmd/matrixexec)
	fi
	(cd "$BENCH/routers" && go build -o "$TMP/srv-plain" .)
	(cd "$BENCH/routers" && MATRIX_ZEROCODE=on go build -o "$TMP/srv-instr" -toolexec="$MX" .)
fi

# switches prints each thread's context switches so far, a line each.
switches() {
	for t in /proc/"$PID"/task/*; do
		awk '/^(non)?voluntary_ctxt_switches/ {n += $2} END {print n}' "$t/status"
	done
}
cpu_ticks() { awk '{print $14 + $15}' /proc/"$PID"/stat; }

echo "date: $(date -u +%Y-%m-%dT%H:%MZ); matrix: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown); idle for ${D}s"
hz=$(getconf CLK_TCK)
for kind in plain instr; do
	envs=()
	[[ $kind == instr ]] && envs=(MATRIX_REPORT="$TMP/reports.jsonl")
	env "${envs[@]}" "$TMP/srv-$kind" -router gin >"$TMP/srv.out" 2>&1 &
	PID=$!
	sleep 2
	# Threads are listed in the same order at both ends unless one starts
	# in between; a thread that starts counts from zero.
	mapfile -t a < <(switches)
	c0=$(cpu_ticks)
	sleep "$D"
	mapfile -t b < <(switches)
	c1=$(cpu_ticks)
	kill "$PID"
	wait "$PID" 2>/dev/null || true
	PID=
	total=0 top=0
	for i in "${!b[@]}"; do
		d=$((b[i] - ${a[i]:-0}))
		total=$((total + d))
		((d > top)) && top=$d
	done
	printf '%s: CPU %d ms in %ds; context switches a second: %s in all threads, %s in the busiest\n' \
		"$kind" $(((c1 - c0) * 1000 / hz)) "$D" "$(awk -v n=$total -v d="$D" 'BEGIN {printf "%.0f", n / d}')" \
		"$(awk -v n=$top -v d="$D" 'BEGIN {printf "%.0f", n / d}')"
done
