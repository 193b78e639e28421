#!/usr/bin/env bash
# Fault 11: nng's REQ resend time set short (200 ms) and ChargePayment held
# 2 s: many copies of the same charge arrive. One charge however many copies,
# every copy answered the same (rule 2).
source "$(dirname "$0")/head.inc"
ORCH_FLAGS="$FAST_ORCH --req-resend 200 --request-timeout 5000 --step-timeout 10000"
PAYMENT_FLAGS="--fault delay:ChargePayment:ms=2000 --log-level debug --workers 16"
stack_start
fixture
ctl start c1 X 2 30.00 --id "$S" >/dev/null
wait_state "$S" COMPLETED 30
answered() {
  [ "$(log_count paymentd 'charge customer=c1 amount=3000: CHARGED, balance 7000')" -ge \
    "$(log_count paymentd 'fault injected: delay on ChargePayment')" ]
}
# every copy still held when the saga completed is answered 2 s later (16
# workers: no copy waits in the queue, each is logged as it arrives)
wait_until 20 answered
copies=$(log_count paymentd 'fault injected: delay on ChargePayment')
echo "copies of ChargePayment that arrived: $copies"
assert_eq "several copies arrived" "yes" "$([ "$copies" -ge 3 ] && echo yes || echo "no ($copies)")"
assert_eq "every copy answered CHARGED" "$copies" "$(log_count paymentd 'charge customer=c1 amount=3000: CHARGED, balance 7000')"
assert_eq "applied once, the rest from the record" "$((copies - 1))" "$(log_count paymentd 'CHARGED, balance 7000 (from record)')"
assert_eq "one charge" "1" "$(psql_db sagas_payment "SELECT count(*) FROM charges")"
assert_eq "c1" "7000" "$(balance c1)"
assert_eq "X" "8" "$(on_hand X)"
assert_eq "S" "COMPLETED|" "$(saga_state "$S")"
check_invariants "X:10" "c1:10000"
finish
