#!/usr/bin/env bash
# WaitSaga (sagactl wait, start --wait): a waiting call is answered when the
# saga finishes, not before; a wait that runs out says so and changes
# nothing; an unknown id is NOT_FOUND; waits on many sagas at once are all
# answered with their final state.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
STACK_FAULTS=1 # it arms faults
stack_start
ctl stock set W1 100 >/dev/null
ctl deposit wc 1000.00 >/dev/null

# unknown saga
set +e
out=$(ctl wait 99999999-9999-4999-8999-999999999999 2>&1); rc=$?
set -e
assert_eq "unknown id: exit code" "1" "$rc"
assert_eq "unknown id: NOT_FOUND" "1" "$(grep -c 'NOT_FOUND' <<<"$out")"

# a saga held in RESERVING by a 1500 ms delay on ReserveStock
ctl fault set stock delay --method ReserveStock --delay 1500 --count 1 >/dev/null
id=$(ctl start wc W1 1 10.00 --json | grep -o '"saga_id":"[^"]*"' | cut -d'"' -f4)
set +e
out=$(ctl wait "$id" --wait-timeout 300 2>&1); rc=$?
set -e
assert_eq "short wait: exit code" "1" "$rc"
assert_eq "short wait: not finished, RESERVING" "1" \
  "$(grep -c 'did not finish within 300 ms (last seen RESERVING)' <<<"$out")"
state=$(ctl wait "$id" --json | grep -o '"state":"[^"]*"' | cut -d'"' -f4)
assert_eq "long wait: final state" "COMPLETED" "$state"
assert_eq "stored state" "COMPLETED" \
  "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$id'")"

# 40 sagas, each waited for by its own client at once (5 cannot pay)
ctl deposit poor 1.00 >/dev/null
pids=()
for i in $(seq 1 40); do
  cust=wc; [ $((i % 8)) -eq 0 ] && cust=poor
  ctl start "$cust" W1 1 5.00 --wait --json >"$STACK_DIR/w$i.json" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
assert_eq "every wait answered COMPLETED or CANCELLED" "40" \
  "$(cat "$STACK_DIR"/w*.json | grep -c -E '"state":"(COMPLETED|CANCELLED)"')"
assert_eq "completed" "35" "$(cat "$STACK_DIR"/w*.json | grep -c '"state":"COMPLETED"')"
assert_eq "cancelled" "5" "$(cat "$STACK_DIR"/w*.json | grep -c '"state":"CANCELLED"')"
assert_eq "W1 on hand" "64" "$(psql_db sagas_stock "SELECT on_hand FROM stock WHERE sku = 'W1'")"
assert_eq "wc balance (1000.00 - 10.00 - 35 x 5.00)" "81500" "$(psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'wc'")"
finish
