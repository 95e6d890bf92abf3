#!/usr/bin/env bash
# The benchmark harness: the gateway's cost measured side by side against the
# physical floor, in one run, on loopback only.
#
#   direct    load generator -> mock upstream
#   revproxy  load generator -> httputil.ReverseProxy -> mock   (the floor)
#   tcprelay  load generator -> raw TCP relay -> mock           (the absolute floor)
#   gateway   load generator -> the gateway (local mode, one openai-kind
#             target at the mock) -> mock
#
# It builds everything into a temporary directory, runs every stage (latency
# at concurrency 1, saturation, streaming, memory with open streams, cold
# start and binary size, failover, DynamoDB calls per request, the Lambda
# figures through the Runtime API emulator, Go benchmarks and CPU profiles), keeps the raw outputs and generates the report from them.
#
# Usage: scripts/bench.sh              full run -> docs/bench/results.md, docs/bench/raw/
#        SMOKE=1 scripts/bench.sh      every stage with tiny counts (about 2 min), for CI;
#                                      writes to $BENCH_OUT (default: this run's temp
#                                      dir, removed at the end)
# Environment: BENCH_OUT=DIR (where results.md and raw/ go), BENCH_NOTE="text"
# (a note printed in the report, e.g. "machine shared"), BENCH_STAGES="latency
# store ..." (run only these stages; default all: latency saturate stream memory
# cold failover store lambda gobench profile).
# Exits non-zero if any stage failed; the report is written either way.
. "$(dirname "$0")/lib/help.sh"
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# WORK is this run's own directory (binaries, logs, pids), removed on exit.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/llmgw-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT # replaced by cleanup below, once processes start

SMOKE=${SMOKE:-}
if [ -n "$SMOKE" ]; then
	# Smoke figures are not kept unless asked for (BENCH_OUT).
	OUT=${BENCH_OUT:-$WORK/out}
	COMMAND="SMOKE=1 scripts/bench.sh"
else
	OUT=${BENCH_OUT:-docs/bench}
	COMMAND="scripts/bench.sh"
fi
RAW=$OUT/raw
mkdir -p "$OUT"
rm -rf "$RAW"
mkdir -p "$RAW"
RAW=$(cd "$RAW" && pwd)
OUT=$(cd "$OUT" && pwd)

BIN=$WORK/bin
PIDFILE=$WORK/pids
: >"$PIDFILE"
LG=$BIN/loadgen
CHAT=/v1/chat/completions

# ---- process management: every background process is recorded, and only
# those (checked by their command line) are stopped on exit.

# ours PID: true when PID is alive and is one of the programs this run started.
ours() {
	local cmd
	cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline") || return 1
	case "$cmd" in
	*"$WORK"* | *"$ROOT/node_modules/dynalite"*) return 0 ;;
	esac
	return 1
}

