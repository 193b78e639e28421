#!/usr/bin/env bash
# Fault 17 (rule T4): paymentd holds every ChargePayment 1.5 x the request
# timeout, well inside the step deadline. The first try times out after
# paymentd has charged; the next try waits twice as long and is answered
# from paymentd's record. S is COMPLETED with one charge, and no
# RefundPayment is ever sent. (Before rule T4 every try waited 1000 ms,
# each was answered after it gave up, and S was refunded and CANCELLED.)
source "$(dirname "$0")/head.inc"
ORCH_FLAGS="--request-timeout 1000 --step-timeout 6000 --backoff-base 20 --backoff-cap 500 --sweep-interval 50"
PAYMENT_FLAGS="--fault delay:ChargePayment:ms=1500"
stack_start
fixture
ctl start c1 X 2 30.00 --id "$S" --wait >/dev/null || true
assert_eq "S" "COMPLETED|" "$(saga_state "$S")"
assert_eq "path" "RESERVING>CHARGING>SHIPPING>COMPLETED" "$(path_of "$S")"
assert_eq "the first try timed out" "yes" \
  "$([ "$(log_count orchestratord 'ChargePayment failed (DEADLINE_EXCEEDED')" -ge 1 ] && echo yes || echo no)"
assert_eq "ChargePayment served more than once (the retry)" "yes" \
  "$([ "$(log_count paymentd 'fault injected: delay on')" -ge 2 ] && echo yes || echo no)"
assert_eq "one CHARGED row" "$S:CHARGED:3000" "$(psql_db sagas_payment \
  "SELECT string_agg(saga_id || ':' || status || ':' || amount, ',') FROM charges")"
assert_eq "never REFUNDING" "0" "$(log_count orchestratord 'REFUNDING')"
assert_eq "no RefundPayment served" "0" "$(log_count paymentd 'refund customer=')"
assert_eq "no refund recorded" "0" "$(psql_db sagas_payment \
  "SELECT count(*) FROM charges WHERE status <> 'CHARGED'")"
assert_eq "c1 charged once" "7000" "$(balance c1)"
assert_eq "X" "8" "$(on_hand X)"
check_invariants "X:10" "c1:10000"
finish
