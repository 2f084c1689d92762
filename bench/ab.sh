#!/usr/bin/env bash
# bench/ab.sh ROUNDS BIN... runs builds of bench/user's server
# (matrixbench.example/user/cmd/benchserver) side by side: each round
# starts every BIN in turn on 127.0.0.1, warms it for 1 s and measures it
# for 3 s with wrk -t1 -c8 on GET /quote/42, and prints a line
# "round bin requests/s cpu-ticks" (the server's utime + stime over the
# measured 3 s, in clock ticks). A BIN whose name contains "plain" runs as
# it is; every other one with MATRIX_REPORT set (every request a recorded
# dispatch) and the environment given in AB_ENV. Needs wrk.
set -euo pipefail
R=$1
shift
TMP=$(mktemp -d /tmp/matrix-ab.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
read -r -a extra <<<"${AB_ENV:-}"
for r in $(seq "$R"); do
	for b in "$@"; do
		envs=()
		[[ $(basename "$b") != *plain* ]] && envs+=(MATRIX_REPORT="$TMP/reports.jsonl" "${extra[@]}")
		env "${envs[@]}" "$b" -addr 127.0.0.1:0 >"$TMP/srv.out" 2>&1 &
		pid=$!
		addr=
		for _ in $(seq 200); do
			addr=$(sed -n 's/^listening on //p' "$TMP/srv.out")
			[[ -n $addr ]] && break
			sleep 0.05
		done
		[[ -n $addr ]] || { cat "$TMP/srv.out" >&2; exit 1; }
		wrk -t1 -c8 -d1s "http://$addr/quote/42" >/dev/null
		t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
		n=$(wrk -t1 -c8 -d3s "http://$addr/quote/42" | awk '/Requests\/sec/ {print $2}')
		t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		echo "$r $(basename "$b") $n $((t1 - t0))"
	done
done
