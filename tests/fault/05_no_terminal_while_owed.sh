#!/usr/bin/env bash
# Fault 5: a saga never reaches a terminal state while a compensation is
# still owed. The charge is held past its deadline, so the saga must refund;
# every RefundPayment fails. The saga stays REFUNDING (flagged for attention
# after 3 tries, still retrying) and becomes CANCELLED only once the refund
# goes through.
source "$(dirname "$0")/head.inc"
ORCH_FLAGS="$FAST_ORCH --step-timeout 1000 --request-timeout 5000 --attention-after 3"
PAYMENT_FLAGS="--fault delay:ChargePayment:ms=2000,unavailable:RefundPayment"
stack_start
fixture
ctl start c1 X 2 30.00 --id "$S" >/dev/null
wait_state "$S" REFUNDING 20
flagged() { [ "$(psql_db sagas_orchestrator "SELECT attention FROM sagas WHERE saga_id = '$S'")" = t ]; }
wait_until 30 flagged
assert_eq "still owed: not terminal" "REFUNDING|timeout" "$(saga_state "$S")"
assert_eq "flagged for attention" "1" "$(ctl list --attention --json | jq 'length')"
assert_eq "attention logged" "1" "$(log_count orchestratord 'saga needs attention')"
# the held-back charge has been applied meanwhile: the refund is owed for real
charged() { [ "$(charge "$S")" = CHARGED ]; }
wait_until 20 charged
assert_eq "charged while the saga compensates" "7000" "$(balance c1)"
attempts=$(psql_db sagas_orchestrator "SELECT attempts FROM sagas WHERE saga_id = '$S'")
assert_eq "refund retried at least 3 times" "yes" "$([ "$attempts" -ge 3 ] && echo yes || echo "no ($attempts)")"
assert_eq "still REFUNDING after the retries" "REFUNDING|timeout" "$(saga_state "$S")"
ctl fault clear payment >/dev/null
wait_state "$S" CANCELLED 30
assert_eq "S" "CANCELLED|timeout" "$(saga_state "$S")"
assert_eq "path" "RESERVING>CHARGING>REFUNDING>RELEASING>CANCELLED" "$(path_of "$S")"
assert_eq "attention cleared" "f" "$(psql_db sagas_orchestrator "SELECT attention FROM sagas WHERE saga_id = '$S'")"
assert_eq "c1" "10000" "$(balance c1)"
assert_eq "X" "10" "$(on_hand X)"
assert_eq "charge record" "REFUNDED" "$(charge "$S")"
check_invariants "X:10" "c1:10000"
finish
