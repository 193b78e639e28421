#!/usr/bin/env bash
# Fault 7: RefundPayment fails twice before succeeding: the chain goes on to
# ReleaseStock and both compensations take effect exactly once.
source "$(dirname "$0")/head.inc"
# every ChargePayment reply is lost (the charge is applied): the deadline
# makes the saga refund
ORCH_FLAGS="$FAST_ORCH --step-timeout 1000"
PAYMENT_FLAGS="--fault drop_reply:ChargePayment,unavailable:RefundPayment:count=2"
stack_start
fixture
ctl start c1 X 2 30.00 --id "$S" >/dev/null
wait_state "$S" CANCELLED 30
assert_eq "S" "CANCELLED|timeout" "$(saga_state "$S")"
assert_eq "path" "RESERVING>CHARGING>REFUNDING>RELEASING>CANCELLED" "$(path_of "$S")"
assert_eq "refund failed twice" "2" "$(log_count paymentd 'fault injected: unavailable on RefundPayment')"
assert_eq "refund applied once" "1" "$(log_count paymentd 'refund customer=c1 amount=3000: REFUNDED, balance 10000')"
assert_eq "release applied once" "1" "$(log_count stockd 'release sku=X qty=2: RELEASED, on hand 10')"
assert_eq "charge record" "REFUNDED" "$(charge "$S")"
assert_eq "reservation record" "RELEASED" "$(reservation "$S")"
assert_eq "c1" "10000" "$(balance c1)"
assert_eq "X" "10" "$(on_hand X)"
check_invariants "X:10" "c1:10000"
finish