# stop_pids PID...: TERM, then KILL after 2 s, the given processes if ours.
stop_pids() {
	local p live=()
	for p in "$@"; do
		[ -n "$p" ] && ours "$p" && live+=("$p")
	done
	[ ${#live[@]} -eq 0 ] && return 0
	kill -TERM "${live[@]}" 2>/dev/null || true
	for _ in $(seq 20); do
		local any=
		for p in "${live[@]}"; do kill -0 "$p" 2>/dev/null && any=1; done
		[ -z "$any" ] && return 0
		sleep 0.1
	done
	kill -KILL "${live[@]}" 2>/dev/null || true
}

cleanup() {
	local rc=$?
	trap - EXIT
	# shellcheck disable=SC2046
	stop_pids $(cat "$PIDFILE" 2>/dev/null)
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME CMD...: runs CMD in the background (log in $WORK/NAME.log) and
# records it; the pid is in STARTED_PID.
start() {
	local name=$1
	shift
	"$@" >"$WORK/$name.log" 2>&1 &
	STARTED_PID=$!
	echo "$STARTED_PID" >>"$PIDFILE"
	STAGE_PIDS+=("$STARTED_PID")
}

# wait_file FILE PID NAME: waits (10 s at most) until FILE is written.
wait_file() {
	for _ in $(seq 100); do
		[ -s "$1" ] && return 0
		if ! kill -0 "$2" 2>/dev/null; then
			echo "$3 exited at start:" >&2
			tail -20 "$WORK/$3.log" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "$3 did not start within 10 s" >&2
	return 1
}

# gateway_addr LOGNAME PID: the host:port from the gateway's "listening" log line.
gateway_addr() {
	local a
	for _ in $(seq 200); do
		a=$(grep -o '"addr":"http://[0-9.:]*' "$WORK/$1.log" 2>/dev/null | head -1 | sed 's|.*http://||') || true
		if [ -n "$a" ]; then
			echo "$a"
			return 0
		fi
		if ! kill -0 "$2" 2>/dev/null; then
			echo "$1 exited at start:" >&2
			tail -20 "$WORK/$1.log" >&2
			return 1
		fi
		sleep 0.05
	done
	echo "$1 did not start within 10 s" >&2
	return 1
}

# start_mock NAME ARGS...: a mock upstream; sets MOCK_ADDR, MOCK_PID.
start_mock() {
	local name=$1
	shift
	start "$name" "$BIN/mockupstream" -addr 127.0.0.1:0 -addr-file "$WORK/$name.addr" "$@"
	MOCK_PID=$STARTED_PID
	wait_file "$WORK/$name.addr" "$MOCK_PID" "$name"
	MOCK_ADDR=$(cat "$WORK/$name.addr")
}

# gateway_config FILE MOCK_ADDR: the bench routes, every target at the
# mock. Passthrough: bench (Chat Completions and Responses: an openai-kind
# provider with apis [chat, responses]), bench-messages (Messages: an
# anthropic-kind provider). Translation: bench-msg-openai (Messages client
# to a chat-only openai-kind target), bench-msg-bedrock (Messages client to
# a Bedrock Converse model), bench-resp-chat (Responses client to a
# chat-only target).
gateway_config() {
	cat >"$1" <<EOF
providers:
  mock:
    kind: openai
    base_url: http://$2/v1
    apis: [chat, responses]
  mockchat:
    kind: openai
    base_url: http://$2/v1
  mockanth:
    kind: anthropic
    base_url: http://$2
  mockbedrock:
    kind: bedrock
    region: us-east-1
    endpoint: http://$2
routes:
  bench:
    targets:
      - {provider: mock, model: bench-model}
  bench-messages:
    targets:
      - {provider: mockanth, model: bench-model}
  bench-msg-openai:
    targets:
      - {provider: mockchat, model: bench-model}
  bench-msg-bedrock:
    targets:
      - {provider: mockbedrock, model: "amazon.nova-lite-v1:0"}
  bench-resp-chat:
    targets:
      - {provider: mockchat, model: bench-model}
EOF
}

# The APIs measured, each with its path; API_ROUTE is the gateway's
# passthrough route for it, API_XLATE its translation targets
# (name=route).
APIS=(chat messages responses)
declare -A API_PATH=([chat]=/v1/chat/completions [messages]=/v1/messages [responses]=/v1/responses)
declare -A API_ROUTE=([chat]=bench [messages]=bench-messages [responses]=bench)
declare -A API_XLATE=([chat]="" [messages]="gateway_openai=bench-msg-openai gateway_bedrock=bench-msg-bedrock" [responses]="gateway_chat=bench-resp-chat")
# The gateway signs Bedrock requests with the AWS chain: static dummy
# credentials, so it stops there.
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-bench} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-bench} AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE AWS_ENDPOINT_URL AWS_ENDPOINT_URL_BEDROCK_RUNTIME

# api_targets API [xlate]: sets TARGETS for one API over the paths of
# start_paths (and, with xlate, the gateway's translation routes for it).
api_targets() {
	local api=$1 p=${API_PATH[$1]} r=${API_ROUTE[$1]} x
	TARGETS=(-target "direct=http://$MOCK_ADDR$p@$r" -target "revproxy=http://$RP_ADDR$p@$r"
		-target "tcprelay=http://$TCP_ADDR$p@$r" -target "gateway=http://$GW_ADDR$p@$r")
	if [ "${2:-}" = xlate ]; then
		for x in ${API_XLATE[$api]}; do
			TARGETS+=(-target "${x%%=*}=http://$GW_ADDR$p@${x#*=}")
		done
	fi
}

# suffix API: the raw file suffix of an API (none for chat, as before).
suffix() { if [ "$1" = chat ]; then echo ""; else echo "_$1"; fi; }

# start_paths STAGE MOCK_ARGS...: a mock and the three proxies in front of it.
# Sets TARGETS (chat's; api_targets for another API) and PIDARGS (loadgen
# flags) and the *_PID and *_ADDR variables.
start_paths() {
	local s=$1
	shift
	start_mock "mock_$s" "$@"
	start "rp_$s" "$BIN/floorproxy" -mode reverseproxy -upstream "$MOCK_ADDR" -addr-file "$WORK/rp_$s.addr"
	RP_PID=$STARTED_PID
	start "tcp_$s" "$BIN/floorproxy" -mode tcp -upstream "$MOCK_ADDR" -addr-file "$WORK/tcp_$s.addr"
	TCP_PID=$STARTED_PID
	gateway_config "$WORK/gw_$s.yaml" "$MOCK_ADDR"
	start "gw_$s" "$BIN/gateway" -config "$WORK/gw_$s.yaml" -addr 127.0.0.1:0 -state "$WORK/state_$s.db"
	GW_PID=$STARTED_PID
	wait_file "$WORK/rp_$s.addr" "$RP_PID" "rp_$s"
	wait_file "$WORK/tcp_$s.addr" "$TCP_PID" "tcp_$s"
	GW_ADDR=$(gateway_addr "gw_$s" "$GW_PID")
	RP_ADDR=$(cat "$WORK/rp_$s.addr") TCP_ADDR=$(cat "$WORK/tcp_$s.addr")
	api_targets chat
	PIDARGS=(-pid "direct=$MOCK_PID" -pid "revproxy=$RP_PID" -pid "tcprelay=$TCP_PID" -pid "gateway=$GW_PID")
}

# ---- sizes of every stage (full run / SMOKE=1)

if [ -n "$SMOKE" ]; then
	LAT=(-rounds 1 -n 20 -warmup 5)
	SAT=(-step 300ms -max-steps 2 -start-rate 200 -tries 1 -warm 200ms -settle 50ms)
	STREAM_MOCK=(-chunks 8 -chunk-gap 5ms)
	STREAM=(-c 2 -n 2 -rounds 1)
	HOLD=(-streams 50 -hold 500ms -open-timeout 20s)
	COLD_N=3
	FAIL=(-rounds 1 -n 10 -warmup 2)
	STORE_N=(-n 10 -warmup 2 -settle 300ms)
	LAMBDA_N=(-n-init 3 -n 10 -warmup 2 -settle 300ms -n-slow 1)
	BENCHTIME=-benchtime=100x
	PROFILE_BENCHTIME=10x
	HOT_BENCHTIME=-benchtime=300x
	PROFILE_SECS=1
	C1_REQUESTS=100000
	MB_HOLD=1500ms MB_SETTLE=0.5
else
	LAT=(-rounds 10 -n 500 -warmup 200)
	SAT=(-step 3s -max-steps 12 -start-rate 500)
	STREAM_MOCK=(-chunks 64 -chunk-gap 20ms)
	STREAM=(-c 8 -n 24 -rounds 4)
	HOLD=(-streams 1000 -hold 2s -open-timeout 60s)
	COLD_N=30
	FAIL=(-rounds 5 -n 300 -warmup 50)
	STORE_N=(-n 300 -warmup 50 -settle 1s)
	# -n-slow 60: 120 requests on the 1.2 s model (about 150 s), so flushes
	# once per 30 s show as the fraction per request they are.
	LAMBDA_N=(-n-init 30 -n 300 -warmup 30 -settle 1s -n-slow 60)
	BENCHTIME=
	PROFILE_BENCHTIME=100x
	HOT_BENCHTIME=-benchtime=20000x
	PROFILE_SECS=10
	C1_REQUESTS=1000000
	MB_HOLD=6s MB_SETTLE=2
fi

# ---- stages

stage_build() {
	mkdir -p "$BIN/stripped"
	go build -o "$BIN/" ./functions/gateway ./scripts/bench/mockupstream ./scripts/bench/floorproxy \
		./scripts/bench/loadgen ./scripts/bench/report ./scripts/bench/gwprof
	go build -ldflags='-s -w' -o "$BIN/stripped/" ./functions/gateway ./scripts/bench/mockupstream ./scripts/bench/floorproxy
	for b in gateway mockupstream floorproxy; do
		printf '%s\t%s\n' "$b" "$(stat -c %s "$BIN/$b")"
		printf '%s.stripped\t%s\n' "$b" "$(stat -c %s "$BIN/stripped/$b")"
	done >"$RAW/sizes.tsv"
	cat "$RAW/sizes.tsv"
	echo "go build (linux/$(go env GOARCH), CGO_ENABLED=$(go env CGO_ENABLED)); stripped = -ldflags='-s -w'. The Lambda build (scripts/build-lambda.sh) is linux/arm64, CGO_ENABLED=0, -trimpath, -tags lambda.norpc." >"$RAW/sizes.note"
}

stage_latency() {
	start_paths lat -chunks 16
	echo "$(grep -o '"store":"[^"]*"' "$WORK/gw_lat.log" | head -1 | cut -d'"' -f4 | sed "s|$WORK|<run temp dir>|") on $(df -T "$WORK" | awk 'NR==2 {print $2}')" >"$RAW/gateway_store.txt"
	local api
	for api in "${APIS[@]}"; do
		api_targets "$api" xlate
		"$LG" latency -body-bytes 200 "${LAT[@]}" "${TARGETS[@]}" "${PIDARGS[@]}" -out "$RAW/latency_200B$(suffix "$api").json"
		"$LG" latency -body-bytes 10240 "${LAT[@]}" "${TARGETS[@]}" "${PIDARGS[@]}" -out "$RAW/latency_10KB$(suffix "$api").json"
	done
}

stage_saturate() {
	start_paths sat -chunks 16
	"$LG" saturate -body-bytes 200 "${SAT[@]}" "${TARGETS[@]}" "${PIDARGS[@]}" -best-dir "$WORK" -out "$RAW/saturate.json"
}

stage_stream() {
	start_paths stream "${STREAM_MOCK[@]}"
	local api
	for api in "${APIS[@]}"; do
		api_targets "$api" xlate
		"$LG" stream "${STREAM[@]}" "${TARGETS[@]}" -out "$RAW/stream$(suffix "$api").json"
	done
	echo "mock: ${STREAM_MOCK[*]}" >"$RAW/stream.mock"
}

stage_memory() {
	local want
	want=$(($(sed -n 's/.*-streams \([0-9]*\).*/\1/p' <<<"${HOLD[*]}") * 2 + 200))
	if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$want" ]; then
		echo "open files limit $(ulimit -n) < $want: raise it (ulimit -n)" >&2
		return 1
	fi
	# A slow mock: the first chunk at once, then one a second, so streams
	# stay open. Fresh processes for each API: VmHWM is a high-water mark.
	local api
	for api in "${APIS[@]}"; do
		STAGE_PIDS=()
		start_paths "mem_$api" -chunks 300 -chunk-gap 1s
		api_targets "$api"
		"$LG" hold "${HOLD[@]}" "${TARGETS[@]}" "${PIDARGS[@]}" -out "$RAW/hold$(suffix "$api").json"
		stop_pids "${STAGE_PIDS[@]}"
	done
	memory_breakdown
}

# memory_breakdown: what one open stream holds in the gateway, per API:
# gwprof (the same app.RunLocal plus a pprof listener) holds the memory
# stage's streams against a slow mock, and the Go runtime's figures are
# read while they are open (goroutines, stack and heap per stream).
memory_breakdown() {
	local api n out="$RAW/memory_breakdown.txt" pp pid gw
	n=$(sed -n 's/.*-streams \([0-9]*\).*/\1/p' <<<"${HOLD[*]}")
	echo "# what one open stream holds in the gateway (gwprof, $n streams held per API; a slow mock: the first chunk at once, then one a second)" >"$out"
	echo "# api goroutines/stream stack_KiB/stream heap_inuse_KiB/stream (after a GC; minus the figures at rest)" >>"$out"
	for api in "${APIS[@]}"; do
		STAGE_PIDS=()
		start_mock "mock_mb_$api" -chunks 300 -chunk-gap 1s
		gateway_config "$WORK/gw_mb_$api.yaml" "$MOCK_ADDR"
		start "gw_mb_$api" "$BIN/gwprof" -config "$WORK/gw_mb_$api.yaml" -addr 127.0.0.1:0 -state "$WORK/state_mb_$api.db" \
			-pprof 127.0.0.1:0 -pprof-addr-file "$WORK/gw_mb_$api.pprof"
		pid=$STARTED_PID
		gw=$(gateway_addr "gw_mb_$api" "$pid")
		wait_file "$WORK/gw_mb_$api.pprof" "$pid" "gw_mb_$api"
		pp=$(cat "$WORK/gw_mb_$api.pprof")
		"$LG" latency -body-bytes 200 -rounds 1 -n 1 -warmup 1 -target "gateway=http://$gw${API_PATH[$api]}@${API_ROUTE[$api]}" -out "$WORK/mb_warm.json" >/dev/null 2>&1 || true
		sleep 1
		"$LG" fetch -url "http://$pp/debug/pprof/heap?gc=1&debug=1" -out "$WORK/mb_rest_$api.txt"
		"$LG" fetch -url "http://$pp/debug/pprof/goroutine?debug=1" -out "$WORK/mb_rest_g_$api.txt"
		"$LG" hold -streams "$n" -hold "$MB_HOLD" -open-timeout 60s -target "gateway=http://$gw${API_PATH[$api]}@${API_ROUTE[$api]}" \
			-pid "gateway=$pid" -out "$WORK/mb_hold_$api.json" >/dev/null 2>&1 &
		local hpid=$! g=0
		STAGE_PIDS+=("$hpid")
		for _ in $(seq 200); do
			sleep 0.1
			"$LG" fetch -url "http://$pp/debug/pprof/goroutine?debug=1" -out "$WORK/mb_g_$api.txt" 2>/dev/null || continue
			g=$(head -1 "$WORK/mb_g_$api.txt" | grep -o '[0-9]*$')
			[ "${g:-0}" -ge "$n" ] && [ "$(grep -c 'pkg/server.(\*Handler).ServeHTTP' "$WORK/mb_g_$api.txt")" -gt 0 ] && break
		done
		sleep "$MB_SETTLE" # every stream open (the hold lasts MB_HOLD)
		"$LG" fetch -url "http://$pp/debug/pprof/goroutine?debug=1" -out "$WORK/mb_g_$api.txt"
		"$LG" fetch -url "http://$pp/debug/pprof/heap?gc=1&debug=1" -out "$WORK/mb_held_$api.txt"
		wait "$hpid" || true
		awk -v api="$api" -v n="$n" '
			FNR == 1 { f++ }
			f == 1 && /^goroutine profile: total/ { g0 = $NF }
			f == 2 && /^# Stack = / { s0 = $4 } f == 2 && /^# HeapInuse = / { h0 = $4 }
			f == 3 && /^goroutine profile: total/ { g1 = $NF }
			f == 4 && /^# Stack = / { s1 = $4 } f == 4 && /^# HeapInuse = / { h1 = $4 }
			END { printf "%s %.2f %.1f %.1f\n", api, (g1 - g0) / n, (s1 - s0) / n / 1024, (h1 - h0) / n / 1024 }
		' "$WORK/mb_rest_g_$api.txt" "$WORK/mb_rest_$api.txt" "$WORK/mb_g_$api.txt" "$WORK/mb_held_$api.txt" >>"$out"
		stop_pids "${STAGE_PIDS[@]}"
	done
	cat "$out"
}

stage_cold() {
	start_mock mock_cold
	gateway_config "$WORK/gw_cold.yaml" "$MOCK_ADDR"
	local gwcmd=("$BIN/gateway" -config "$WORK/gw_cold.yaml" -addr 127.0.0.1:@PORT@ -state "$WORK/state_cold.db")
	local rpcmd=("$BIN/floorproxy" -mode reverseproxy -upstream "$MOCK_ADDR" -listen 127.0.0.1:@PORT@)
	"$LG" cold -name gateway -n "$COLD_N" -out "$RAW/cold_gateway.json" -- "${gwcmd[@]}"
	"$LG" cold -name revproxy -n "$COLD_N" -out "$RAW/cold_revproxy.json" -- "${rpcmd[@]}"
	"$LG" cold -name tcprelay -n "$COLD_N" -out "$RAW/cold_tcprelay.json" -- \
		"$BIN/floorproxy" -mode tcp -upstream "$MOCK_ADDR" -listen 127.0.0.1:@PORT@
	"$LG" cold -name direct -n "$COLD_N" -out "$RAW/cold_direct.json" -- "$BIN/mockupstream" -addr 127.0.0.1:@PORT@
	if command -v hyperfine >/dev/null; then
		hyperfine -N --warmup 2 --runs "$COLD_N" --export-json "$RAW/cold_hyperfine.json" --export-markdown "$RAW/cold_hyperfine.md" \
			-n gateway "$LG probe -- ${gwcmd[*]}" -n revproxy "$LG probe -- ${rpcmd[*]}"
	else
		echo "hyperfine not installed (apt-get install hyperfine): only the Go loop measured" | tee "$RAW/cold_hyperfine.md"
	fi
	# Package init cost at start-up, slowest first, and the total.
	GODEBUG=inittrace=1 "$BIN/gateway" -help 2>&1 | grep '^init ' |
		awk '{print $5, $0}' | sort -rn | cut -d' ' -f2- >"$WORK/inittrace.txt" || true
	{
		awk '{ms += $5; n++} END {printf "total init clock: %.2f ms in %d packages\n", ms, n}' "$WORK/inittrace.txt"
		head -25 "$WORK/inittrace.txt"
	} >"$RAW/cold_inittrace.txt"
}

stage_failover() {
	start_mock mock_fail
	local dead
	dead=$("$LG" freeport)
	cat >"$WORK/gw_fail.yaml" <<EOF
breaker:
  consecutive_failures: 5
  cooldown: 10m
  max_cooldown: 10m
providers:
  mock:
    kind: openai
    base_url: http://$MOCK_ADDR/v1
  dead-refused:   # nothing listens on this loopback port
    kind: openai
    base_url: http://127.0.0.1:$dead/v1
  dead-open:
    kind: openai
    base_url: http://127.0.0.1:$dead/v1
routes:
  bench:
    targets:
      - {provider: mock, model: bench-model}
  bench-refused:  # every request dials the dead primary (breaker forced closed)
    targets:
      - {provider: dead-refused, model: bench-model, attempts: 1, breaker: closed}
      - {provider: mock, model: bench-model}
  bench-open:     # the dead primary's breaker is warmed until open
    targets:
      - {provider: dead-open, model: bench-model, attempts: 1}
      - {provider: mock, model: bench-model}
EOF
	cp "$WORK/gw_fail.yaml" "$RAW/failover_config.yaml"
	start gw_fail "$BIN/gateway" -config "$WORK/gw_fail.yaml" -addr 127.0.0.1:0 -state "$WORK/state_fail.db"
	local gw
	gw=$(gateway_addr gw_fail "$STARTED_PID")
	"$LG" breaker -target "open=http://$gw$CHAT@bench-open" -health "http://$gw/healthz" -target-id dead-open/bench-model
	"$LG" latency -body-bytes 200 "${FAIL[@]}" -target "happy=http://$gw$CHAT@bench" \
		-target "refused=http://$gw$CHAT@bench-refused" -target "open=http://$gw$CHAT@bench-open" -out "$RAW/failover.json"
}

# start_dynamo NAME: dynalite (from node_modules) with floorproxy's counting
# reverse proxy in front of it, which counts DynamoDB calls by X-Amz-Target
# and serves them at /__bench/counts. Sets DYNAMO_COUNTER (its host:port)
# and exports the AWS variables for the emulator: its endpoint and static
# dummy credentials, so the SDK's chain stops there (no instance metadata
# lookups).
start_dynamo() {
	local name=$1
	if [ ! -f node_modules/dynalite/cli.js ]; then
		npm ci --no-audit --no-fund --loglevel=error
	fi
	local port
	port=$("$LG" freeport)
	start "dynalite_$name" node "$ROOT/node_modules/dynalite/cli.js" --host 127.0.0.1 --port "$port" \
		--createTableMs 0 --deleteTableMs 0 --updateTableMs 0
	for _ in $(seq 300); do
		"$LG" fetch -any-status -url "http://127.0.0.1:$port/" -timeout 1s 2>/dev/null && break
		sleep 0.1
	done
	start "count_$name" "$BIN/floorproxy" -mode reverseproxy -count -upstream "127.0.0.1:$port" -addr-file "$WORK/count_$name.addr"
	wait_file "$WORK/count_$name.addr" "$STARTED_PID" "count_$name"
	DYNAMO_COUNTER=$(cat "$WORK/count_$name.addr")
	export AWS_ENDPOINT_URL_DYNAMODB="http://$DYNAMO_COUNTER" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=bench \
		AWS_SECRET_ACCESS_KEY=bench AWS_EC2_METADATA_DISABLED=true
}

stage_store() {
	local help
	help=$("$BIN/gateway" -help 2>&1 || true)
	if ! grep -q -- '-store' <<<"$help"; then
		echo '{"mode": "storecalls", "status": "pending", "reason": "the gateway has no -store flag yet"}' >"$RAW/store.json"
		echo "pending: store not wired (no -store flag in gateway -help)"
		return 0
	fi
	start_dynamo store
	local counter=$DYNAMO_COUNTER
	start_mock mock_store
	local dead
	dead=$("$LG" freeport)
	cat >"$WORK/gw_store.yaml" <<EOF
providers:
  mock:
    kind: openai
    base_url: http://$MOCK_ADDR/v1
  dead:
    kind: openai
    base_url: http://127.0.0.1:$dead/v1
routes:
  bench:
    targets:
      - {provider: mock, model: bench-model}
  bench-refused:
    targets:
      - {provider: dead, model: bench-model, attempts: 1, breaker: closed}
      - {provider: mock, model: bench-model}
EOF
	# The gateway creates the table itself in local mode.
	start gw_store "$BIN/gateway" -config "$WORK/gw_store.yaml" -addr 127.0.0.1:0 -store dynamodb -table llmgw-bench
	local gw
	if ! gw=$(gateway_addr gw_store "$STARTED_PID"); then
		echo '{"mode": "storecalls", "status": "failed", "reason": "the gateway did not start with -store dynamodb: see raw/store.log"}' >"$RAW/store.json"
		return 1
	fi
	"$LG" storecalls -counts "http://$counter/__bench/counts" "${STORE_N[@]}" \
		-target "happy=http://$gw$CHAT@bench" -target "refused=http://$gw$CHAT@bench-refused" -out "$RAW/store.json"
}

# stage_lambda: the real bootstrap under pkg/lambdaemu's Runtime API emulator
# (scripts/bench/lambdabench), config from an in-process SSM server, state
# and usage in dynalite behind the counting proxy; the floor is a
# hello-world lambdaurl binary built the same way (the deploy build's flags,
# for this machine's architecture).
stage_lambda() {
	mkdir -p "$BIN/lambda"
	local build=(go build -tags lambda.norpc -trimpath "-ldflags=-s -w")
	# The deploy build exactly: without GOFLAGS (the test script's smoke run
	# sets -race, which needs cgo).
	GOFLAGS= CGO_ENABLED=0 "${build[@]}" -o "$BIN/lambda/bootstrap" ./functions/gateway
	GOFLAGS= CGO_ENABLED=0 "${build[@]}" -o "$BIN/lambda/hello" ./scripts/bench/lambdahello
	GOFLAGS= CGO_ENABLED=0 "${build[@]}" -o "$BIN/lambda/sdkhello" ./scripts/bench/lambdasdkhello
	GOFLAGS= CGO_ENABLED=0 "${build[@]}" -o "$BIN/lambda/requiredsdk" ./scripts/bench/lambdarequiredsdk
	go build -o "$BIN/" ./scripts/bench/lambdabench
	{
		echo "CGO_ENABLED=0 ${build[*]} (linux/$(go env GOARCH)): the flags of the deploy build (scripts/build-lambda.sh, linux/arm64)"
		printf 'bootstrap\t%s\nhello\t%s\nsdkhello\t%s\nrequiredsdk\t%s\n' "$(stat -c %s "$BIN/lambda/bootstrap")" "$(stat -c %s "$BIN/lambda/hello")" "$(stat -c %s "$BIN/lambda/sdkhello")" "$(stat -c %s "$BIN/lambda/requiredsdk")"
	} >"$RAW/lambda_build.txt"
	start_dynamo lambda
	start_mock mock_lambda
	local mock=$MOCK_ADDR
	# A model that answers after 1.2 s: longer than the shared state's
	# flush intervals (1 s), as real model calls are.
	start_mock mock_lambda_slow -latency 1200ms
	"$BIN/lambdabench" -bootstrap "$BIN/lambda/bootstrap" -hello "$BIN/lambda/hello" -sdk-hello "$BIN/lambda/sdkhello" -required-sdk-hello "$BIN/lambda/requiredsdk" -events "$ROOT/events" \
		-dynamodb "http://$DYNAMO_COUNTER" -counts "http://$DYNAMO_COUNTER/__bench/counts" -upstream "http://$mock" \
		-slow-upstream "http://$MOCK_ADDR" "${LAMBDA_N[@]}" -out "$RAW/lambda.json"
}

stage_gobench() {
	local pkgs=(./pkg/wire/chatwire ./pkg/wire/jsonb ./pkg/sse ./pkg/breaker ./pkg/provider/openaicompat ./pkg/provider/anthropic ./pkg/provider/bedrock ./pkg/requestlog ./pkg/app)
	{
		echo "# go test -run '^\$' -bench . -benchmem $BENCHTIME ${pkgs[*]} ./pkg/server  ($(go version))"
		go test -run '^$' -bench . -benchmem $BENCHTIME -timeout 15m "${pkgs[@]}"
		# The server package once more on its own, with a CPU profile of its benchmarks.
		go test -run '^$' -bench . -benchmem $BENCHTIME -timeout 15m \
			-cpuprofile "$WORK/server.cpu" -o "$WORK/server.test" ./pkg/server
		# One team with every limit set (six budget items), paced at 1,000 req/s and flat out, over
		# dynalite: DynamoDB writes per request and per item per second with budget leases.
		echo "# go test -run '^\$' -bench BenchmarkHotTeam $HOT_BENCHTIME ./pkg/teams"
		go test -run '^$' -bench BenchmarkHotTeam $HOT_BENCHTIME -timeout 15m ./pkg/teams
	} 2>&1 | tee "$RAW/gobench.txt"
	go tool pprof -top -nodecount=40 "$WORK/server.test" "$WORK/server.cpu" >"$RAW/pprof_server_bench.txt" 2>/dev/null
	# Where the SSE relay allocates, if it does: every allocation sampled
	# (-memprofilerate=1) while relaying chunks through the openai adapter.
	go test -run '^$' -bench 'BenchmarkRelaySSEChunk$' -benchmem $BENCHTIME -memprofile "$WORK/relay.mem" \
		-memprofilerate 1 -o "$WORK/relay.test" ./pkg/provider/openaicompat >"$WORK/relay.bench" 2>&1
	{
		echo "# go test -run '^\$' -bench 'BenchmarkRelaySSEChunk\$' -benchmem $BENCHTIME -memprofile relay.mem -memprofilerate 1 ./pkg/provider/openaicompat"
		grep '^Benchmark' "$WORK/relay.bench"
		echo "# every allocation of the whole run (all b.N rounds, set-up included) under the relay loop's Stream.Next:"
		echo "# go tool pprof -sample_index=alloc_objects -top -focus 'sseStream..Next'"
		go tool pprof -sample_index=alloc_objects -top -focus 'sseStream..Next' "$WORK/relay.test" "$WORK/relay.mem" 2>&1 | grep -v '^File:\|^Build ID:\|^Time:'
		echo "# the same under Provider.Send (once per stream, not per chunk):"
		go tool pprof -sample_index=alloc_objects -top -focus 'Adapter..Send' "$WORK/relay.test" "$WORK/relay.mem" 2>&1 | grep -v '^File:\|^Build ID:\|^Time:'
		echo "# all allocations of the run:"
		go tool pprof -sample_index=alloc_objects -top -nodecount=25 "$WORK/relay.test" "$WORK/relay.mem" 2>/dev/null
	} >"$RAW/memprofile_relay_chunk.txt"
	# Where one non-streaming request through the handler allocates (the server
	# test binary built above, run once more with every allocation sampled).
	(cd pkg/server && "$WORK/server.test" -test.run '^$' -test.bench 'BenchmarkServerChat/nonstream_200B' -test.benchmem \
		${BENCHTIME:+-test.benchtime=100x} -test.memprofile "$WORK/server.mem" -test.memprofilerate 1 >"$WORK/server.bench" 2>&1)
	{
		echo "# server.test -test.bench 'BenchmarkServerChat/nonstream_200B' -test.benchmem -test.memprofile server.mem -test.memprofilerate 1"
		grep '^Benchmark' "$WORK/server.bench"
		echo "# go tool pprof -sample_index=alloc_objects -top (allocation sites of the run; divide by the iterations for per request)"
		go tool pprof -sample_index=alloc_objects -top -nodecount=40 "$WORK/server.test" "$WORK/server.mem" 2>/dev/null | grep -v '^File:\|^Build ID:\|^Time:'
	} >"$RAW/memprofile_server_request.txt"
	# The Messages and Responses paths (BenchmarkServerAPIs): where their CPU
	# goes and where they allocate, every allocation sampled.
	(cd pkg/server && "$WORK/server.test" -test.run '^$' -test.bench 'BenchmarkServerAPIs' -test.benchmem \
		-test.benchtime=$PROFILE_BENCHTIME -test.cpuprofile "$WORK/apis.cpu" >"$WORK/apis_cpu.bench" 2>&1)
	{
		echo "# server.test -test.bench 'BenchmarkServerAPIs' -test.benchtime=$PROFILE_BENCHTIME -test.cpuprofile apis.cpu; go tool pprof -top"
		go tool pprof -top -nodecount=40 "$WORK/server.test" "$WORK/apis.cpu" 2>/dev/null | grep -v '^File:\|^Build ID:\|^Time:'
	} >"$RAW/pprof_server_apis.txt"
	local sub file
	for sub in '^messages$/nonstream_10KB' '^responses$/nonstream_10KB' 'messages_to_bedrock/stream_64chunks'; do
		(cd pkg/server && "$WORK/server.test" -test.run '^$' -test.bench "BenchmarkServerAPIs/$sub\$" -test.benchmem \
			-test.benchtime=$PROFILE_BENCHTIME -test.memprofile "$WORK/apis.mem" -test.memprofilerate 1 >"$WORK/apis.bench" 2>&1)
		{
			echo "# server.test -test.bench 'BenchmarkServerAPIs/$sub' -test.benchtime=$PROFILE_BENCHTIME -test.memprofile apis.mem -test.memprofilerate 1"
			grep '^Benchmark' "$WORK/apis.bench"
			echo "# go tool pprof -sample_index=alloc_objects -top (allocation sites of the run, set-up included; divide by the iterations for per request)"
			go tool pprof -sample_index=alloc_objects -top -nodecount=30 "$WORK/server.test" "$WORK/apis.mem" 2>/dev/null | grep -v '^File:\|^Build ID:\|^Time:'
		} >"$WORK/apis_mem.txt"
		file=${sub//[\^\$]/}
		mv "$WORK/apis_mem.txt" "$RAW/memprofile_server_${file//\//_}.txt"
	done
}

stage_profile() {
	local rate=500
	[ -s "$WORK/sat_gateway.rate" ] && [ "$(cat "$WORK/sat_gateway.rate")" -gt 0 ] && rate=$(cat "$WORK/sat_gateway.rate")
	start_mock mock_prof -chunks 16
	gateway_config "$WORK/gw_prof.yaml" "$MOCK_ADDR"
	start gw_prof "$BIN/gwprof" -config "$WORK/gw_prof.yaml" -addr 127.0.0.1:0 -state "$WORK/state_prof.db" \
		-pprof 127.0.0.1:0 -pprof-addr-file "$WORK/gw_prof.pprof"
	local pid=$STARTED_PID gw
	gw=$(gateway_addr gw_prof "$pid")
	wait_file "$WORK/gw_prof.pprof" "$pid" gw_prof
	# The heap at rest (after one request), before the load: what the idle
	# RSS is made of.
	"$LG" latency -body-bytes 200 -rounds 1 -n 1 -warmup 1 -target "gateway=http://$gw$CHAT@bench" -out "$WORK/prof_warm.json" 2>/dev/null
	sleep 1
	"$LG" fetch -url "http://$(cat "$WORK/gw_prof.pprof")/debug/pprof/heap?gc=1" -out "$WORK/gw_idle.heap"
	{
		echo "# gwprof at rest after one request: /debug/pprof/heap?gc=1; go tool pprof -sample_index=inuse_space -top"
		go tool pprof -sample_index=inuse_space -top -nodecount=30 "$BIN/gwprof" "$WORK/gw_idle.heap" 2>/dev/null | grep -v '^File:\|^Build ID:\|^Time:'
		echo "# the process's memory at rest: /proc/<pid>/status and the Go runtime's view (/debug/pprof/heap?debug=1 tail)"
		grep -E '^(VmRSS|RssAnon|RssFile|VmHWM)' "/proc/$pid/status"
		echo "# resident KiB by mapping at rest (/proc/<pid>/smaps: the binary's own pages are file-backed; [anon] is the Go heap, stacks and runtime)"
		awk '/^[0-9a-f]+-[0-9a-f]+ / {name = ($6 == "" ? "[anon]" : $6)} /^Rss:/ {rss[name] += $2} END {for (n in rss) if (rss[n] > 0) print rss[n], n}' "/proc/$pid/smaps" |
			sort -rn | head -12 | sed "s|$WORK|<run temp dir>|"
	} >"$RAW/pprof_gateway_idle_heap.txt"
	"$LG" fetch -url "http://$(cat "$WORK/gw_prof.pprof")/debug/pprof/heap?debug=1" -out "$WORK/gw_idle.heap.txt"
	grep -E '^# (HeapSys|HeapInuse|HeapIdle|HeapReleased|Stack|MSpan|GCSys|OtherSys|Sys|NumGC|NextGC) ' "$WORK/gw_idle.heap.txt" >>"$RAW/pprof_gateway_idle_heap.txt" || true
	# Concurrency 1, each API's passthrough route, a CPU profile over the
	# loop: where the added latency of goals 1 goes (the handler's own
	# work is on the request's critical path; the record and log line run
	# after the response, beside the next request).
	local api pp
	pp=$(cat "$WORK/gw_prof.pprof")
	for api in "${APIS[@]}"; do
		"$LG" fetch -url "http://$pp/debug/pprof/profile?seconds=$PROFILE_SECS" -out "$WORK/gw_c1_$api.cpu" &
		local c1pid=$!
		echo "$c1pid" >>"$PIDFILE"
		STAGE_PIDS+=("$c1pid")
		"$LG" latency -body-bytes 200 -rounds 1 -n "$C1_REQUESTS" -warmup 50 -target "gateway=http://$gw${API_PATH[$api]}@${API_ROUTE[$api]}" \
			-out "$WORK/prof_c1_$api.json" >/dev/null 2>&1 &
		local lpid=$!
		STAGE_PIDS+=("$lpid")
		# The loop runs at least as long as the profile: stop it after.
		wait "$c1pid"
		kill "$lpid" 2>/dev/null || true
		wait "$lpid" 2>/dev/null || true
		{
			echo "# gwprof at concurrency 1 (loadgen latency loop, 200 B bodies, ${API_PATH[$api]} on route ${API_ROUTE[$api]}), ${PROFILE_SECS}s; go tool pprof -top -cum"
			go tool pprof -top -cum -nodecount=60 "$BIN/gwprof" "$WORK/gw_c1_$api.cpu" 2>/dev/null | grep -v '^File:\|^Build ID:\|^Time:'
		} >"$RAW/pprof_gateway_c1$(suffix "$api").txt"
	done
	"$LG" fetch -url "http://$pp/debug/pprof/profile?seconds=$PROFILE_SECS" -out "$WORK/gw.cpu" &
	local fetchpid=$!
	echo "$fetchpid" >>"$PIDFILE"
	STAGE_PIDS+=("$fetchpid")
	"$LG" rate -rate "$rate" -duration "$((PROFILE_SECS + 1))s" -target "gateway=http://$gw$CHAT" -out "$RAW/pprof_gateway_load.json"
	wait "$fetchpid"
	cp "$WORK/gw.cpu" "$RAW/pprof_gateway_saturation.pb.gz"
	{
		echo "# gwprof (app.RunLocal + pprof listener) under vegeta at $rate req/s (the gateway's saturation rate in this run), ${PROFILE_SECS}s"
		go tool pprof -top -nodecount=40 "$BIN/gwprof" "$WORK/gw.cpu" 2>/dev/null
	} >"$RAW/pprof_gateway_saturation.txt"
	go tool pprof -top -cum -nodecount=120 "$BIN/gwprof" "$WORK/gw.cpu" >"$RAW/pprof_gateway_saturation_cum.txt" 2>/dev/null
	head -20 "$RAW/pprof_gateway_saturation.txt"
}

# ---- the run

FAILED=()
: >"$RAW/stages.tsv"

# run_stage NAME FUNC: runs FUNC in a subshell with errexit (its log in
# raw/NAME.log), stops every process it started, records ok/FAILED.
run_stage() {
	local name=$1 fn=$2 t0=$SECONDS rc
	echo "== $name"
	set +e
	(
		set -euo pipefail
		STAGE_PIDS=()
		trap 'stop_pids "${STAGE_PIDS[@]:-}"' EXIT
		"$fn"
	) 2>&1 | tee "$RAW/$name.log"
	rc=${PIPESTATUS[0]}
	set -e
	if [ "$rc" -eq 0 ]; then
		printf '%s\tok\t%s\n' "$name" $((SECONDS - t0)) >>"$RAW/stages.tsv"
	else
		printf '%s\tFAILED\t%s\n' "$name" $((SECONDS - t0)) >>"$RAW/stages.tsv"
		FAILED+=("$name")
		echo "!! stage $name failed (exit $rc)" >&2
	fi
}

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
date -u +%Y-%m-%dT%H:%M:%SZ >"$RAW/date.txt"
cut -d' ' -f1-3 /proc/loadavg >"$RAW/loadavg_start.txt"
[ -n "${BENCH_NOTE:-}" ] && echo "$BENCH_NOTE" >"$RAW/note.txt"
{
	lscpu
	echo
	grep MemTotal /proc/meminfo
	uname -a
	go version
} >"$RAW/machine.txt" 2>&1 || true

run_stage build stage_build
if [[ " ${FAILED[*]} " == *" build "* ]]; then
	echo "build failed: nothing to measure" >&2
	exit 1
fi
for stage in ${BENCH_STAGES:-latency saturate stream memory cold failover store lambda gobench profile}; do
	case "$stage" in
	latency | saturate | stream | memory | cold | failover | store | lambda | gobench | profile) run_stage "$stage" "stage_$stage" ;;
	*)
		echo "unknown stage $stage in BENCH_STAGES" >&2
		FAILED+=("$stage")
		;;
	esac
done
cut -d' ' -f1-3 /proc/loadavg >"$RAW/loadavg_end.txt"

"$BIN/report" -raw "$RAW" -out "$OUT/results.md" -command "$COMMAND" -go "$(go version | cut -d' ' -f3-)" ${SMOKE:+-smoke}
if [ -n "$SMOKE" ] && [ -z "${BENCH_OUT:-}" ]; then
	echo "results: smoke run, not kept (set BENCH_OUT=DIR to keep them)"
else
	echo "results: $OUT/results.md (raw outputs in $RAW)"
fi
if [ ${#FAILED[@]} -gt 0 ]; then
	echo "FAILED stages: ${FAILED[*]}" >&2
	exit 1
fi
