#!/usr/bin/env bash
# bench/ab.sh BASE_BIN_DIR [NEW_BIN_DIR]: the saga path of two builds in one
# sitting (docs/benchmarks.md: run it before and after any change on the
# saga path). Alternating, RUNS rounds of each: every daemon and sagabench
# of one build on a fresh durable stack (PG_FAST=0), sagabench at C=64 for
# BENCH_SECS s and at C=1 for half as long; prints each run, the medians
# and their ratio (bench/ab.inc). NEW_BIN_DIR defaults to build/bin.
#
#   git worktree add /tmp/base <commit> && make -C /tmp/base build
#   bash bench/ab.sh /tmp/base/build/bin
#
# Environment: RUNS (3), BENCH_SECS (12).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BASE=${1:?usage: bench/ab.sh BASE_BIN_DIR [NEW_BIN_DIR]}
NEW=${2:-$ROOT/build/bin}
source "$ROOT/tests/lib/stack.sh"
source "$ROOT/bench/ab.inc"
PG_FAST=0
echo "[bench-ab] base: $("$BASE/orchestratord" --version)"
echo "[bench-ab] new:  $("$NEW/orchestratord" --version)"

ab_run() { # ab_run base|new ARGS...: one sagabench run on a fresh stack of that build
  local mode=$1; shift
  SAGA_BIN_DIR=$([ "$mode" = base ] && echo "$BASE" || echo "$NEW")
  stack_start >/dev/null
  "$SAGA_BIN_DIR/sagabench" -o "$ORCH_URL" -s "$STOCK_URL" -p "$PAYMENT_URL" --json --no-progress "$@"
  stack_stop
}

ab_compare bench-ab base new
