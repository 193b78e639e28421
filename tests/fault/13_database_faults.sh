#!/usr/bin/env bash
# Fault 13: database faults under the participants.
# 1. pg_terminate_backend on paymentd's connections while it holds a
#    ChargePayment (a 1.5 s delay fault, so the kill lands mid-command): the
#    held charge finds its connection dead, paymentd reconnects and runs it
#    once more (the charge is idempotent by saga id), S1 COMPLETED with one
#    charge.
# 2. a PostgreSQL restart between S1 and S2: every daemon's connection goes
#    stale; each reconnects on first use and S2 completes with one charge.
# Nothing is refused as a business error (a lost connection is UNAVAILABLE,
# retried), and no saga is charged twice. The step deadline is long (10 s)
# and one request waits up to 5 s without resends, so the held charge is
# the only copy and the outcome is exact: one charge per saga.
source "$(dirname "$0")/head.inc"
ORCH_FLAGS="$FAST_ORCH --step-timeout 10000 --request-timeout 5000"
stack_start
fixture
S1=$S
S2=5a9a5a9a-0000-4000-8000-000000000002

# ---- 1: the payment connection killed mid-command
ctl fault set payment delay --method ChargePayment --delay 1500 --count 1 >/dev/null
ctl start c1 X 2 30.00 --id "$S1" >/dev/null
wait_until 20 grep -qF "fault injected: delay on ChargePayment" "$STACK_DIR/paymentd.log"
assert_eq "S1 while the charge is held" "CHARGING|" "$(saga_state "$S1")"
assert_eq "no charge yet" "0" "$(psql_db sagas_payment "SELECT count(*) FROM charges")"
killed=$(psql_db sagas_orchestrator "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) AS t FROM pg_stat_activity WHERE datname = 'sagas_payment' AND pid <> pg_backend_pid()) k WHERE t")
assert_eq "paymentd's connections terminated" "yes" "$([ "$killed" -ge 1 ] && echo yes || echo "no ($killed)")"
wait_state "$S1" COMPLETED 30
assert_eq "S1" "COMPLETED|" "$(saga_state "$S1")"
assert_eq "S1 path" "RESERVING>CHARGING>SHIPPING>COMPLETED" "$(path_of "$S1")"
assert_eq "paymentd reconnected" "yes" "$([ "$(log_count paymentd 'reconnected to database')" -ge 1 ] && echo yes || echo no)"
assert_eq "S1 charges" "CHARGED:1" "$(psql_db sagas_payment "SELECT status || ':' || count(*) FROM charges WHERE saga_id = '$S1' GROUP BY status")"
assert_eq "c1 after S1" "7000" "$(balance c1)"
assert_eq "X after S1" "8" "$(on_hand X)"

# ---- 2: PostgreSQL restarted between S1 and S2 (same port)
bash "$STACK_ROOT/scripts/pg.sh" stop "$STACK_DIR/pg"
PG_FAST=1 bash "$STACK_ROOT/scripts/pg.sh" start "$STACK_DIR/pg" "$PG_PORT" >/dev/null
# a client retries StartSaga with the same id while the orchestrator's API
# connections are found stale: only UNAVAILABLE may come back meanwhile
tries=0
: >"$STACK_DIR/start2.err"
until ctl start c1 X 2 30.00 --id "$S2" >/dev/null 2>>"$STACK_DIR/start2.err"; do
  tries=$((tries + 1))
  [ "$tries" -lt 10 ] || break
done
echo "StartSaga S2 failed $tries time(s) before it was answered"
assert_eq "S2 started within 10 tries" "yes" "$([ "$tries" -lt 10 ] && echo yes || echo no)"
assert_eq "StartSaga failures were all UNAVAILABLE" "0" \
  "$(grep -vc "UNAVAILABLE (database_unavailable)" "$STACK_DIR/start2.err" || true)"
wait_state "$S2" COMPLETED 30
assert_eq "S2" "COMPLETED|" "$(saga_state "$S2")"
assert_eq "S2 path" "RESERVING>CHARGING>SHIPPING>COMPLETED" "$(path_of "$S2")"
assert_eq "S2 charges" "CHARGED:1" "$(psql_db sagas_payment "SELECT status || ':' || count(*) FROM charges WHERE saga_id = '$S2' GROUP BY status")"

# ---- no business refusal anywhere, never two charges
assert_eq "no refusal reason in any history row" "0" "$(psql_db sagas_orchestrator \
  "SELECT count(*) FROM saga_history WHERE reason <> ''")"
assert_eq "no refusal in stockd" "0" "$(grep -cE 'OUT_OF_STOCK|UNKNOWN_SKU|TOMBSTONE' "$STACK_DIR/stockd.log" || true)"
assert_eq "no refusal in paymentd" "0" "$(grep -cE 'DECLINED|UNKNOWN_ACCOUNT|TOMBSTONE' "$STACK_DIR/paymentd.log" || true)"
assert_eq "database errors answered UNAVAILABLE only" "0" \
  "$(grep -h "could not" "$STACK_DIR/paymentd.log" "$STACK_DIR/stockd.log" | grep -vc "database_unavailable" || true)"
assert_eq "charges" "CHARGED:2" "$(psql_db sagas_payment "SELECT status || ':' || count(*) FROM charges GROUP BY status")"
assert_eq "reservations" "RESERVED:2" "$(psql_db sagas_stock "SELECT status || ':' || count(*) FROM reservations GROUP BY status")"
assert_eq "c1" "4000" "$(balance c1)"
assert_eq "X" "6" "$(on_hand X)"
check_invariants "X:10" "c1:10000"
finish
