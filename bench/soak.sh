#!/usr/bin/env bash
# bench/soak.sh: the resident memory of a service under load, plain vs
# zero-code with the defaults and every request recorded (BENCHMARKS.md
# group 5, "Under load").
#
# The server is bench/user's benchserver (GET /quote/42: a JSON answer of
# a few hundred instrumented calls). Each round runs one side, then the
# other (the order alternating), each for D seconds under
# `wrk -t2 -c$C`, and reads the server's VmRSS once a second: the table
# gives, per side, the median over rounds of the median and the maximum
# of those readings, and the difference.
#
# Usage: bench/soak.sh                 (ROUNDS=2 D=60 C=64)
#        ROUNDS=1 D=20 bench/soak.sh
# Needs: go, wrk (apt-get install wrk).
set -euo pipefail
export GOWORK=off
BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
ROUNDS=${ROUNDS:-2}
D=${D:-60}
C=${C:-64}
TMP=$(mktemp -d /tmp/matrix-soak.XXXXXX)
trap 'kill "${SERVER_PID:-}" 2>/dev/null || true; rm -rf "$TMP"' EXIT
unset MATRIX_REPORT MATRIX_LOG MATRIX_MAP MATRIX_EVIL_THRESHOLD_MS GOFLAGS
command -v wrk >/dev/null || { echo "needs wrk: apt-get install -y wrk" >&2; exit 1; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

log "building matrixexec and the server, plain and zero-code"
(cd "$ROOT" && go build -o "$TMP/matrixexec" ./cmd/matrixexec)
SRV=matrixbench.example/user/cmd/benchserver
(cd "$BENCH" && go build -o "$TMP/srv-plain" $SRV)
(cd "$BENCH" && MATRIX_ZEROCODE=on go build -o "$TMP/srv-instr" -toolexec="$TMP/matrixexec" $SRV)

run() { # side round: prints "side median-kB max-kB requests/s"
	local env=()
	[[ $1 == instr ]] && env=(MATRIX_REPORT="$TMP/reports.jsonl")
	env "${env[@]}" "$TMP/srv-$1" -addr 127.0.0.1:0 >"$TMP/srv.out" 2>&1 &
	SERVER_PID=$!
	local addr=
	for _ in $(seq 100); do
		addr=$(sed -n 's/^listening on //p' "$TMP/srv.out")
		[[ -n $addr ]] && break
		sleep 0.05
	done
	[[ -n $addr ]] || { cat "$TMP/srv.out" >&2; exit 1; }
	wrk -t2 -c"$C" -d"${D}s" "http://$addr/quote/42" >"$TMP/wrk.txt" &
	local wrk_pid=$! rss=()
	for _ in $(seq "$D"); do
		sleep 1
		rss+=("$(awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status")")
	done
	wait "$wrk_pid"
	kill -INT "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
	local sorted med max
	sorted=$(printf '%s\n' "${rss[@]}" | sort -n)
	med=$(echo "$sorted" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	max=$(echo "$sorted" | tail -1)
	echo "$1 $med $max $(awk '/^Requests\/sec:/ {print $2}' "$TMP/wrk.txt")"
}

: >"$TMP/rounds.txt"
for r in $(seq "$ROUNDS"); do
	sides="plain instr"
	((r % 2 == 0)) && sides="instr plain"
	for s in $sides; do
		log "round $r/$ROUNDS: $s, ${D}s under wrk -t2 -c$C"
		run "$s" | tee -a "$TMP/rounds.txt"
	done
done
awk '
	function median(v, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t } return v[int((n + 1) / 2)] }
	{ n[$1]++; med[$1, n[$1]] = $2; mx[$1, n[$1]] = $3; rps[$1, n[$1]] = $4 }
	END {
		for (s in n) { k = n[s]; for (i = 1; i <= k; i++) { a[i] = med[s, i]; b[i] = mx[s, i]; c[i] = rps[s, i] } M[s] = median(a, k); X[s] = median(b, k); R[s] = median(c, k) }
		print "| side | VmRSS median | VmRSS max | requests/s |"
		print "| --- | ---: | ---: | ---: |"
		printf "| plain | %.1f MiB | %.1f MiB | %d |\n", M["plain"] / 1024, X["plain"] / 1024, R["plain"]
		printf "| zero-code, every request recorded | %.1f MiB | %.1f MiB | %d |\n", M["instr"] / 1024, X["instr"] / 1024, R["instr"]
		printf "| difference | **%+.1f MiB** | **%+.1f MiB** | |\n", (M["instr"] - M["plain"]) / 1024, (X["instr"] - X["plain"]) / 1024
	}' "$TMP/rounds.txt"
