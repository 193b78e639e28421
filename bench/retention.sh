#!/usr/bin/env bash
# bench/retention.sh: what a retention pass costs the saga path
# (docs/benchmarks.md, "Retention"), in one run on one machine. Every
# round starts a fresh durable stack (PG_FAST=0) and loads the same
# RET_SAGAS expired sagas by SQL (finished 30 days ago, 4 history rows each,
# and their records at the three participants: released, refunded,
# shipped, so no invariant of sagabench's counts them), then runs sagabench:
#   - quiet: every daemon's retention job off (--retention-interval 0);
#   - retention: every daemon's job on (--retention-interval 200), so the
#     orchestrator and the three participants delete while sagabench runs.
# Alternating, RUNS rounds of each, at C=64 for BENCH_SECS s and at C=1 for
# half as long. Prints each run, how many expired sagas were left when it
# ended (more than 0: the pass ran for the whole measurement), the medians
# and their ratio (bench/ab.inc). Target (issue 23): retention/quiet at
# C=64 >= 0.90.
#
# Environment: SAGA_BIN_DIR (default build/bin), RUNS (3), BENCH_SECS (12),
# RET_SAGAS (150000).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SAGA_BIN_DIR=${SAGA_BIN_DIR:-$ROOT/build/bin}
source "$ROOT/tests/lib/stack.sh"
source "$ROOT/bench/ab.inc"
PG_FAST=0
RET_SAGAS=${RET_SAGAS:-150000}

# load_expired: RET_SAGAS finished sagas started 30 days ago, in every
# database, as if they had run then
load_expired() {
  local ago="now() - interval '30 days'" ids="generate_series(1, $RET_SAGAS) i"
  local id="md5('expired' || i)::uuid"
  psql_db sagas_orchestrator "
    INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, version, finished,
      created_at, updated_at)
    SELECT $id, 'COMPLETED', 'old' || (i % 256), 'OLD', 1, 100, 4, true, $ago, $ago FROM $ids;
    INSERT INTO saga_history (saga_id, version, from_state, to_state, event, at)
    SELECT $id, v, (ARRAY[NULL, 'RESERVING', 'CHARGING', 'SHIPPING'])[v],
      (ARRAY['RESERVING', 'CHARGING', 'SHIPPING', 'COMPLETED'])[v],
      (ARRAY['start', 'reply_ok', 'reply_ok', 'reply_ok'])[v], $ago
    FROM $ids, generate_series(1, 4) v" >/dev/null
  psql_db sagas_stock "INSERT INTO reservations (saga_id, sku, qty, status, created_at, updated_at)
    SELECT $id, 'OLD', 1, 'RELEASED', $ago, $ago FROM $ids" >/dev/null
  psql_db sagas_payment "INSERT INTO charges (saga_id, customer, amount, status, created_at, updated_at)
    SELECT $id, 'old' || (i % 256), 100, 'REFUNDED', $ago, $ago FROM $ids" >/dev/null
  psql_db sagas_shipping "INSERT INTO shipments (saga_id, customer, sku, qty, status, created_at, updated_at)
    SELECT $id, 'old' || (i % 256), 'OLD', 1, 'SHIPPED', $ago, $ago FROM $ids" >/dev/null
  # as autovacuum would have by the time such rows are 30 days old
  local db_t
  for db_t in sagas_orchestrator:sagas sagas_orchestrator:saga_history sagas_stock:reservations \
    sagas_payment:charges sagas_shipping:shipments; do
    psql_db "${db_t%%:*}" "VACUUM ANALYZE ${db_t#*:}" >/dev/null
  done
}

ab_run() { # ab_run MODE ARGS...: one sagabench run on a fresh stack; its JSON
  local mode=$1 iv=0 left; shift
  [ "$mode" = retention ] && iv=200
  ORCH_FLAGS="--retention-interval $iv" STOCK_FLAGS="--retention-interval $iv" \
    PAYMENT_FLAGS="--retention-interval $iv" SHIPPING_FLAGS="--retention-interval $iv" \
    stack_start >/dev/null
  # the jobs start at once, before the rows are there: the first pass finds
  # nothing and the next one (200 ms later) starts on the loaded rows
  load_expired
  "$SAGA_BIN_DIR/sagabench" -o "$ORCH_URL" -s "$STOCK_URL" -p "$PAYMENT_URL" --json --no-progress "$@"
  left=$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE sku = 'OLD'")
  echo "[bench-retention] $mode: expired sagas left when sagabench ended: $left of $RET_SAGAS" >&2
  stack_stop
}

ab_compare bench-retention quiet retention
echo "[bench-retention] target: C=64 ratio retention/quiet >= 0.90"
