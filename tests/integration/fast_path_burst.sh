#!/usr/bin/env bash
# The participants' one-round-trip path under a burst (docs/architecture.md,
# "Participants: the one-round-trip path"): 10,000 sagas started at once on
# 64 skus and 256 customers (sagabench's defaults), so both workers of each
# participant serve big batches on the same rows, one by the path and one
# by the locking path.
#   - every saga ends COMPLETED (none cancelled by its step deadline), and
#     sagabench's invariants hold (stock and money to the unit, COMPLETED ==
#     CHARGED, no charge or reservation of a saga that did not complete);
#   - PostgreSQL reports no deadlock: the path locks its rows in the same
#     order as the locking path (before it did not: this burst saw 3
#     deadlocks, each a 1 s stall, and 2,635 sagas cancelled by their step
#     deadline);
#   - the path was taken (the workers' last log lines count its
#     transactions).
#   Step deadlines are 120 s here, so that no saga is cancelled because this
#   machine is slow or busy (CI runs other tests beside it: 256 of 10,000
#   were cancelled once at the default 5 s); a deadlock still shows in
#   PostgreSQL's log.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
ORCH_FLAGS="--step-timeout 120000"
PG_FAST=0 stack_start

N=10000
"$SAGA_BIN_DIR/sagabench" -o "$ORCH_URL" -s "$STOCK_URL" -p "$PAYMENT_URL" --no-progress \
  -c 50 -n 200 --skus 64 --customers 256 >/dev/null # warm: the caches learn the rows
rc=0
"$SAGA_BIN_DIR/sagabench" -o "$ORCH_URL" -s "$STOCK_URL" -p "$PAYMENT_URL" --no-progress \
  -c "$N" -n "$N" --skus 64 --customers 256 --call-timeout 120000 -t 170 --json \
  >"$STACK_DIR/burst.json" || rc=$?
assert_eq "sagabench exit code (its invariants)" "0" "$rc"
completed=$(grep -o '"completed":[0-9]*' "$STACK_DIR/burst.json" | head -1 | cut -d: -f2)
assert_eq "completed sagas" "$N" "$completed"
assert_eq "unfinished sagas" "0" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE NOT finished")"
assert_eq "deadlocks reported by PostgreSQL" "0" \
  "$(grep -c 'deadlock detected' "$STACK_DIR/pg/server.log" || true)"
# what the path did, from the workers' last lines
stack_kill stockd
stack_kill paymentd
sum() { grep -ho '[0-9]* transactions by the one-round-trip path, [0-9]* fell back' "$@" |
  awk -v f="$FIELD" '{s += $f} END {print s + 0}'; }
fast=$(FIELD=1 sum "$STACK_DIR/stockd.log" "$STACK_DIR/paymentd.log")
fell=$(FIELD=7 sum "$STACK_DIR/stockd.log" "$STACK_DIR/paymentd.log")
echo "participant transactions: $fast by the one-round-trip path, $fell fell back"
if [ "$fast" -eq 0 ]; then
  echo "FAIL: the one-round-trip path was not taken" >&2
  exit 1
fi
finish
