# bench/service-compare.sh: MODE=compare of bench/service.sh (sourced by
# it, with its variables and functions): plain, orchestrion and matrixexec
# on the chi + ServeMux service. Not run by tests or CI.

ORCHESTRION=${ORCHESTRION:-$(command -v orchestrion || true)}
[[ -x $ORCHESTRION ]] || { echo "MODE=compare needs orchestrion: GOBIN=DIR go install github.com/DataDog/orchestrion@v1.15.0, then ORCHESTRION=DIR/orchestrion" >&2; exit 1; }
command -v wrk >/dev/null || { echo "MODE=compare needs wrk: apt-get install -y wrk" >&2; exit 1; }
COLD=${COLD:-1}
WRK_S=${WRK_S:-10}

# orchestrion's copy of the service: the same sources, no matrixexec, its
# integrations listed by hand ("orchestrion pin" needs
# dd-trace-go/orchestrion/all/v2, which a module proxy may not serve).
OSVC=$TMP/osvc
mkdir -p "$OSVC"
cp -r "$SVC/chi" "$SVC/gin" "$OSVC/"
printf 'module example.com/svc\n\ngo 1.24\n' >"$OSVC/go.mod"
integrations=()
(cd "$OSVC" && go get github.com/go-chi/chi/v5@v5.5.0 github.com/gin-gonic/gin@v1.12.0 github.com/DataDog/orchestrion@v1.15.0 >/dev/null 2>&1)
for m in net/http go-chi/chi.v5 gin-gonic/gin; do
	if (cd "$OSVC" && go get "github.com/DataDog/dd-trace-go/contrib/$m/v2@v2.12.0" >/dev/null 2>&1); then
		integrations+=("$m")
	else
		log "orchestrion: the integration contrib/$m/v2@v2.12.0 cannot be resolved here; left out"
	fi
done
{
	# The tracer's own aspects start it in main and stop it at exit.
	printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "github.com/DataDog/dd-trace-go/v2/ddtrace/tracer"\n\t_ "github.com/DataDog/orchestrion"\n'
	for m in "${integrations[@]}"; do printf '\t_ "github.com/DataDog/dd-trace-go/contrib/%s/v2"\n' "$m"; done
	printf ')\n'
} >"$OSVC/orchestrion.tool.go"
(cd "$OSVC" && go mod tidy >/dev/null 2>&1)
echo "${integrations[*]}" >"$OUT/compare-integrations.txt"
log "orchestrion's integrations: ${integrations[*]}"

# build KIND GOCACHE: builds ./chi of KIND (plain, orch, mx) into
# $TMP/out-KIND, the output removed first, and prints "wall cpu".
build() {
	local kind=$1 cache=$2
	rm -f "$TMP/out-$kind"
	case $kind in
	plain) (cd "$SVC" && GOCACHE=$cache timed go build -o "$TMP/out-$kind" ./chi) ;;
	mx) (cd "$SVC" && GOCACHE=$cache timed go build -toolexec="$MX" -o "$TMP/out-$kind" ./chi) ;;
	orch) (cd "$OSVC" && GOCACHE=$cache timed "$ORCHESTRION" go build -o "$TMP/out-$kind" ./chi) ;;
	esac
}

KINDS="plain orch mx"
: >"$OUT/compare-build.txt"
for r in $(seq "$COLD"); do
	for kind in $KINDS; do
		log "cold build, round $r/$COLD: $kind"
		# The first round's cache is each side's cache from then on.
		cache=$TMP/gc-$kind
		[[ $r == 1 ]] || cache=$TMP/cold
		rm -rf "$TMP/cold"
		echo "cold $r $kind $(build "$kind" "$cache") $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/compare-build.txt" >&2
	done
done
rm -rf "$TMP/cold"
for r in $(seq "$ROUNDS"); do
	for b in relink edit; do
		if [[ $b == edit ]]; then
			for d in "$SVC" "$OSVC"; do
				sed -i "s/return \"order \" + id.*/return \"order \" + id \/\/ $r/" "$d/chi/main.go"
			done
		fi
		for kind in $KINDS; do
			echo "$b $r $kind $(build "$kind" "$TMP/gc-$kind") $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/compare-build.txt" >&2
		done
	done
done
for kind in $KINDS; do
	echo "size $kind $(stat -c %s "$TMP/out-$kind")" >>"$OUT/compare-build.txt"
done

# The agent orchestrion's tracer sends to.
AGENT=$TMP/bin/traceagent
(cd "$BENCH" && go build -o "$AGENT" ./cmd/traceagent)
rm -f "$OUT/mx-report.jsonl" "$OUT/orch-traces.bin"
"$AGENT" -addr 127.0.0.1:8126 -o "$OUT/orch-traces.bin" &
AGENT_PID=$!
SERVER_PID=
trap 'kill $AGENT_PID $SERVER_PID 2>/dev/null || true; cleanup' EXIT
sleep 0.5

# serve KIND: starts $TMP/out-KIND on 127.0.0.1:18080 (chi) and :18081
# (ServeMux), waits until it answers.
serve() {
	local kind=$1
	case $kind in
	mx) MATRIX_REPORT=$OUT/mx-report.jsonl "$TMP/out-$kind" 2>"$OUT/server-$kind.err" & ;;
	orch) DD_SERVICE=svc DD_TRACE_AGENT_URL=http://127.0.0.1:8126 "$TMP/out-$kind" 2>"$OUT/server-$kind.err" & ;;
	*) "$TMP/out-$kind" 2>"$OUT/server-$kind.err" & ;;
	esac
	SERVER_PID=$!
	for _ in $(seq 100); do
		curl -sf http://127.0.0.1:18080/fast >/dev/null 2>&1 && curl -sf http://127.0.0.1:18081/fast >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "the $kind server did not answer" >&2
	return 1
}
stop() { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
to_us() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else print n * 1000000 }'; }

