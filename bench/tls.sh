#!/usr/bin/env bash
# bench/tls.sh: what mutual TLS costs (docs/benchmarks.md, "Mutual TLS"),
# in one run on one machine: the same system with plain loopback links and
# with every link mutual TLS (tests/lib/stack.sh, STACK_TLS=1), alternating,
# RUNS rounds of each: sagabench at C=64 for BENCH_SECS s and at C=1 for
# half as long, on a fresh durable stack each time (PG_FAST=0). Prints each
# run, then the medians of both and their ratio. Connections are long-lived,
# so a handshake is paid once per connection, not per call.
#
# Environment: SAGA_BIN_DIR (default build/bin), RUNS (3), BENCH_SECS (12).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SAGA_BIN_DIR=${SAGA_BIN_DIR:-$ROOT/build/bin}
RUNS=${RUNS:-3}
BENCH_SECS=${BENCH_SECS:-12}
source "$ROOT/tests/lib/stack.sh"
PG_FAST=0
say() { echo "[bench-tls] $*"; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
jget() { jq -r ".$1" <<<"$2"; }

run() { # run MODE ARGS...: one sagabench run on a fresh stack; its JSON
  local mode=$1; shift
  STACK_TLS=$([ "$mode" = tls ] && echo 1 || echo 0)
  stack_start >/dev/null
  local tls=()
  [ "$STACK_TLS" = 1 ] && read -ra tls <<<"$(tls_flags admin)"
  # the admin listeners under TLS (the admin role may start sagas too, and
  # the bench sets stock and deposits): the same handshake and record cost
  # as the client listener
  "$SAGA_BIN_DIR/sagabench" -o "$ORCH_ADMIN_URL" -s "$STOCK_ADMIN_URL" -p "$PAYMENT_ADMIN_URL" \
    ${tls[@]+"${tls[@]}"} --json --no-progress "$@"
  stack_stop
}

declare -A SPS64 P50_1
for r in $(seq 1 "$RUNS"); do
  for mode in plain tls; do
    j=$(run "$mode" -c 64 -n 1000000 -d "$BENCH_SECS" --label "$mode-c64-$r")
    SPS64[$mode]="${SPS64[$mode]:-} $(jget sagas_per_s "$j")"
    say "run $r $mode C=64: $(jget sagas_per_s "$j") sagas/s, p50 $(jget latency_ms.p50 "$j") ms"
    j=$(run "$mode" -c 1 -n 100000 -d "$(awk -v s="$BENCH_SECS" 'BEGIN{print s/2}')" --label "$mode-c1-$r")
    P50_1[$mode]="${P50_1[$mode]:-} $(jget latency_ms.p50 "$j")"
    say "run $r $mode C=1 : $(jget sagas_per_s "$j") sagas/s, p50 $(jget latency_ms.p50 "$j") ms"
  done
done
# shellcheck disable=SC2086
{
  p64=$(median ${SPS64[plain]}); t64=$(median ${SPS64[tls]})
  p1=$(median ${P50_1[plain]}); t1=$(median ${P50_1[tls]})
}
say ""
say "== summary (median of $RUNS runs each, durable PostgreSQL)"
say "sagas/s at C=64   plain $p64   mTLS $t64   ratio $(awk -v a="$t64" -v b="$p64" 'BEGIN{printf "%.3f", a/b}') (target >= 0.90)"
say "p50 ms at C=1     plain $p1   mTLS $t1   difference $(awk -v a="$t1" -v b="$p1" 'BEGIN{printf "%+.2f", a-b}') ms (target < 0.5)"
