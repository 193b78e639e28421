#!/usr/bin/env bash
# Fault 2: every ChargePayment fails inside its transaction (rolled back just
# before COMMIT). No charge and no idempotency record may survive that would
# make the later refund skip a real charge: the refund records a tombstone,
# a replayed charge is refused, final c1 100.00.
source "$(dirname "$0")/head.inc"
ORCH_FLAGS="$FAST_ORCH"
PAYMENT_FLAGS="--fault fail_before_commit:ChargePayment"
stack_start
fixture
ctl start c1 X 2 30.00 --id "$S" >/dev/null
wait_state "$S" CANCELLED 30
assert_eq "S" "CANCELLED|timeout" "$(saga_state "$S")"
assert_eq "charges were tried" "1" "$([ "$(log_count paymentd 'fault injected: fail_before_commit')" -ge 1 ] && echo 1)"
assert_eq "payment record: the refund's tombstone" "TOMBSTONE" "$(charge "$S")"
assert_eq "c1" "10000" "$(balance c1)"
assert_eq "X" "10" "$(on_hand X)"
# the charge arriving late now is refused and charges nothing
stack_kill paymentd
PAYMENT_FLAGS=""
stack_start_payment
assert_eq "late charge refused" "ABORTED tombstone -" \
  "$(SAGACMD_STARTED_MS=$(started_of "$S") "$SAGA_BIN_DIR/sagacmd" "$PAYMENT_URL" charge "$S" c1 3000 || true)"
assert_eq "c1 after the late charge" "10000" "$(balance c1)"
check_invariants "X:10" "c1:10000"
finish
