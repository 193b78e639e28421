#!/usr/bin/env bash
# Fault 1: the charge is applied, then the payment daemon exits before it
# replies. After the step deadline the saga refunds (rule 4) and the refund
# really refunds: c1 100.00, X 10, S CANCELLED (timeout).
source "$(dirname "$0")/head.inc"
ORCH_FLAGS="$FAST_ORCH"
PAYMENT_FLAGS="--fault exit_after_commit:ChargePayment:count=1"
stack_start
fixture
ctl start c1 X 2 30.00 --id "$S" >/dev/null
wait_until 20 test -n "$(log_count paymentd 'fault injected: exit_after_commit')"
pay_pid=${STACK_PID_OF[paymentd]}
wait "$pay_pid" && rc=0 || rc=$?
assert_eq "paymentd exited by the fault" "86" "$rc"
assert_eq "the charge was committed" "CHARGED" "$(charge "$S")"
# bring it back only once the deadline has turned the saga to REFUNDING, so
# the outcome does not depend on a retried charge winning the race
wait_state "$S" REFUNDING 20
PAYMENT_FLAGS=""
stack_start_payment
wait_state "$S" CANCELLED 30
assert_eq "S" "CANCELLED|timeout" "$(saga_state "$S")"
assert_eq "path" "RESERVING>CHARGING>REFUNDING>RELEASING>CANCELLED" "$(path_of "$S")"
assert_eq "c1" "10000" "$(balance c1)"
assert_eq "X" "10" "$(on_hand X)"
assert_eq "charge record" "REFUNDED" "$(charge "$S")"
assert_eq "reservation record" "RELEASED" "$(reservation "$S")"
check_invariants "X:10" "c1:10000"
finish
