#!/usr/bin/env bash
# StartSaga called twice with the same id creates one saga (idempotent), and
# the same id with another order is refused with ALREADY_EXISTS and changes
# nothing (saga-semantics.md rule 6).
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
stack_start
ctl stock set B2 10 >/dev/null
ctl deposit c1 100.00 >/dev/null
id=44444444-4444-4444-8444-444444444444

ctl start c1 B2 2 30.00 --id "$id" >/dev/null
ctl start c1 B2 2 30.00 --id "$id" --wait >/dev/null
# concurrent duplicates too
pids=()
for _ in 1 2 3 4; do ctl start c1 B2 2 30.00 --id "$id" >/dev/null & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done
set +e
out=$(ctl start c1 B2 3 30.00 --id "$id" 2>&1); rc=$?
set -e
assert_eq "other order, same id: exit code" "1" "$rc"
assert_eq "other order, same id: refused" "1" "$(grep -c 'ALREADY_EXISTS' <<<"$out")"

assert_eq "one saga" "1" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas")"
assert_eq "saga state" "COMPLETED" "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$id'")"
assert_eq "one start in history" "1" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM saga_history WHERE event = 'started'")"
assert_eq "B2 on hand" "8" "$(psql_db sagas_stock "SELECT on_hand FROM stock WHERE sku = 'B2'")"
assert_eq "c1 balance" "7000" "$(psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'c1'")"
assert_eq "one charge" "1" "$(psql_db sagas_payment "SELECT count(*) FROM charges")"
finish
