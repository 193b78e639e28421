#!/usr/bin/env bash
# Fault 3: ReserveStock is held back longer than the step deadline. The
# deadline sends ReleaseStock, which arrives first and leaves a tombstone
# (rule 5); the late ReserveStock is refused and reserves nothing;
# ChargePayment is never sent. X 10, c1 100.00, S CANCELLED (timeout).
source "$(dirname "$0")/head.inc"
# one ReserveStock only: the request timeout is clamped to the deadline and
# nng does not resend, so the held-back copy is the only one
ORCH_FLAGS="$FAST_ORCH --step-timeout 1000 --request-timeout 5000"
STOCK_FLAGS="--fault delay:ReserveStock:ms=3000 --log-level debug"
stack_start
fixture
ctl start c1 X 2 30.00 --id "$S" >/dev/null
wait_state "$S" CANCELLED 20
assert_eq "release left a tombstone" "TOMBSTONE" "$(reservation "$S")"
# the held-back ReserveStock is then served, and refused from the record
wait_until 20 grep -q "reserve sku=X qty=2: TOMBSTONE tombstone" "$STACK_DIR/stockd.log"
assert_eq "record still a tombstone" "TOMBSTONE" "$(reservation "$S")"
assert_eq "S" "CANCELLED|timeout" "$(saga_state "$S")"
assert_eq "path" "RESERVING>RELEASING>CANCELLED" "$(path_of "$S")"
assert_eq "X" "10" "$(on_hand X)"
assert_eq "c1" "10000" "$(balance c1)"
assert_eq "ChargePayment never sent" "0" "$(psql_db sagas_payment "SELECT count(*) FROM charges")"
check_invariants "X:10" "c1:10000"
finish
