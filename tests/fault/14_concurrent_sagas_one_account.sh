#!/usr/bin/env bash
# Fault 14: 50 concurrent sagas of 1 x X at 10.00 against X = 100 and
# c1 = 200.00: exactly 20 COMPLETED and 30 CANCELLED (payment declined),
# c1 0.00, X 80, no live reservation of a cancelled saga, and no saga
# cancelled because of a serialization failure or deadlock.
source "$(dirname "$0")/head.inc"
ORCH_FLAGS="--step-timeout 20000 --request-timeout 5000"
stack_start
ctl stock set X 100 >/dev/null
ctl deposit c1 200.00 >/dev/null
pids=()
for _ in $(seq 1 50); do
  ctl start c1 X 1 10.00 >/dev/null &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
assert_eq "50 sagas" "50" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas")"
wait_all_terminal 60
assert_eq "outcomes" "CANCELLED|payment_declined:30 COMPLETED|:20" "$(psql_db sagas_orchestrator \
  "SELECT string_agg(k || ':' || n, ' ' ORDER BY k) FROM (SELECT state || '|' || reason AS k, count(*) AS n FROM sagas GROUP BY 1) t")"
assert_eq "c1" "0" "$(balance c1)"
assert_eq "X" "80" "$(on_hand X)"
assert_eq "20 charges, 30 declines" "CHARGED:20 DECLINED:30" "$(psql_db sagas_payment \
  "SELECT string_agg(status || ':' || n, ' ' ORDER BY status) FROM (SELECT status, count(*) AS n FROM charges GROUP BY 1) t")"
assert_eq "reservations" "RELEASED:30 RESERVED:20" "$(psql_db sagas_stock \
  "SELECT string_agg(status || ':' || n, ' ' ORDER BY status) FROM (SELECT status, count(*) AS n FROM reservations GROUP BY 1) t")"
assert_eq "no business refusal from 40001/40P01" "0" "$(cat "$STACK_DIR"/*.log | grep -c 'database_busy' || true)"
check_invariants "X:100" "c1:20000"
finish
