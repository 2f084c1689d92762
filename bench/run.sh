#!/usr/bin/env bash
# bench/run.sh reproduces every table of BENCHMARKS.md in one run:
#
#   1. per instrumented call: our hooks in three recorder states beside an
#      empty call, clocks, -cover counters, trace regions, pprof labels and
#      OpenTelemetry spans (go test -bench, plus callgrind instruction counts);
#   2. real libraries' own benchmarks (github.com/valyala/fastjson,
#      github.com/rs/zerolog, github.com/google/uuid): plain, a no-hook
#      control built by matrixexec, instrumented but not recording, with
#      -inline-budget 200, and recording; and three more (tidwall/gjson
#      reading fields of a 100 KB payload, buger/jsonparser, yaml.v3):
#      plain, the control, the default not recording and recording;
#   3. an HTTP service under wrk load on 127.0.0.1, plain vs instrumented with
#      every request a recorded dispatch, and routers' GET /fast the same way
#      (bench/routers.sh);
#   4. build time of google.golang.org/protobuf (./..., 147 packages): first,
#      warm, one-file edit (a line at the end of a file; a body in its
#      middle) and cold builds, plain vs instrumented, and the wrapper's peak
#      memory;
#   5. the recorder's memory under 10,000 concurrent dispatches.
#
# Usage (from anywhere):
#
#   bench/run.sh                 full run, about 23 minutes on 2 cores
#                                (15 the first time: fetches, std compiles)
#   QUICK=1 bench/run.sh         quick mode: fewer rounds, shorter runs, no
#                                callgrind (~5 min)
#   BENCH_GROUPS="1 3" bench/run.sh   only some groups
#   CALLGRIND=0|1 bench/run.sh   instruction counts off/on (default: on in full mode)
#   OUT=/some/dir bench/run.sh   where raw outputs and tables.md go
#                                (default: a new directory under /tmp)
#   TABLES_ONLY=1 OUT=/some/dir bench/run.sh
#                                rebuild tables.md from the raw outputs there
#   LAYOUTS=N bench/run.sh       group 2: each build also linked with N
#                                random function layouts (go link's
#                                -randlayout, seeds 1..N) beside the natural
#                                one, every layout of every build run in each
#                                round; ratios pair builds of the same layout
#   G2_KINDS="plain none instr" bench/run.sh
#                                group 2: only these builds, for every library
#
# Plain and instrumented measurements are interleaved round by round, and
# every ratio is the median of per-round ratios: the machine is shared and
# noisy, and a drift in load then hits both sides of a ratio alike. Nothing
# here passes or fails on a time; the tables state the targets beside the
# measured ratios. Needs: go, wrk (apt-get install wrk), benchstat
# (go install golang.org/x/perf/cmd/benchstat@latest; optional), valgrind
# (optional: instruction counts). Network: the module proxy for the first
# run (fastjson, protobuf, OpenTelemetry), and 127.0.0.1 only for the load
# test.
set -euo pipefail
# The benchmark modules are not in the repository's go.work (the product
# and its test module): each go command here runs in its own module.
export GOWORK=off

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
QUICK=${QUICK:-0}
GROUPS_=${BENCH_GROUPS:-"1 2 3 4 5"}
OUT=${OUT:-$(mktemp -d /tmp/matrix-bench.XXXXXX)}
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/matrix-bench-work.XXXXXX)
SERVER_PID=
cleanup() {
	if [[ -n $SERVER_PID ]]; then kill "$SERVER_PID" 2>/dev/null || true; fi
	chmod -R u+w "$TMP" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

# Group 2's benchtime must exceed the first iteration of every benchmark,
# or go test stops after that one cold iteration (fastjson's Parse/canada
# takes 60 ms the first time, filling its pool, and 3 ms after): runs of
# one iteration and of twenty would then be compared.
if [[ $QUICK == 1 ]]; then
	R1=3 BT1=50ms CG=0 # group 1: rounds, benchtime, callgrind
	R2=2 BT2=100ms     # group 2
	R3=1 D3=4           # group 3: rounds, seconds per run
	RR=3 DR=4           # group 3's routers: rounds, seconds per run
	RW=2 RE=2 RC=0      # group 4: warm, edit and cold rounds
else
	R1=12 BT1=100ms CG=1
	R2=5 BT2=150ms
	# A 2-core machine shared by the server and its load generator moves a
	# server's throughput by ±10 % from one few-second run to the next, and
	# the two servers of a round by as much: many short rounds, alternating
	# which goes first, give a median that moves less than long ones.
	R3=20 D3=3
	RR=20 DR=3
	RW=5 RE=3 RC=1
fi
CG=${CALLGRIND:-$CG}
command -v valgrind >/dev/null || CG=0
BENCHSTAT=$(command -v benchstat || echo "$(go env GOPATH)/bin/benchstat")
[[ -x $BENCHSTAT ]] || BENCHSTAT=

# No tracing unless a step asks for it.
unset MATRIX_REPORT MATRIX_DEBUG_HOOKS MATRIX_STARTUP MATRIX_LOG MATRIX_MAP MATRIX_BLACKLIST GOFLAGS
export GOFLAGS=-buildvcs=false

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
has() { [[ " $GROUPS_ " == *" $1 "* ]]; }
measure() { has "$1" && [[ ${TABLES_ONLY:-0} != 1 ]]; }

if [[ ${TABLES_ONLY:-0} == 1 ]]; then
	GROUPS_=""
	for g in 1 2 3 4 5; do
		ls "$OUT"/g$g[-.]*txt >/dev/null 2>&1 && GROUPS_="$GROUPS_ $g"
	done
fi
log "output in $OUT"
MX=$TMP/matrixexec
# Groups 1 and 5 instrument only the measured package (user/hot), with the
# inlinable-function filter off and bounded functions hooked (a function
# that only calls Empty is bounded), so that its tiny functions get hooks.
# Method maps live in bench/.matrix (git-ignored, like every
# methodMapping.txt): a map's identity is part of matrixexec's tool id, so
# keeping them lets the next run reuse the instrumented standard library.
HOOKS_TOOLEXEC="$MX -inline-budget -1 -bounded hook -blacklist $BENCH/hooks.blacklist -map $BENCH/.matrix/hooks/methodMapping.txt"
(cd "$ROOT" && go build -o "$MX" ./cmd/matrixexec)
(cd "$BENCH" && go build -o "$TMP/benchtables" ./cmd/benchtables && go build -o "$TMP/rsswrap" ./cmd/rsswrap)

[[ ${TABLES_ONLY:-0} == 1 ]] || {
	echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
	echo "go: $(go version)"
	echo "matrix: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)$(cd "$ROOT" && git diff --quiet HEAD -- rewrite beat cmd 2>/dev/null || echo ' (with uncommitted changes to rewrite/beat/cmd)')"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "mode: $([[ $QUICK == 1 ]] && echo quick || echo full)"
} >"$OUT/env.txt"
cat "$OUT/env.txt" >&2

# ---------------------------------------------------------------------------
# Group 1: per instrumented call.
if measure 1; then
	log "group 1: building the hooks benchmark with matrixexec"
	# -ldflags=-w drops DWARF only (same code): callgrind then attributes
	# every instruction to its function exactly.
	(cd "$BENCH" && go test -c -o "$TMP/hooks.test" -ldflags=-w -toolexec="$HOOKS_TOOLEXEC" ./hooks)
	"$TMP/hooks.test" -test.run . >/dev/null # TestHookedRecords: the hooks record what we measure
	# Each round runs five families of benchmarks, each in its own process
	# together with the unit (Call/empty), so that every ratio divides two
	# measurements taken seconds apart.
	FAMILIES=(off idle rec clocks tracing)
	fam_pattern() {
		case $1 in
		off | idle | rec) echo "^Benchmark(Call|Hook)\$/^(empty|$1)\$" ;;
		clocks) echo '^BenchmarkCall$/^(empty|nanotime|time\.Now|cover-set|cover-atomic)$' ;;
		tracing) echo '^BenchmarkCall$/^(empty|trace\.WithRegion-off|trace\.WithRegion-flightrec|pprof\.Do|otel-span)$' ;;
		esac
	}
	for f in "${FAMILIES[@]}"; do : >"$OUT/g1-$f.txt"; done
	for r in $(seq "$R1"); do
		log "group 1: round $r/$R1"
		for f in "${FAMILIES[@]}"; do
			"$TMP/hooks.test" -test.run '^$' -test.bench "$(fam_pattern "$f")" -test.benchtime="$BT1" -test.count=1 >>"$OUT/g1-$f.txt"
		done
	done
	: >"$OUT/g1-callgrind.txt"
	if [[ $CG == 1 ]]; then
		log "group 1: callgrind instruction counts"
		# Instructions per iteration = instructions executed in the loop
		# function and the functions it reaches that are named here, over
		# the N+1 iterations the benchmark runs (a run of 1, then N).
		N=100000
		CGRE='hooks\.loop|user/hot\.|runtime\.matrix(Enter|Exit)'
		for b in Call/empty Call/cover-set Call/cover-atomic \
			Hook/off/hooked Hook/off/twin Hook/idle/hooked Hook/idle/twin Hook/rec/hooked Hook/rec/twin \
			Hook/off/hooked-leaf Hook/off/twin-leaf Hook/idle/hooked-leaf Hook/idle/twin-leaf Hook/rec/hooked-leaf Hook/rec/twin-leaf; do
			pat="^Benchmark${b%%/*}\$/^$(echo "${b#*/}" | sed 's|/|$/^|g')\$"
			# With the recorder's clock thread running (idle, rec),
			# callgrind now and then attributes a few of the loop's
			# instructions to no function: two runs, the larger count kept.
			# The other counts are exact and repeat to the instruction.
			# --fair-sched=yes: valgrind runs one thread at a time, and
			# with its default lock the clock thread's wake-ups every
			# 0.5 ms left the Go scheduler's spin locks spinning for
			# minutes (17 M instructions with it, 24 G without).
			runs=1
			[[ $b == Hook/idle/* || $b == Hook/rec/* ]] && runs=2
			best=0
			for _ in $(seq $runs); do
				GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$TMP/cg.out" \
					"$TMP/hooks.test" -test.run '^$' -test.bench "$pat" -test.benchtime=${N}x >/dev/null 2>&1 || continue
				c=$(callgrind_annotate --auto=no --threshold=100 "$TMP/cg.out" 2>/dev/null |
					awk -v re="$CGRE" -v n=$((N + 1)) '$0 ~ re { gsub(",", "", $1); s += $1 } END { printf "%.1f", s / n }')
				best=$(awk -v a="$best" -v b="$c" 'BEGIN { print (b > a ? b : a) }')
			done
			echo "$b $best" >>"$OUT/g1-callgrind.txt"
		done
	fi
fi

# ---------------------------------------------------------------------------
# Group 2: real libraries' own benchmarks.
#
# Each library's test binary is built plain; by matrixexec with the library
# kept out (a control: same patched runtime and toolchain path, no hook in
# the library); instrumented with the default settings; with the deferred
# exit hook (-exits defer); and with -inline-budget 200 (functions whose
# estimated inlining cost is at most 200 are skipped, not just the
# inlinable ones up to 80). Each round runs, from the module's directory
# (fastjson reads its testdata/): plain; the control; each instrumented
# build with the recorder off; and the default and deferred builds in
# zero-code mode with MATRIX_REPORT set, where every benchmark run is a
# recorded dispatch (a slow-call threshold of a day: no report is written). With valgrind, the
# instructions per op executed in the library's own functions (and the
# hooks) are counted too, for a few benchmarks: a noise-free view.
if measure 2; then
	# The control build: made by matrixexec like the others (patched
	# runtime, same link), but with no hook in the library at all.
	printf -- '-keeppackage %s\n' github.com/valyala/fastjson github.com/rs/zerolog github.com/google/uuid \
		github.com/tidwall/gjson github.com/tidwall/match github.com/tidwall/pretty github.com/buger/jsonparser gopkg.in/yaml.v3 \
		>"$TMP/libs-kept.blacklist"
	# G2_LIBS="gjson yaml" bench/run.sh: only these libraries.
	want_lib() { [[ -z ${G2_LIBS:-} || " $G2_LIBS " == *" $1 "* ]]; }
	# LIB_KINDS="plain none instr rec" before a call: the builds to measure
	# (default: all of them). LIB_BT=1s: the library's benchtime, for
	# benchmarks of milliseconds an operation, where $BT2 would run a handful
	# of operations and a collection per round.
	lib_run() { # name package callgrind-benchmarks pattern...
		local name=$1 mod=$2 cgbench=$3 bt=${LIB_BT:-$BT2}
		shift 3
		local dir kinds
		read -r -a kinds <<<"${G2_KINDS:-${LIB_KINDS:-plain none instr ret defer b200 rec retrec deferrec pgoplain pgoinstr}}"
		dir=$(cd "$BENCH" && go list -f '{{.Dir}}' "$mod")
		log "group 2: building $mod's tests"
		# Where the linker puts each function decides which of a hot
		# loop's functions share instruction-cache sets, and moves a
		# library's benchmarks by as much as the hooks do: with LAYOUTS=N
		# every build is also linked with N random layouts (-randlayout),
		# $name-KIND-L<seed>.test, and each round runs every layout.
		local seeds=(0) kind s sfx ld
		for ((s = 1; s <= ${LAYOUTS:-0}; s++)); do seeds+=("$s"); done
		# layout SEED sets the binaries' suffix and the link flags of a layout.
		layout() {
			sfx="" ld=-w
			if [[ $1 != 0 ]]; then sfx=-L$1 ld="-w -randlayout=$1"; fi
		}
		for s in "${seeds[@]}"; do
			layout "$s"
			for kind in "${kinds[@]}"; do
				case $kind in
				plain) (cd "$BENCH" && go test -c -ldflags="$ld" -o "$TMP/$name-plain$sfx.test" "$mod") ;;
				instr) (cd "$BENCH" && go test -c -ldflags="$ld" -o "$TMP/$name-instr$sfx.test" -toolexec="$MX" "$mod") ;;
				ret) (cd "$BENCH" && go test -c -ldflags="$ld" -o "$TMP/$name-ret$sfx.test" -toolexec="$MX -exits returns" "$mod") ;;
				defer) (cd "$BENCH" && go test -c -ldflags="$ld" -o "$TMP/$name-defer$sfx.test" -toolexec="$MX -exits defer" "$mod") ;;
				b200) (cd "$BENCH" && go test -c -ldflags="$ld" -o "$TMP/$name-b200$sfx.test" -toolexec="$MX -inline-budget 200" "$mod") ;;
				none) (cd "$BENCH" && go test -c -ldflags="$ld" -o "$TMP/$name-none$sfx.test" -toolexec="$MX -blacklist $TMP/libs-kept.blacklist" "$mod") ;;
				esac
			done
		done
		echo "${#seeds[@]}" >"$OUT/g2-$name-layouts.txt"
		if [[ " ${kinds[*]} " == *" pgoinstr "* ]]; then
			# A CPU profile of the plain build running the same benchmarks,
			# then both sides built with it (go build -pgo): the compiler
			# inlines the profile's hot callees, and matrixexec leaves them
			# without hooks.
			log "group 2: $name CPU profile for the profile-guided builds"
			local profs=() i=0
			for p in "$@"; do
				i=$((i + 1))
				(cd "$dir" && "$TMP/$name-plain.test" -test.run '^$' -test.bench "$p" -test.benchtime="$BT2" -test.cpu=1 \
					-test.cpuprofile="$TMP/$name-$i.pprof" >/dev/null)
				profs+=("$TMP/$name-$i.pprof")
			done
			go tool pprof -proto "${profs[@]}" >"$OUT/g2-$name.pprof" 2>/dev/null
			for s in "${seeds[@]}"; do
				layout "$s"
				(cd "$BENCH" && go test -c -ldflags="$ld" -o "$TMP/$name-pgoplain$sfx.test" -pgo="$OUT/g2-$name.pprof" "$mod")
				(cd "$BENCH" && go test -c -ldflags="$ld" -o "$TMP/$name-pgoinstr$sfx.test" -pgo="$OUT/g2-$name.pprof" -toolexec="$MX" "$mod")
			done
		fi
		for kind in "${kinds[@]}"; do : >"$OUT/g2-$name-$kind.txt"; done
		# One benchmark at a time, all builds back to back: a burst of load
		# from elsewhere then hits the numbers of one ratio alike.
		local names=() b
		for p in "$@"; do
			while read -r b; do names+=("$b"); done < <(cd "$dir" && "$TMP/$name-plain.test" -test.run '^$' -test.bench "$p" \
				-test.benchtime=1x -test.cpu=1 | awk '/^Benchmark/ { sub(/^Benchmark/, "", $1); print $1 }')
		done
		for r in $(seq "$R2"); do
			log "group 2: $name round $r/$R2 (${#names[@]} benchmarks)"
			for b in "${names[@]}"; do
				local pat
				pat="^Benchmark$(echo "$b" | sed 's/[][\.*^$()+?{}|]/\\&/g; s|/|$/^|g')\$"
				for s in "${seeds[@]}"; do
					layout "$s"
					for kind in "${kinds[@]}"; do
						local bin=$TMP/$name-$kind$sfx.test env=()
						if [[ $kind == rec || $kind == retrec || $kind == deferrec ]]; then
							bin=$TMP/$name-instr$sfx.test
							[[ $kind == retrec ]] && bin=$TMP/$name-ret$sfx.test
							[[ $kind == deferrec ]] && bin=$TMP/$name-defer$sfx.test
							env=(MATRIX_REPORT="$TMP/lib-reports.jsonl" MATRIX_EVIL_THRESHOLD_MS=86400000)
						fi
						(cd "$dir" && env "${env[@]}" "$bin" -test.run '^$' -test.bench "$pat" -test.benchtime="$bt" -test.count=1 -test.cpu=1) |
							grep '^Benchmark' >>"$OUT/g2-$name-$kind.txt"
					done
				done
			done
		done
		if [[ -n $BENCHSTAT ]]; then
			(cd "$OUT" && "$BENCHSTAT" -filter '.unit:sec/op' plain=g2-$name-plain.txt control=g2-$name-none.txt \
				instrumented=g2-$name-instr.txt returns=g2-$name-ret.txt deferred=g2-$name-defer.txt budget200=g2-$name-b200.txt recording=g2-$name-rec.txt deferred-recording=g2-$name-deferrec.txt \
				pgo-plain=g2-$name-pgoplain.txt pgo-instrumented=g2-$name-pgoinstr.txt >"g2-$name-benchstat.txt" 2>&1) || true
		fi
		: >"$OUT/g2-$name-callgrind.txt"
		if [[ $CG == 1 ]]; then
			log "group 2: $name callgrind instruction counts"
			local re="${mod}[./]|runtime.matrix"
			for spec in $cgbench; do # pattern:N
				local pat=${spec%:*} n=${spec##*:}
				for kind in "${kinds[@]}"; do
					[[ $kind == rec || $kind == retrec || $kind == deferrec ]] && continue
					local c1 c2
					c1=$(cg_count "$dir" "$TMP/$name-$kind.test" "$pat" "$n" "$re")
					c2=$(cg_count "$dir" "$TMP/$name-$kind.test" "$pat" $((2 * n)) "$re")
					echo "$pat $kind $(awk -v a="$c1" -v b="$c2" -v n="$n" 'BEGIN {printf "%.0f", (b - a) / n}')" >>"$OUT/g2-$name-callgrind.txt"
				done
			done
		fi
	}
	# Instructions executed in functions matching a regexp, over a run of
	# the benchmark with -benchtime=Nx (the difference of two such runs is
	# the cost of N iterations: start-up and the first run cancel out).
	cg_count() { # dir binary pattern N regexp
		(cd "$1" && GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$TMP/cg2.out" \
			"$2" -test.run '^$' -test.bench "$3" -test.benchtime="$4x" -test.cpu=1 >/dev/null 2>&1) || true
		callgrind_annotate --auto=no --threshold=100 "$TMP/cg2.out" 2>/dev/null |
			awk -v re="$5" '$0 ~ re { gsub(",", "", $1); s += $1 } END { printf "%.0f", s }'
	}
	want_lib fastjson && lib_run fastjson github.com/valyala/fastjson \
		'^BenchmarkParse$/^twitter$/^fastjson$:20 ^BenchmarkValidate$/^twitter$/^fastjson$:20' \
		'^Benchmark(Parse|Validate|ObjectGet)$/^(small|medium|large|canada|citm|twitter|items_10|items_1000)$/^(fastjson|lookups_8)$' \
		'^Benchmark(MarshalTo|ArenaTypicalUse)$'
	want_lib zerolog && lib_run zerolog github.com/rs/zerolog \
		'^BenchmarkInfo$:20000 ^BenchmarkLogFieldType$/^Str$:20000' \
		'^Benchmark(LogEmpty|Disabled|Info|ContextFields|ContextAppend|LogFields|LogArrayObject)$' \
		'^BenchmarkLogFieldType$/^(Str|Int|Float64|Time|Err|Bytes|Interface|Object)$'
	want_lib uuid && lib_run uuid github.com/google/uuid \
		'^BenchmarkParse$:200000 ^BenchmarkUUID_String$:200000' \
		'^Benchmark(Parse|ParseBytes|ParseBytesUnsafe|ParseBytesCopy|UUID_String|UUID_URN|UUID_MarshalJSON|UUID_UnmarshalJSON|ParseBadLength|UUIDs_Strings)$'
	# Three more byte-level libraries: defaults, recorder off and on,
	# beside plain and the control. gjson's own benchmarks only validate;
	# bench/lib/gjsonq reads fields of a 100 KB payload by path.
	want_lib gjson && LIB_KINDS="plain none instr rec" lib_run gjson github.com/matrixgo/matrix/bench/lib/gjsonq \
		'^BenchmarkGetMany$:200 ^BenchmarkGetMeta$:20000' \
		'^Benchmark(GetMeta|GetAfter|GetIndex|GetMany|Query|ForEach|ParseBytes)$'
	want_lib jsonparser && LIB_KINDS="plain none instr rec" lib_run jsonparser github.com/buger/jsonparser \
		'^BenchmarkParseInt$:200000 ^BenchmarkGet_StringValue_NoEscape$:200000' \
		'^Benchmark(ParseInt|EqualStr|Set|SetPreAllocated|StringEnd_NoEscape_Short|StringEnd_NoEscape_Long|StringEnd_WithEscape|TokenEnd_Number|TokenEnd_LongNumber|TokenEnd_Boolean|Get_StringValue_NoEscape|ParsePath)$'
	# yaml.v3's map benchmarks take 0.3, 3 and 35 ms an operation: at
	# $BT2 the 100 KB one ran four operations a round, and its ratios moved
	# by ±10 % from round to round.
	want_lib yaml && LIB_KINDS="plain none instr rec" LIB_BT=1s lib_run yaml gopkg.in/yaml.v3 \
		'^Benchmark1KBMaps$:2000' \
		'^Benchmark(1KBMaps|10KBMaps|100KBMaps)$'
fi

# ---------------------------------------------------------------------------
# Group 3: HTTP service under load.
if measure 3; then
	command -v wrk >/dev/null || {
		echo "group 3 needs wrk: apt-get install -y wrk" >&2
		exit 1
	}
	log "group 3: building the server plain and instrumented (zero-code mode)"
	SRV=matrixbench.example/user/cmd/benchserver
	(cd "$BENCH" && go build -o "$TMP/srv-plain" $SRV)
	# MATRIX_ZEROCODE=on: a tracer that cannot be linked fails the build
	# instead of measuring a server that records nothing.
	(cd "$BENCH" && MATRIX_ZEROCODE=on go build -o "$TMP/srv-instr" -toolexec="$MX" $SRV)
	start_server() { # kind
		local env=()
		[[ $1 == instr ]] && env=(MATRIX_REPORT="$TMP/http-reports.jsonl")
		env "${env[@]}" "$TMP/srv-$1" -addr 127.0.0.1:0 >"$TMP/srv.out" 2>&1 &
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
		kill -INT "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
		SERVER_PID=
	}
	cpu_ticks() { # pid: the process's utime + stime so far, in clock ticks
		awk '{ print $14 + $15 }' "/proc/$1/stat"
	}
	to_us() { # 157.00us | 1.23ms | 1.01s
		awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else if (v ~ /s$/) print n * 1000000; else print n }'
	}
	: >"$OUT/g3.txt"
	for r in $(seq "$R3"); do
		kinds="plain instr"
		((r % 2 == 0)) && kinds="instr plain"
		for kind in $kinds; do
			log "group 3: round $r/$R3, $kind"
			start_server $kind
			wrk -t1 -c8 -d1s "http://$ADDR/quote/42" >/dev/null # warm-up
			cpu0=$(cpu_ticks "$SERVER_PID")
			wrk -t1 -c8 -d"${D3}s" --latency "http://$ADDR/quote/42" >"$TMP/wrk.txt"
			cpu1=$(cpu_ticks "$SERVER_PID")
			rps=$(awk '/^Requests\/sec:/ {print $2}' "$TMP/wrk.txt")
			p50=$(to_us "$(awk '$1 == "50%" {print $2}' "$TMP/wrk.txt")")
			p99=$(to_us "$(awk '$1 == "99%" {print $2}' "$TMP/wrk.txt")")
			reqs=$(awk '/requests in/ {print $1}' "$TMP/wrk.txt")
			stats=$(curl -s "http://$ADDR/debug/beat" || echo '{}')
			disp=$(echo "$stats" | sed -n 's/.*"Dispatches":\([0-9]*\).*/\1/p')
			notrec=$(echo "$stats" | sed -n 's/.*"NotRecorded":\([0-9]*\).*/\1/p')
			echo "$r $kind $rps $p50 $p99 $reqs ${disp:-0} ${notrec:-0} $((cpu1 - cpu0))" >>"$OUT/g3.txt"
			cp "$TMP/wrk.txt" "$OUT/g3-wrk-$kind-$r.txt"
			stop_server
		done
	done
	# Routers' GET /fast (chi, gin, echo, ServeMux): table in g3-routers/table.md.
	log "group 3: routers (bench/routers.sh)"
	MX=$MX OUT=$OUT/g3-routers "$BENCH/routers.sh" "$RR" "$DR" >/dev/null
fi

# ---------------------------------------------------------------------------
# Group 4: build time of a sizable real module.
if measure 4; then
	PB=google.golang.org/protobuf@v1.36.10
	log "group 4: fetching $PB"
	PBSRC=$(cd "$TMP" && GOFLAGS=-mod=mod go mod download -json $PB | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
	cp -r "$PBSRC" "$TMP/pb"
	chmod -R u+w "$TMP/pb"
	(cd "$TMP/pb" && go mod download)
	EDIT=$TMP/pb/internal/impl/message.go # package impl: the largest of the module
	PBMAP=$TMP/pb.map
	timed() { # phase kind round cache toolexec...
		local phase=$1 kind=$2 round=$3 cache=$4
		shift 4
		local flags=()
		[[ $# -gt 0 ]] && flags=(-toolexec="$*")
		local t0 t1
		t0=$(date +%s.%N)
		(cd "$TMP/pb" && GOCACHE=$cache go build -x "${flags[@]}" -o "$TMP/pbbin-$kind/" ./... 2>"$TMP/x.txt")
		t1=$(date +%s.%N)
		local n
		n=$(grep -c 'pkg/tool/[^ ]*/compile -o' "$TMP/x.txt" || true)
		echo "$phase $kind $round $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}') $n" >>"$OUT/g4.txt"
	}
	: >"$OUT/g4.txt"
	: >"$OUT/g4-rss-plain.txt"
	: >"$OUT/g4-rss-instr.txt"
	mkdir -p "$TMP/gc-plain" "$TMP/gc-instr"
	log "group 4: first builds (empty caches, fresh method map, under rsswrap)"
	timed first plain 1 "$TMP/gc-plain" "$TMP/rsswrap" "$OUT/g4-rss-plain.txt"
	timed first instr 1 "$TMP/gc-instr" "$TMP/rsswrap" "$OUT/g4-rss-instr.txt" "$MX" -map "$PBMAP"
	for r in $(seq "$RW"); do
		log "group 4: warm round $r/$RW"
		timed warm plain "$r" "$TMP/gc-plain"
		timed warm instr "$r" "$TMP/gc-instr" "$MX" -map "$PBMAP"
	done
	for r in $(seq "$RE"); do
		log "group 4: one-file edit round $r/$RE (a line at the end of the file)"
		printf '\nvar _ = "matrix bench edit %d"\n' "$r" >>"$EDIT"
		timed edit plain "$r" "$TMP/gc-plain"
		timed edit instr "$r" "$TMP/gc-instr" "$MX" -map "$PBMAP"
	done
	for r in $(seq "$RE"); do
		# A statement added to a body in the middle of the file: code
		# changes, and so do the positions after it, in both builds.
		log "group 4: mid-file edit round $r/$RE (a body in the middle of the file)"
		sed -i "/^func (mi \*MessageInfo) initOnce() {\$/a\\	if mi == nil { panic(\"matrix bench mid $r\") }" "$EDIT"
		timed editmid plain "$r" "$TMP/gc-plain"
		timed editmid instr "$r" "$TMP/gc-instr" "$MX" -map "$PBMAP"
	done
	for r in $(seq "$RC"); do
		log "group 4: cold round $r/$RC (empty caches, method map kept)"
		rm -rf "$TMP/gc-cold" "$TMP/pbbin-plain" "$TMP/pbbin-instr"
		mkdir -p "$TMP/gc-cold"
		timed cold plain "$r" "$TMP/gc-cold"
		chmod -R u+w "$TMP/gc-cold"
		rm -rf "$TMP/gc-cold"
		mkdir -p "$TMP/gc-cold"
		timed cold instr "$r" "$TMP/gc-cold" "$MX" -map "$PBMAP"
		chmod -R u+w "$TMP/gc-cold"
		rm -rf "$TMP/gc-cold"
	done
	(cd "$TMP/pb" && go list ./... | wc -l) >"$OUT/g4-packages.txt"
fi

# ---------------------------------------------------------------------------
# Group 5: recorder memory.
if measure 5; then
	log "group 5: 10,000 concurrent dispatches"
	(cd "$BENCH" && go test -toolexec="$HOOKS_TOOLEXEC" -run '^$' -bench . -benchtime=1x -count=3 ./memory) >"$OUT/g5.txt" 2>&1 ||
		{
			cat "$OUT/g5.txt" >&2
			exit 1
		}
fi

# ---------------------------------------------------------------------------
log "tables"
{
	echo "## Environment"
	echo
	sed 's/^/    /' "$OUT/env.txt"
	echo
	if has 1; then
		echo "## 1. Per instrumented call"
		echo
		"$TMP/benchtables" hooks "$OUT"
		echo
	fi
	if has 2; then
		echo "## 2. Real libraries' own benchmarks"
		echo
		for lib in fastjson zerolog uuid gjson jsonparser yaml; do
			[[ -s $OUT/g2-$lib-plain.txt ]] || continue
			echo "### $lib"
			echo
			"$TMP/benchtables" lib "$OUT" $lib
			echo
			if [[ -s $OUT/g2-$lib-benchstat.txt ]]; then
				echo '<details><summary>benchstat</summary>'
				echo
				echo '```'
				cat "$OUT/g2-$lib-benchstat.txt"
				echo '```'
				echo
				echo '</details>'
				echo
			fi
		done
	fi
	if has 3; then
		echo "## 3. HTTP service under load"
		echo
		"$TMP/benchtables" http "$OUT"
		echo
	fi
	if has 4; then
		echo "## 4. Build time: google.golang.org/protobuf ($(cat "$OUT/g4-packages.txt") packages)"
		echo
		"$TMP/benchtables" build "$OUT"
		echo
	fi
	if has 5; then
		echo "## 5. Recorder memory, 10,000 goroutines each inside a dispatch"
		echo
		"$TMP/benchtables" memory "$OUT"
		echo
	fi
} >"$OUT/tables.md"
cat "$OUT/tables.md"
log "done: $OUT/tables.md"