: >"$OUT/compare-load.txt"
for r in $(seq 3); do
	for kind in $KINDS; do
		serve "$kind"
		if [[ $r == 1 ]]; then
			# One slow request each on chi and the ServeMux, before any
			# load: the tracers keep or drop spans when they are flooded.
			curl -s http://127.0.0.1:18080/orders/42 >/dev/null
			curl -s http://127.0.0.1:18081/orders/43 >/dev/null
			sleep 3 # the tracers flush (orchestrion's every 2 s)
		fi
		for router in chi mux; do
			port=18080
			[[ $router == mux ]] && port=18081
			wrk -t2 -c32 -d1s "http://127.0.0.1:$port/fast" >/dev/null # warm-up
			c0=$(cpu_ticks "$SERVER_PID")
			wrk -t2 -c32 -d"${WRK_S}s" --latency "http://127.0.0.1:$port/fast" >"$TMP/wrk.txt"
			c1=$(cpu_ticks "$SERVER_PID")
			rps=$(awk '/^Requests\/sec:/ {print $2}' "$TMP/wrk.txt")
			p99=$(to_us "$(awk '$1 == "99%" {print $2}' "$TMP/wrk.txt")")
			reqs=$(awk '/requests in/ {print $1}' "$TMP/wrk.txt")
			cpu_us=$(awk -v a="$c0" -v b="$c1" -v n="$reqs" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", (b - a) / hz * 1e6 / n}')
			echo "$router $r $kind $rps $p99 $cpu_us $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/compare-load.txt" >&2
		done
		stop
	done
done
sleep 2
kill "$AGENT_PID" 2>/dev/null || true

{
	echo "## what each names for the slow GET /orders/{id}"
	echo "### matrixexec (matrixexec show)"
	"$MX" show "$OUT/mx-report.jsonl" 2>&1 | head -40 || true
	echo "### orchestrion (strings of the agent's payloads that mention orders)"
	strings -n 3 "$OUT/orch-traces.bin" | grep -m 2 -B14 -A16 'orders' || true
} >"$OUT/compare-slow.txt"

awk '
	function median(a, m,   i, j, x) {
		for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j+1] = a[j]; a[j+1] = x }
		return m % 2 ? a[(m+1)/2] : (a[m/2] + a[m/2+1]) / 2
	}
	FNR == 1 { f++ }
	f == 1 && $1 == "size" { size[$2] = $3; next }
	f == 1 { w[$1, $2, $3] = $4; cp[$1, $2, $3] = $5; rs[$1, $2] = 1; bs[$1] = 1; next }
	f == 2 { rps[$1, $2, $3] = $4; p99[$1, $2, $3] = $5; cpu[$1, $2, $3] = $6; rr[$1, $2] = 1; routers[$1] = 1 }
	END {
		print "| | plain | orchestrion | matrixexec |"
		print "| --- | ---: | ---: | ---: |"
		split("cold relink edit", order, " ")
		for (o = 1; o <= 3; o++) {
			b = order[o]; mp = 0
			for (k in rs) { split(k, kk, SUBSEP); if (kk[1] != b) continue; r = kk[2]
				mp++; pl[mp] = w[b, r, "plain"]; ro[mp] = w[b, r, "orch"] / w[b, r, "plain"]; rm[mp] = w[b, r, "mx"] / w[b, r, "plain"]
				pc[mp] = cp[b, r, "plain"]; co2[mp] = cp[b, r, "orch"] / cp[b, r, "plain"]; cm2[mp] = cp[b, r, "mx"] / cp[b, r, "plain"] }
			if (mp) printf "| %s build, wall (CPU) | %.2f s (%.2f s) | %.2f× (%.2f×) | %.2f× (%.2f×) |\n", b, median(pl, mp), median(pc, mp), median(ro, mp), median(co2, mp), median(rm, mp), median(cm2, mp)
		}
		printf "| binary size | %.1f MB | %.2f× | %.2f× |\n", size["plain"] / 1e6, size["orch"] / size["plain"], size["mx"] / size["plain"]
		for (rt in routers) {
			m = 0
			for (k in rr) { split(k, kk, SUBSEP); if (kk[1] != rt) continue; r = kk[2]; m++
				a[m] = rps[rt, r, "plain"]; ao[m] = rps[rt, r, "orch"] / a[m]; am[m] = rps[rt, r, "mx"] / a[m]
				q[m] = p99[rt, r, "plain"]; qo[m] = p99[rt, r, "orch"] / q[m]; qm[m] = p99[rt, r, "mx"] / q[m]
				c[m] = cpu[rt, r, "plain"]; co[m] = cpu[rt, r, "orch"] / c[m]; cm[m] = cpu[rt, r, "mx"] / c[m] }
			printf "| %s /fast, req/s | %.1fk | %.2f× | %.2f× |\n", rt, median(a, m) / 1000, median(ao, m), median(am, m)
			printf "| %s /fast, p99 | %.2f ms | %.2f× | %.2f× |\n", rt, median(q, m) / 1000, median(qo, m), median(qm, m)
			printf "| %s /fast, server CPU per request | %.1f µs | %.2f× | %.2f× |\n", rt, median(c, m), median(co, m), median(cm, m)
		}
	}' "$OUT/compare-build.txt" "$OUT/compare-load.txt" | tee "$OUT/compare.md"
