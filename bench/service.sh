#!/usr/bin/env bash
# bench/service.sh: the edit-rebuild loop of a zero-code service, plain
# `go build` vs `go build -toolexec=matrixexec` (BENCHMARKS.md group 4,
# "service" rows).
#
# The service: chi v5 beside a Go 1.22 ServeMux, each with GET /fast and a
# ~300 ms GET /orders/{id}; and a gin variant. Its module has matrixexec as
# a tool dependency (this checkout, served as a version of the module from
# a proxy in a directory: bench/cmd/modproxy), so matrixexec builds it in
# zero-code mode with the defaults. Two builds are timed, each round
# interleaved plain / matrixexec, each side with its own GOCACHE:
#
#   relink  the build cache full, the output file removed: cmd/go asks the
#           tool ids, finds every compile cached and runs the linker;
#   edit    a one-line change in a function body of the main package
#           (a string literal), the output removed: one compile and the link.
#
# Every ratio is the median of the per-round ratios (wall time), beside the
# median of the per-round ratios of CPU time (user+sys of the build and all
# its children), which a shared machine disturbs less.
#
# Usage: bench/service.sh            (ROUNDS=9 by default)
#        ROUNDS=5 SERVICES="chi" bench/service.sh
#        OUT=/some/dir bench/service.sh   (raw times in OUT/loop.txt)
#
# MODE=compare bench/service.sh puts DataDog's orchestrion beside them
# (BENCHMARKS.md, "Side by side with orchestrion"), on the chi + ServeMux
# service: cold build (a new GOCACHE per build and round, one module
# cache), relink, one-line edit, binary size, then each binary under
# `wrk -t2 -c32` on chi's and the ServeMux's GET /fast (requests/s, p99,
# the server's CPU per request from /proc/PID/stat), and what each says of
# one slow GET /orders/{id}. matrixexec's program runs with
# MATRIX_REPORT set (every request recorded), orchestrion's sends its
# traces to bench/cmd/traceagent on 127.0.0.1:8126, which keeps them.
# ORCHESTRION names the orchestrion command (go install
# github.com/DataDog/orchestrion@v1.15.0); its service lists the
# integrations it can resolve (net/http, chi, gin of dd-trace-go v2.12.0)
# in orchestrion.tool.go. COLD=1 cold rounds, WRK_S=10 seconds per run.
# Needs: go; the module proxy for chi and gin (and orchestrion's
# integrations) the first time; wrk and curl for MODE=compare.
set -euo pipefail
# The benchmark modules are not in the repository's go.work (the product
# and its test module): each go command here runs in its own module.
export GOWORK=off

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
ROUNDS=${ROUNDS:-9}
SERVICES=${SERVICES:-"chi gin"}
OUT=${OUT:-$(mktemp -d /tmp/matrix-service.XXXXXX)}
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/matrix-service-work.XXXXXX)
cleanup() {
	chmod -R u+w "$TMP" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
unset MATRIX_REPORT MATRIX_DEBUG_HOOKS MATRIX_LOG MATRIX_MAP MATRIX_BLACKLIST MATRIX_EVIL_THRESHOLD_MS GOFLAGS
export GOFLAGS=-buildvcs=false

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# service DIR writes the service's module to DIR.
service() {
	local dir=$1
	mkdir -p "$dir/chi" "$dir/gin"
	cat >"$dir/go.mod" <<'MOD'
module example.com/svc

go 1.24
MOD
	cat >"$dir/chi/main.go" <<'SRC'
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/go-chi/chi/v5"
)

func lookup(id string) string {
	time.Sleep(300 * time.Millisecond)
	return "order " + id
}

func main() {
	r := chi.NewRouter()
	r.Get("/fast", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	r.Get("/orders/{id}", func(w http.ResponseWriter, req *http.Request) {
		fmt.Fprintln(w, lookup(chi.URLParam(req, "id")))
	})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /fast", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, req *http.Request) {
		fmt.Fprintln(w, lookup(req.PathValue("id")))
	})
	addr, muxAddr := os.Getenv("ADDR"), os.Getenv("MUX_ADDR")
	if addr == "" {
		addr = "127.0.0.1:18080"
	}
	if muxAddr == "" {
		muxAddr = "127.0.0.1:18081"
	}
	go func() { log.Fatal(http.ListenAndServe(muxAddr, mux)) }()
	log.Fatal(http.ListenAndServe(addr, r))
}
SRC
	cat >"$dir/gin/main.go" <<'SRC'
package main

import (
	"log"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"
)

func lookup(id string) string {
	time.Sleep(300 * time.Millisecond)
	return "order " + id
}

