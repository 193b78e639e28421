#!/usr/bin/env bash
# bench/tls.sh: what mutual TLS costs (docs/benchmarks.md, "Mutual TLS"),
# in one run on one machine: the same system with plain loopback links and
# with every link mutual TLS (tests/lib/stack.sh, STACK_TLS=1), alternating,
# RUNS rounds of each: sagabench at C=64 for BENCH_SECS s and at C=1 for
# half as long, on a fresh durable stack each time (PG_FAST=0). Prints each
# run, then the medians of both and their ratio (bench/ab.inc). Connections
# are long-lived, so a handshake is paid once per connection, not per call.
#
# Environment: SAGA_BIN_DIR (default build/bin), RUNS (3), BENCH_SECS (12).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SAGA_BIN_DIR=${SAGA_BIN_DIR:-$ROOT/build/bin}
source "$ROOT/tests/lib/stack.sh"
source "$ROOT/bench/ab.inc"
PG_FAST=0

ab_run() { # ab_run MODE ARGS...: one sagabench run on a fresh stack; its JSON
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

ab_compare bench-tls plain tls
echo "[bench-tls] targets: C=64 ratio >= 0.90, C=1 p50 difference < 0.5 ms"