func main() {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/fast", func(c *gin.Context) { c.String(http.StatusOK, "ok\n") })
	r.GET("/orders/:id", func(c *gin.Context) { c.String(http.StatusOK, lookup(c.Param("id"))+"\n") })
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:18082"
	}
	log.Fatal(r.Run(addr))
}
SRC
	(
		cd "$dir"
		go get github.com/go-chi/chi/v5@v5.5.0 github.com/gin-gonic/gin@v1.12.0 >/dev/null 2>&1
		# "go get -tool github.com/matrixgo/matrix/cmd/matrixexec@VERSION",
		# as a user runs it: this checkout is served as a version of the
		# module from a proxy in a directory, so that it comes from the
		# module cache, as a released version does (a replace by a
		# directory would make matrixexec check the tracer's sources for
		# changes on every build).
		local v
		v=$(cd "$BENCH" && go run ./cmd/modproxy -out "$TMP/proxy" "$ROOT")
		GOPROXY="file://$TMP/proxy,$(go env GOPROXY)" GONOSUMDB=github.com/matrixgo/matrix \
			go get -tool "github.com/matrixgo/matrix/cmd/matrixexec@$v" >/dev/null
		go mod tidy >/dev/null 2>&1
	)
}

# timed CMD...: runs CMD and prints "wall cpu" in seconds, to the
# microsecond and the millisecond (cpu is user+sys of CMD and its
# children, waited for). Run it in a subshell of its own: the CPU time is
# that of all the shell's children.
timed() {
	local t0=$EPOCHREALTIME t1
	"$@" >/dev/null 2>"$TMP/err" || { cat "$TMP/err" >&2; return 1; }
	t1=$EPOCHREALTIME
	times >"$TMP/times" # (not in a pipe: a subshell would not see the children)
	awk -v t0="$t0" -v t1="$t1" 'NR == 2 {
		split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%.4f %.3f\n", t1 - t0, u[1] * 60 + u[2] + s[1] * 60 + s[2]
	}' "$TMP/times"
}

MX=$TMP/bin/matrixexec
(cd "$ROOT" && go build -o "$TMP/bin/" ./cmd/matrixexec/...) # with matrixreport, for matrixexec show
SVC=$TMP/svc
service "$SVC"
log "service module in $SVC, load average $(cut -d' ' -f1-3 /proc/loadavg)"

if [[ ${MODE:-loop} == compare ]]; then
	source "$BENCH/service-compare.sh"
	exit 0
fi

: >"$OUT/loop.txt"
for s in $SERVICES; do
	main=$SVC/$s/main.go
	for kind in plain mx; do
		tx=()
		[[ $kind == mx ]] && tx=(-toolexec="$MX")
		log "$s: first $kind build (fills its cache)"
		(cd "$SVC" && GOCACHE=$TMP/gc-$kind go build "${tx[@]}" -o "$TMP/out-$kind" "./$s")
	done
	for r in $(seq "$ROUNDS"); do
		for build in relink edit; do
			if [[ $build == edit ]]; then
				# One line of a function body changes (the same in both
				# builds: each has its own cache, so each compiles it once).
				sed -i "s/return \"order \" + id.*/return \"order \" + id \/\/ $r/" "$main"
			fi
			for kind in plain mx; do
				tx=()
				[[ $kind == mx ]] && tx=(-toolexec="$MX")
				rm -f "$TMP/out-$kind"
				t=$(cd "$SVC" && GOCACHE=$TMP/gc-$kind timed go build "${tx[@]}" -o "$TMP/out-$kind" "./$s")
				echo "$s $build $r $kind $t $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/loop.txt" >&2
			done
		done
	done
done

# The table: per service and build, medians of the per-round ratios.
awk '
	{ k = $1 " " $2; t[k, $3, $4] = $5; c[k, $3, $4] = $6; keys[k] = 1; rounds[k, $3] = 1; load[k] += $7; n[k]++ }
	function median(a, m,   i, j, x) {
		for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j+1] = a[j]; a[j+1] = x }
		return m % 2 ? a[(m+1)/2] : (a[m/2] + a[m/2+1]) / 2
	}
	END {
		for (k in keys) {
			m = 0; delete rw; delete rc; delete tp; delete tm
			for (key in rounds) {
				split(key, kr, SUBSEP); if (kr[1] != k) continue
				r = kr[2]; m++
				rw[m] = t[k, r, "mx"] / t[k, r, "plain"]; rc[m] = c[k, r, "mx"] / c[k, r, "plain"]
				tp[m] = t[k, r, "plain"]; tm[m] = t[k, r, "mx"]
			}
			lo = 1e9; hi = 0; for (i = 1; i <= m; i++) { if (rw[i] < lo) lo = rw[i]; if (rw[i] > hi) hi = rw[i] }
			printf "| %s | %s | %.2f | %.2f | **%.2f×** (%.2f× – %.2f×) | %.2f× | %.1f |\n", \
				substr(k, 1, index(k, " ") - 1), substr(k, index(k, " ") + 1), median(tp, m), median(tm, m), median(rw, m), lo, hi, median(rc, m), load[k] / n[k]
		}
	}' "$OUT/loop.txt" | sort -r | {
	echo "| service | build | plain s | matrixexec s | wall ratio (min–max) | CPU ratio | load avg |"
	echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
	cat
} | tee "$OUT/loop.md"
